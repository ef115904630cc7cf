"""The PostgreSQL table of passage vectors (pgvector), each row in its file's scope."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import memd.embed.numpy_lazy as np
from memd.store.postgres_errors import database_errors, refusals
from memd.store.vectors import Nearness

_OF = "JOIN memd_files f ON f.id = c.file_id"  # whose a chunk is


class Embedding:
    """A float32 vector blob in pgvector's binary form (``register_embedding`` sends it)."""

    __slots__ = ("wire",)

    def __init__(self, blob: bytes) -> None:
        floats = np.frombuffer(blob, dtype="<f4")
        self.wire = struct.pack(">HH", len(floats), 0) + floats.astype(">f4").tobytes()


def register_embedding(conn: Any) -> None:
    """Let ``conn`` send ``Embedding`` values as pgvector's ``vector`` (binary)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:  # no pgvector yet: the first migration has not run
        return
    info.register(conn)  # its array type too: a list of them is sent as vector[]

    class _Dumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: Embedding) -> bytes:
            return obj.wire

    conn.adapters.register_dumper(Embedding, _Dumper)


class VectorRows:
    """The vector side of ``PostgresStore``."""

    _in: str  # the scope's condition on files ``f`` (TRUE in a team view)
    _args: tuple[str, ...]  # its arguments
    _scope: tuple[str | None, str | None]  # (host, workspace) this store writes
    _q: Callable[..., list[tuple]]  # PostgresStore's: run one statement, its rows
    _w: Callable[[], tuple[str | None, str]]  # a write's workspace and lease holder
    _written: int  # rows written since the store opened
    dsn: str
    db: Any

    def pending_chunks(
        self,
        model: str,
        limit: int,
        quiet_since: float | None = None,
        nbytes: int | None = None,
        edited_since: float | None = None,
    ) -> list[tuple[int, str, str, str | None, str]]:
        quiet = "" if quiet_since is None else " AND f.indexed_at <= %s"
        # People's first, as SQLite's queue (no mtime here: when it was indexed serves).
        edited = "" if edited_since is None else "(f.indexed_at > %s) DESC, "
        order = (
            f"{edited}CASE f.source WHEN 'core' THEN 0 WHEN 'sessions' THEN 2 "
            "ELSE 1 END, coalesce(f.date, to_char(to_timestamp(f.indexed_at), 'YYYY-MM-DD')) "
            "DESC, f.id, c.id"
        )
        return self._q(
            f"SELECT c.id, c.heading, c.text, f.date, f.path FROM memd_chunks c {_OF} "
            f"WHERE {self._in} "
            "AND NOT EXISTS (SELECT 1 FROM memd_vectors v WHERE v.chunk_id = c.id "
            "AND v.model = %s AND (%s::int IS NULL OR length(v.vector) = %s::int))"
            f"{quiet} ORDER BY {order} LIMIT %s",
            (
                *self._args,
                model,
                nbytes,
                nbytes,
                *([] if quiet_since is None else [quiet_since]),
                *([] if edited_since is None else [edited_since]),
                limit,
            ),
        )

    def count_vectors(self, model: str, nbytes: int | None = None) -> tuple[int, int]:
        done, total = self._q(
            "SELECT count(v.id), count(DISTINCT c.id) FROM memd_chunks c "
            "LEFT JOIN memd_vectors v ON v.chunk_id = c.id AND v.model = %s AND v.part = 0 "
            "AND (%s::int IS NULL OR length(v.vector) = %s::int) "
            f"{_OF} WHERE {self._in}",
            (model, nbytes, nbytes, *self._args),
        )[0]
        return done, total - done

    def paths_without_vectors(self, model: str, paths: Sequence[str]) -> set[str]:
        rows = self._q(
            "SELECT DISTINCT f.path FROM memd_chunks c "
            f"{_OF} WHERE {self._in} AND f.path = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
            "memd_vectors v WHERE v.chunk_id = c.id AND v.model = %s AND v.part = 0)",
            (*self._args, list(paths), model),
        )
        return {path for (path,) in rows}

    def count_vector_rows(self, model: str) -> int:
        return self._q(
            f"SELECT count(*) FROM memd_vectors v JOIN memd_chunks c ON c.id = v.chunk_id "
            f"{_OF} WHERE {self._in} AND v.model = %s",
            (*self._args, model),
        )[0][0]

    def cached_vectors(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """None: the team store shares no embedding cache (each host keeps its own). A
        row keyed by a text's hash would prove the text is in notes its reader may not read."""
        return {}

    def cache_vectors(self, entries: Sequence[tuple[bytes, bytes]], cache_size: int) -> None:
        """Nothing: the team store shares no embedding cache (see ``cached_vectors``)."""

    def save_vectors(
        self, model: str, rows: Sequence[tuple[int, int, bytes, bytes, str]], cache_size: int
    ) -> None:
        """Through memd's function: rows of chunks this scope does not hold are dropped,
        and a vector of a model that changed size under its name gives way to the new one."""
        if not rows:
            return
        with database_errors(self.dsn), refusals("", self.dsn):
            self.db.execute(
                "SELECT memd_put_vectors(%s, %s, %s, %s, %s, %s, %s, %b)",
                (
                    *self._w(),
                    model,
                    [cid for cid, _, _, _, _ in rows],
                    [part for _, part, _, _, _ in rows],
                    [vector for _, _, _, vector, _ in rows],
                    [terms for _, _, _, _, terms in rows],
                    [Embedding(vector) for _, _, _, vector, _ in rows],
                ),
            )
        self._written += len(rows)

    def vectors_after(
        self, model: str, after_id: int, limit: int = -1
    ) -> list[tuple[int, int, int, bytes]]:
        rows = self._q(
            "SELECT v.id, v.chunk_id, v.part, v.vector FROM memd_vectors v "
            f"JOIN memd_chunks c ON c.id = v.chunk_id {_OF} WHERE {self._in} "
            "AND v.model = %s AND v.id > %s "
            "ORDER BY v.id LIMIT %s",
            (*self._args, model, after_id, None if limit < 0 else limit),
        )
        return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]

    def count_vectors_after(self, model: str, after_id: int) -> int:
        return self._q(
            "SELECT count(*) FROM memd_vectors v "
            f"JOIN memd_chunks c ON c.id = v.chunk_id {_OF} WHERE {self._in} "
            "AND v.model = %s AND v.id > %s",
            (*self._args, model, after_id),
        )[0][0]

    def _passages(self, model: str, chunk_ids: Sequence[int], query: bytes | None) -> list:
        return self._q(
            "SELECT * FROM memd_passages(%s, %s, %s, %s, %s) ORDER BY chunk_id, part",
            (*self._scope, model, list(chunk_ids), None if query is None else Embedding(query)),
        )

    def passage_terms(self, model: str, chunk_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        rows = self._passages(model, chunk_ids, None)
        return {(chunk_id, part): terms for chunk_id, part, _, _, terms in rows}

    def chunk_vectors(
        self, model: str, chunk_ids: Sequence[int]
    ) -> dict[int, list[tuple[int, bytes, str]]]:
        out: dict[int, list[tuple[int, bytes, str]]] = {}
        for chunk_id, part, _, vector, terms in self._passages(model, chunk_ids, None):
            out.setdefault(chunk_id, []).append((part, bytes(vector), terms))
        return out

    def nearest(self, model: str, query: bytes, k: int) -> list[tuple[int, float]]:
        """The ``k`` chunks whose passages are nearest ``query`` by cosine, each with its
        best passage's cosine, best first (pgvector; each readable workspace's passages
        ranked exactly)."""
        # A chunk has 2.4 passages on average: twice k rows hold about k chunks.
        rows = self._q(
            "SELECT * FROM memd_nearest(%s, %s, %s, %s, %s)",
            (*self._scope, model, Embedding(query), 2 * k + 16),
        )
        best: dict[int, float] = {}
        for chunk_id, cosine in rows:  # a chunk has several passages: its best counts
            best.setdefault(chunk_id, float(cosine))
        return list(best.items())[:k]

    def nearest_parts(self, model: str, chunk_ids: Sequence[int], query: bytes) -> dict:
        """For each chunk: how near ``query`` each of its passages is (``Nearness``)."""
        rows = sorted(self._passages(model, chunk_ids, query), key=lambda r: -r[2])
        out: dict[int, Nearness] = {}
        for chunk_id, part, cosine, blob, _ in rows:
            near = out.get(chunk_id)
            if near is None:
                out[chunk_id] = near = Nearness(float(cosine), np.frombuffer(bytes(blob), "<f4"))
            near.parts[part] = float(cosine)
        return out

    def has_vectors(self, model: str) -> bool:
        return bool(self._q("SELECT memd_has_vectors(%s)", (model,))[0][0])
