"""SQLite tables of passage vectors and the embedding cache: what is still to embed,
what a model embedded before, and vectors in the order they were added."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import apsw

from memd.sources.mtimes import written_together
from memd.store.sqlite_errors import guard

# The embedding queue serves people first: a file edited since ``:edited`` (newest edit
# first), then the core file, then notes and other files by their date (else their mtime,
# else when they were indexed) newest first, then session transcripts, newest first.
FILE_ORDER = (
    "(:edited IS NOT NULL AND f.indexed_at > :edited) DESC, "
    "CASE WHEN :edited IS NOT NULL AND f.indexed_at > :edited THEN -f.indexed_at END, "
    "CASE f.source WHEN 'core' THEN 0 WHEN 'sessions' THEN 2 ELSE 1 END, "
    "coalesce(julianday(f.date) + 1, julianday(CASE WHEN f.modified BETWEEN :bulk_lo AND "
    ":bulk_hi THEN NULL ELSE coalesce(f.modified, f.indexed_at) END, 'unixepoch')) DESC, f.id"
)  # mtimes written together (a git checkout: memd.sources.mtimes) order nothing: NULL, last
_NO_VECTOR = (
    "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.id AND v.model = :model"
    " AND (:nbytes IS NULL OR length(v.vector) = :nbytes))"
)
# Files first (a few thousand rows to sort), and of them only those with a chunk to embed:
# that probe stops at the first such chunk, so it reads what is done and little more (as
# the queue in id order did). Then the chunks' ids from the file index alone, and the texts
# of those few (sorting 40,000 chunks with their text to keep 32 took 100 ms).
_PENDING = f"""
SELECT c.id, c.heading, c.text, f.date, f.path FROM chunks c JOIN files f ON f.id = c.file_id
JOIN (
    SELECT c.id, q.rank FROM (
        SELECT f.id, row_number() OVER (ORDER BY {FILE_ORDER}) AS rank FROM files f
        WHERE (:quiet IS NULL OR f.indexed_at <= :quiet)
        AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id AND {_NO_VECTOR})
        ORDER BY rank LIMIT :limit
    ) q JOIN chunks c ON c.file_id = q.id
    WHERE {_NO_VECTOR} ORDER BY q.rank, c.id LIMIT :limit
) pick ON pick.id = c.id
ORDER BY pick.rank, c.id
"""


class VectorTables:
    """The vector side of ``SqliteStore``."""

    path: Path
    db: apsw.Connection

    @guard
    def pending_chunks(
        self,
        model: str,
        limit: int,
        quiet_since: float | None = None,
        nbytes: int | None = None,
        edited_since: float | None = None,
    ) -> list[tuple[int, str, str, str | None, str]]:
        """``(chunk id, heading, text, date, path)`` of chunks with no vector for ``model``
        (of ``nbytes`` when given: one of another size is stale), people's first
        (``FILE_ORDER``); with ``quiet_since``, only from files last indexed before that
        time; with ``edited_since``, files indexed after it (edits) come before all."""
        modified = (m for (m,) in self.db.execute("SELECT modified FROM files") if m is not None)
        bulk = written_together(modified) or (None, None)
        args = {"model": model, "nbytes": nbytes, "quiet": quiet_since, "edited": edited_since,
                "limit": limit, "bulk_lo": bulk[0], "bulk_hi": bulk[1]}  # fmt: skip
        return list(self.db.execute(_PENDING, args))

    @guard
    def recent_chunks(self, model: str, days: float) -> list[tuple[int, bool]]:
        """``(chunk id, has a vector for model)`` of the newest ``days`` of notes, counted
        back from the newest note's date (or, undated, its mtime): what a person looks for
        first. Mtimes written together (a checkout) date no note."""
        modified = (m for (m,) in self.db.execute("SELECT modified FROM files") if m is not None)
        bulk = written_together(modified) or (None, None)
        rows = self.db.execute(
            "WITH t AS (SELECT f.id, coalesce(julianday(f.date) + 1, julianday(CASE WHEN "
            "f.modified BETWEEN :bulk_lo AND :bulk_hi THEN NULL ELSE f.modified END, "
            "'unixepoch')) AS day FROM files f WHERE f.source != 'sessions') "
            "SELECT c.id, EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.id "
            "AND v.model = :model AND v.part = 0) FROM chunks c JOIN t ON t.id = c.file_id "
            "WHERE t.day >= (SELECT max(day) FROM t) - :days",
            {"model": model, "days": days, "bulk_lo": bulk[0], "bulk_hi": bulk[1]},
        )
        return [(chunk_id, bool(has)) for chunk_id, has in rows]

    @guard
    def paths_without_vectors(self, model: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` still have a chunk with no vector for ``model``."""
        rows = self.db.execute(
            "SELECT DISTINCT f.path FROM files f JOIN chunks c ON c.file_id = f.id "
            "WHERE f.path IN (SELECT value FROM json_each(?1)) AND NOT EXISTS ("
            "SELECT 1 FROM vectors v WHERE v.chunk_id = c.id AND v.model = ?2 AND v.part = 0)",
            (json.dumps(list(paths)), model),
        )
        return {path for (path,) in rows}

    @guard
    def count_vectors(self, model: str, nbytes: int | None = None) -> tuple[int, int]:
        """``(chunks with vectors for model, chunks without)``; with ``nbytes``, a vector
        of another size counts as none."""
        # A chunk's passages are saved together, so its first passage stands for it; the
        # size is checked only when asked (it reads every vector, the count alone an index).
        sized = "" if nbytes is None else " AND length(vector) = ?2"
        done, total = self.db.execute(
            f"SELECT (SELECT count(*) FROM vectors WHERE model = ?1 AND part = 0{sized}), "
            "(SELECT count(*) FROM chunks)",
            (model,) if nbytes is None else (model, nbytes),
        ).fetchone()
        return done, total - done

    @guard
    def count_vector_rows(self, model: str) -> int:
        """Passage vectors stored for ``model``."""
        return self.db.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[
            0
        ]

    @guard
    def cached_vectors(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT key, vector FROM embedding_cache WHERE key IN ({marks})", part
            )
            found.update(rows)
        return found

    def save_vectors(
        self,
        model: str,
        rows: Sequence[tuple[int, int, bytes, bytes, str]],
        cache_size: int,
    ) -> None:
        """Store ``(chunk id, passage number, cache key, vector, term string)`` rows,
        remember them in the cache, and trim the cache to ``cache_size`` (call inside
        ``transaction``)."""
        # A vector of a model that changed size under its name gives way to the new one
        # (a new row, so readers that load rows by id see it).
        self.db.executemany(
            "DELETE FROM vectors WHERE chunk_id = ? AND model = ? AND length(vector) != ?",
            [(chunk_id, model, len(vector)) for chunk_id, _, _, vector, _ in rows],
        )
        self.db.executemany(
            "INSERT OR IGNORE INTO vectors(chunk_id, model, part, vector, terms) "
            "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?)",
            [(cid, model, part, vector, terms, cid) for cid, part, _, vector, terms in rows],
        )
        self.cache_vectors([(key, vector) for _, _, key, vector, _ in rows], cache_size)

    def cache_vectors(self, entries: Sequence[tuple[bytes, bytes]], cache_size: int) -> None:
        """Remember ``(cache key, vector)`` pairs, most recent last, and trim the cache to
        ``cache_size`` (call inside ``transaction``)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'cache_clock'").fetchone()
        used = int(row[0]) if row else 0
        self.db.executemany(
            "INSERT INTO embedding_cache(key, vector, used) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET used = excluded.used, vector = excluded.vector",
            [(key, vector, used + n) for n, (key, vector) in enumerate(entries, start=1)],
        )
        self.db.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('cache_clock', ?)",
            (str(used + len(entries)),),
        )
        excess = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] - cache_size
        if excess > 0:
            self.db.execute(
                "DELETE FROM embedding_cache WHERE key IN "
                "(SELECT key FROM embedding_cache ORDER BY used LIMIT ?)",
                (excess,),
            )

    @guard
    def vectors_after(
        self, model: str, after_id: int, limit: int = -1
    ) -> list[tuple[int, int, int, bytes]]:
        """``(row id, chunk id, passage number, vector)`` for ``model`` added after row
        ``after_id``, the first ``limit`` of them (all: -1)."""
        return list(
            self.db.execute(
                "SELECT id, chunk_id, part, vector FROM vectors WHERE model = ? AND id > ? "
                "ORDER BY id LIMIT ?",
                (model, after_id, limit),
            )
        )

    @guard
    def passage_terms(self, model: str, chunk_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        """``{(chunk id, passage number): term string}`` of ``model``'s vectors for the
        chunks (``memd.store.fts.term_strings``)."""
        rows = self.db.execute(
            "SELECT chunk_id, part, terms FROM vectors WHERE model = ? "
            "AND chunk_id IN (SELECT value FROM json_each(?))",
            (model, json.dumps(list(chunk_ids))),
        )
        return {(chunk_id, part): terms for chunk_id, part, terms in rows}

    @guard
    def count_vectors_after(self, model: str, after_id: int) -> int:
        """How many vectors ``vectors_after`` would return."""
        # "+model": walk the rowids after ``after_id``, not every row of the model.
        sql = "SELECT count(*) FROM vectors WHERE id > ? AND +model = ?"
        return self.db.execute(sql, (after_id, model)).fetchone()[0]

    @guard
    def chunk_vectors(
        self, model: str, chunk_ids: Sequence[int]
    ) -> dict[int, list[tuple[int, bytes, str]]]:
        rows = self.db.execute(
            "SELECT chunk_id, part, vector, terms FROM vectors WHERE model = ? "
            "AND chunk_id IN (SELECT value FROM json_each(?)) ORDER BY chunk_id, part",
            (model, json.dumps(list(chunk_ids))),
        )
        out: dict[int, list[tuple[int, bytes, str]]] = {}
        for chunk_id, part, vector, terms in rows:
            out.setdefault(chunk_id, []).append((part, vector, terms))
        return out
