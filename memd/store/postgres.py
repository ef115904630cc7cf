"""The PostgreSQL backend of the storage seam: one workspace of one host, as a scope in a
database many hosts share (the team index; pgvector and row-level security build on it).

Every row carries its scope (``host``, ``workspace``) through its file. Keywords are
PostgreSQL full-text search over the same columns FTS5 gets (English stemming, heading
and tags weighted up); scripts written without spaces match their character bigrams in
order, as in SQLite. Only this module imports psycopg, and only when it is used.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from memd.errors import StoreError
from memd.sources.chunker import Chunk
from memd.store.dsn import describe, scrub
from memd.store.postgres_lease import Lease, renew
from memd.store.postgres_schema import migrate
from memd.store.postgres_search import TextRows
from memd.store.postgres_text import HIT, WHOSE, date_and_file_filters, like_prefix
from memd.store.postgres_vectors import VectorRows, register_embedding
from memd.store.rows import ChunkRow, FileMeta, FileRow, Hit, SessionState, Supersession

STATEMENT_TIMEOUT_MS = 60_000
# Rows written before the planner's statistics are brought up to date (then twice as many
# more, and so on): on stale ones PostgreSQL read every vector instead of its HNSW index
# (169 ms for a query that takes 6 at 20k chunks) until autovacuum caught up.
ANALYZE_AFTER_ROWS = 5_000


@contextlib.contextmanager
def database_errors(dsn: str) -> Iterator[None]:
    """psycopg failures as ``StoreError`` naming the database (never its password)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise StoreError(f"team database {describe(dsn)}: {scrub(str(exc).strip(), dsn)}") from exc


def connect(dsn: str) -> Any:
    """An autocommit connection that cannot hang for ever: connecting, each statement and
    a peer that stops answering all have a limit."""
    import psycopg

    with database_errors(dsn):
        return psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=5,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
            tcp_user_timeout=30_000,  # unacknowledged data: the server's machine is gone
        )


class PostgresStore(TextRows, VectorRows):
    """One (host, workspace) scope of a shared PostgreSQL database."""

    def __init__(self, dsn: str, host: str | None, workspace: str | None, conn: Any) -> None:
        self.dsn, self.host, self.workspace, self.db = dsn, host, workspace, conn
        self._scope = (host, workspace)
        # Reads filter on the scope; a team view (no host) reads every scope it may.
        team = host is None
        self._in = "TRUE" if team else "f.host = %s AND f.workspace = %s"
        self._in_files = "TRUE" if team else "host = %s AND workspace = %s"
        self._args: tuple[str, ...] = () if team else (host, workspace)  # type: ignore[assignment]
        self._written, self._analyze_at = 0, ANALYZE_AFTER_ROWS
        self._counted: tuple[int, float] | None = None  # (chunks, when counted)
        self._guesses: dict[tuple, int] = {}  # a term's test -> the planner's row estimate
        # A team view's term counts, kept a minute (an idf that precise changes nothing;
        # counting them was a third of a team search under load); a scope counts anew.
        self._held: dict[tuple, tuple[int, float]] = {}
        self._held_for = 60.0 if team else 0.0
        self.lease: Lease | None = None  # when set, each write first renews it

    @classmethod
    def open(cls, dsn: str, host: str | None, workspace: str | None) -> PostgresStore:
        """Connect (autocommit outside ``transaction``), creating the tables if needed;
        ``host`` None: a read-only view of every host's published workspaces."""
        conn = connect(dsn)
        with database_errors(dsn):
            migrate(conn)
            register_embedding(conn)
            # A filtered nearest-vector query keeps scanning the HNSW graph until it has
            # enough rows this role may read.
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
        return cls(dsn, host, workspace, conn)

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with database_errors(self.dsn), self.db.cursor() as cur:
                cur.executemany(sql, rows)
            self._written += len(rows)

    def _q(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with database_errors(self.dsn):
            cur = self.db.execute(sql, args)
            return cur.fetchall() if cur.description else []

    # -- the store itself ------------------------------------------------------------------

    def reader(self) -> PostgresStore:
        return self.open(self.dsn, self.host, self.workspace)

    def replace_damaged(self, reason: str) -> PostgresStore:
        """A scope cannot be damaged apart from the database: empty it and start again."""
        self._q("SELECT memd_delete_scope(%s, %s)", self._scope)
        return self

    def check(self) -> None:
        self._q("SELECT 1")

    def size_bytes(self) -> int:
        """What this view's rows take (a host role may not ask the size of the tables)."""
        of = f"JOIN memd_files f ON f.id = c.file_id WHERE {self._in}"
        chunks = self._q(f"SELECT sum(pg_column_size(c.*)) FROM memd_chunks c {of}", self._args)
        vectors = self._q(
            "SELECT sum(pg_column_size(v.*)) FROM memd_vectors v "
            f"JOIN memd_chunks c ON c.id = v.chunk_id {of}",
            self._args,
        )
        return int(chunks[0][0] or 0) + int(vectors[0][0] or 0)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.host is None:
            raise StoreError("the team view is read-only: open a host's scope to write")
        with database_errors(self.dsn), self.db.transaction():
            if self.lease is not None:
                renew(self.db, self.host, self.workspace, self.lease)
            yield
        if self._written >= self._analyze_at:
            self._analyze_at = 2 * self._written
            # Through memd's function (at most once a minute, whoever asks): a host role
            # may not ANALYZE, since what allows it also allows locking out every host.
            self._q("SELECT memd_analyze()")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._q(
            "SELECT value FROM memd_meta WHERE host = %s AND workspace = %s AND key = %s",
            (*self._scope, key),
        )
        return rows[0][0] if rows else default

    def set_meta(self, key: str, value: str) -> None:
        self._q(
            "INSERT INTO memd_meta VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (host, workspace, key) DO UPDATE SET value = excluded.value",
            (*self._scope, key, value),
        )

    # -- files and chunks ------------------------------------------------------------------

    def _files(self, extra: str = "", args: Sequence[Any] = ()) -> dict[str, FileRow]:
        rows = self._q(
            "SELECT id, path, realpath, size, mtime_ns, hash FROM memd_files "
            f"WHERE {self._in_files} {extra}",
            (*self._args, *args),
        )
        return {r[1]: FileRow(*r) for r in rows}

    def files(self) -> dict[str, FileRow]:
        return self._files()

    def files_at(self, paths: Sequence[str]) -> dict[str, FileRow]:
        return self._files("AND path = ANY(%s)", (list(paths),))

    def file_realpath(self, path: str) -> str | None:
        rows = self._files("AND path = %s", (path,))
        return rows[path].realpath if rows else None

    def linked_files(self) -> list[tuple[str, str]]:
        return self._q(
            "SELECT abspath, realpath FROM memd_files WHERE host = %s AND workspace = %s "
            "AND abspath != realpath",
            self._scope,
        )

    def has_files_under(self, folder: str) -> bool:
        return bool(self._files("AND path LIKE %s", (like_prefix(folder) + "/%",)))

    def file_tags(self) -> list[tuple[int, str, list[str]]]:
        rows = self._q(
            f"SELECT id, path, tags FROM memd_files WHERE {self._in_files}",
            self._args,
        )
        return [(file_id, path, list(tags)) for file_id, path, tags in rows]

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._q(
            "UPDATE memd_files SET size = %s, mtime_ns = %s WHERE id = %s",
            (size, mtime_ns, file_id),
        )

    def replace_file(self, meta: FileMeta, rows: Sequence[ChunkRow]) -> int:
        values = (
            meta.abspath, meta.realpath, meta.source, meta.date, meta.size, meta.mtime_ns,
            meta.hash, meta.lines, json.dumps(list(meta.tags)), json.dumps(list(meta.aliases)),
            time.time(),
        )  # fmt: skip
        (file_id,) = self._q(
            "INSERT INTO memd_files(host, workspace, path, abspath, realpath, source, date, size, "
            "mtime_ns, hash, lines, tags, aliases, indexed_at) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (host, workspace, path) DO UPDATE SET abspath = excluded.abspath, "
            "realpath = excluded.realpath, source = excluded.source, date = excluded.date, "
            "size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash, "
            "lines = excluded.lines, tags = excluded.tags, aliases = excluded.aliases, "
            "indexed_at = excluded.indexed_at RETURNING id",
            (*self._scope, meta.path, *values),
        )[0]
        self._q("SELECT memd_clear_file(%s, %s)", (self.host, file_id))
        self.append_chunks(file_id, rows)
        return file_id

    def replace_tail(self, meta: FileMeta, from_line: int, rows: Sequence[ChunkRow]) -> int:
        file_id, *_ = self._q(
            "UPDATE memd_files SET size = %s, mtime_ns = %s, hash = %s, lines = %s, "
            "indexed_at = %s WHERE host = %s AND workspace = %s AND path = %s RETURNING id",
            (meta.size, meta.mtime_ns, meta.hash, meta.lines, time.time(), *self._scope, meta.path),
        )[0]
        old = self._q(
            "SELECT id, start_line, end_line, heading, text FROM memd_chunks "
            "WHERE file_id = %s AND start_line >= %s ORDER BY start_line, id",
            (file_id, from_line),
        )
        same = 0  # chunks that did not change keep their ids, and so their vectors
        while same < min(len(old), len(rows)) and old[same][1:] == tuple(rows[same][:4]):
            same += 1
        self._q("SELECT memd_delete_chunks(%s, %s)", (self.host, [r[0] for r in old[same:]]))
        self.append_chunks(file_id, rows[same:])
        return file_id

    def append_chunks(self, file_id: int, rows: Sequence[ChunkRow]) -> None:
        self._many(
            "INSERT INTO memd_chunks(host, workspace, file_id, start_line, end_line, heading, "
            "text, tokens, fts_heading, fts_body, fts_meta, fts_cjk) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            [(*self._scope, file_id, *r[:5], *r.fts) for r in rows],
        )

    def first_chunk(self, file_id: int) -> tuple[int, Chunk]:
        chunk_id, *fields = self._q(
            "SELECT id, start_line, end_line, heading, text, tokens FROM memd_chunks "
            "WHERE file_id = %s ORDER BY start_line, id LIMIT 1",
            (file_id,),
        )[0]
        return chunk_id, Chunk(*fields)

    def replace_fts(self, chunk_id: int, fts: Sequence[str]) -> None:
        self._q(
            "UPDATE memd_chunks SET fts_heading = %s, fts_body = %s, fts_meta = %s, "
            "fts_cjk = %s WHERE id = %s",
            (*fts, chunk_id),
        )

    def delete_files(self, file_ids: Sequence[int]) -> None:
        self._q("SELECT memd_delete_files(%s, %s)", (self.host, list(file_ids)))

    def file_meta(self, path: str) -> FileMeta | None:
        rows = self._q(
            "SELECT path, abspath, realpath, source, date, size, mtime_ns, hash, lines, tags, "
            "aliases FROM memd_files WHERE host = %s AND workspace = %s AND path = %s",
            (*self._scope, path),
        )
        if not rows:
            return None
        *head, tags, aliases = rows[0]
        return FileMeta(*head, tuple(tags), tuple(aliases))

    def published(
        self, host: str, workspace: str, path: str
    ) -> tuple[int, list[tuple[int, Chunk]], float] | None:
        """A file ``host`` published: its line count, chunks and when (None: not published,
        or not readable by this role)."""
        rows = self._q(
            "SELECT id, lines, indexed_at FROM memd_files WHERE host = %s AND workspace = %s "
            "AND path = %s",
            (host, workspace, path),
        )
        if not rows:
            return None
        file_id, lines, at = rows[0]
        return lines, self.file_chunks(file_id), at

    def file_chunks(self, file_id: int) -> list[tuple[int, Chunk]]:
        rows = self._q(
            "SELECT id, start_line, end_line, heading, text, tokens FROM memd_chunks "
            "WHERE file_id = %s ORDER BY start_line, id",
            (file_id,),
        )
        return [(r[0], Chunk(*r[1:])) for r in rows]

    # -- session transcripts ---------------------------------------------------------------

    def session_files(self) -> dict[str, SessionState]:
        rows = self._q(
            "SELECT f.path, f.id, f.size, f.mtime_ns, s.read_offset, s.lines, s.head, "
            "s.head_bytes, s.session_id, s.started FROM memd_files f "
            "JOIN memd_session_files s ON s.file_id = f.id WHERE f.host = %s AND f.workspace = %s",
            self._scope,
        )
        return {r[0]: SessionState(*r[1:]) for r in rows}

    def save_session(self, state: SessionState, skipped: int = 0) -> None:
        s = state
        self._q(
            "INSERT INTO memd_session_files VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (file_id) DO UPDATE SET read_offset = excluded.read_offset, "
            "lines = excluded.lines, head = excluded.head, head_bytes = excluded.head_bytes, "
            "session_id = excluded.session_id, started = excluded.started, "
            "skipped = memd_session_files.skipped + excluded.skipped",
            (s.file_id, s.offset, s.lines, s.head, s.head_bytes, s.session_id, s.started, skipped),
        )
        self._q(
            "UPDATE memd_files SET size = %s, mtime_ns = %s, lines = %s, indexed_at = %s "
            "WHERE id = %s",
            (s.size, s.mtime_ns, s.lines, time.time(), s.file_id),
        )

    # -- what a review found superseded: each host's own, kept in its local index -----------

    def replace_superseded(self, rows: Sequence[Supersession]) -> None:
        """Not published: a team result is ranked without its host's reviews."""

    def superseded_in(self, chunk_ids: Sequence[int]) -> dict[int, list[Supersession]]:
        return {}

    def superseded_at(self, paths: Sequence[str] | None = None) -> list[Supersession]:
        return []

    def statements_seen(self) -> dict[tuple[str, str], str]:
        return {}

    def save_seen(self, rows: Sequence[tuple[str, str, str]], gone: Sequence[str]) -> None:
        """Not published: when a host first saw a line is its own."""

    # -- reading (search) ------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        files, chunks = self._q(
            "SELECT count(DISTINCT f.id), count(c.id) FROM memd_files f "
            f"LEFT JOIN memd_chunks c ON c.file_id = f.id WHERE {self._in}",
            self._args,
        )[0]
        return {"files": files, "chunks": chunks}

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Hit]:
        rows = self._q(
            f"SELECT {HIT}, 0, {WHOSE} FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id "
            f"WHERE {self._in} AND c.id = ANY(%s)",
            (*self._args, list(ids)),
        )
        return {r[0]: Hit(*r) for r in rows}

    def dated_chunks(
        self,
        since: str | None,
        until: str | None,
        limit: int,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        where, args = date_and_file_filters(since, until, file_ids)
        rows = self._q(
            f"SELECT {HIT}, 0, {WHOSE} FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id "
            f"WHERE {self._in} AND f.date IS NOT NULL{where} "
            "ORDER BY f.date DESC, f.path, c.start_line LIMIT %s",
            (*self._args, *args, limit),
        )
        return [Hit(*r) for r in rows]
