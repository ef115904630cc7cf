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
from memd.store.postgres_errors import database_errors, refusals
from memd.store.postgres_lease import THIS_PROCESS, Lease, renew
from memd.store.postgres_schema import migrate
from memd.store.postgres_search import TextRows
from memd.store.postgres_sessions import reap
from memd.store.postgres_text import HIT, WHOSE, like_prefix, refuse_unsendable
from memd.store.postgres_vectors import VectorRows, register_embedding
from memd.store.rows import ChunkRow, FileMeta, FileRow, Hit, SessionState, Supersession

STATEMENT_TIMEOUT_MS = 60_000
# Rows written before the planner's statistics are brought up to date (then twice as many
# more, and so on): on stale ones PostgreSQL read every vector instead of its HNSW index
# (169 ms for a query that takes 6 at 20k chunks) until autovacuum caught up.
ANALYZE_AFTER_ROWS = 5_000


def connect(dsn: str) -> Any:
    """An autocommit connection that cannot hang for ever: connecting, each statement and
    a peer that stops answering all have a limit."""
    import psycopg

    with database_errors(dsn):
        return psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=5,
            # A statement, a lock wait and a transaction left open each end: what this
            # daemon holds never holds up another host for long.
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout=10000 "
            "-c idle_in_transaction_session_timeout=60000",
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
            tcp_user_timeout=30_000,  # unacknowledged data: the server's machine is gone
        )


class PostgresStore(TextRows, VectorRows):
    """One (host, workspace) scope of a shared PostgreSQL database.

    What a host's daemon does (publish its files whole, take its lease, search and read
    what it may) goes through memd's functions in the database (``postgres_functions``),
    the only thing a host's role may use. The rest of the storage seam (a tail replaced,
    transcripts' read positions, the embedding queue, sizes) reads and writes the tables:
    what a local index does, which the team store never is. Only the tables' owner may
    use them; the database refuses them to a host's role (tests/test_team_attacks.py
    tries each, and publishes whole as a host role)."""

    def __init__(self, dsn: str, host: str | None, workspace: str | None, conn: Any) -> None:
        self.dsn, self.host, self.workspace, self.db = dsn, host, workspace, conn
        self._scope = (host, workspace)
        # Reads filter on the scope; a team view (no host) reads every scope it may.
        team = host is None
        self._in = "TRUE" if team else "f.host = %s AND f.workspace = %s"
        self._args: tuple[str, ...] = () if team else (host, workspace)  # type: ignore[assignment]
        self._written, self._analyze_at = 0, ANALYZE_AFTER_ROWS
        self._counted: tuple[int, float] | None = None  # (chunks, when counted)
        # A team view's term counts, kept a minute (an idf that precise changes nothing;
        # counting them was a third of a team search under load); a scope counts anew.
        self._held: dict[tuple, tuple[int, float]] = {}
        self._held_for = 60.0 if team else 0.0
        # Who writes this scope: each write needs its lease (the daemon sets its own).
        self.lease: Lease = THIS_PROCESS

    @classmethod
    def open(cls, dsn: str, host: str | None, workspace: str | None) -> PostgresStore:
        """Connect (autocommit outside ``transaction``), creating the tables if needed;
        ``host`` None: a read-only view of every host's published workspaces."""
        conn = connect(dsn)
        with database_errors(dsn):
            migrate(conn)
            register_embedding(conn)
            # The host the tables' owner writes as (a host's role writes as its own host,
            # whatever this says).
            conn.execute("SELECT set_config('memd.host', %s, false)", (host or "",))
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

    def _w(self) -> tuple[str | None, str]:
        """A write's first two arguments: the workspace and this daemon's lease holder."""
        return self.workspace, self.lease.holder

    # -- the store itself ------------------------------------------------------------------

    def reader(self) -> PostgresStore:
        return self.open(self.dsn, self.host, self.workspace)

    def replace_damaged(self, reason: str) -> PostgresStore:
        """A scope cannot be damaged apart from the database: empty it and start again."""
        with self.transaction():
            self._q("SELECT memd_unpublish_scope(%s, %s)", self._w())
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

    def renew_lease(self) -> int:
        """End every host's session held past its bound (``postgres_sessions``), then take
        or extend this scope's lease, or raise ``LeaseHeld``; how many sessions were ended."""
        with database_errors(self.dsn):
            ended = reap(self.db)
            renew(self.db, self.host, self.workspace, self.lease)
        return ended

    def release_lease(self) -> None:
        """Give the scope's lease up (this daemon stops): another may publish at once."""
        with contextlib.suppress(StoreError):
            self._q("SELECT memd_release(%s, %s)", self._w())

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        yield  # PostgreSQL's writes need no other settings for many files

    def tidy(self) -> None:
        pass  # PostgreSQL's own vacuum does it

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.host is None:
            raise StoreError("the team view is read-only: open a host's scope to write")
        with database_errors(self.dsn), self.db.transaction():
            renew(self.db, self.host, self.workspace, self.lease)
            yield
        self._held.clear()  # what was counted before this write
        self._counted = None
        if self._written >= self._analyze_at:
            self._analyze_at = 2 * self._written
            # Through memd's function (at most once a minute, whoever asks): a host role
            # may not ANALYZE, since what allows it also allows locking out every host.
            with contextlib.suppress(StoreError):  # better plans, not a publish's worth
                self._q("SELECT memd_analyze()")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        (value,) = self._q("SELECT memd_get_meta(%s, %s)", (self.workspace, key))[0]
        return default if value is None else value

    def set_meta(self, key: str, value: str) -> None:
        self._q("SELECT memd_set_meta(%s, %s, %s, %s)", (*self._w(), key, value))

    # -- files and chunks ------------------------------------------------------------------

    def _file_rows(self, columns: str, paths: Sequence[str] | None = None, extra: str = "",
                   args: Sequence[Any] = ()) -> list[tuple]:  # fmt: skip
        return self._q(
            f"SELECT {columns} FROM memd_file_rows(%s, %s, %s) {extra}",
            (*self._scope, None if paths is None else list(paths), *args),
        )

    def _files(self, paths: Sequence[str] | None = None, extra: str = "",
               args: Sequence[Any] = ()) -> dict[str, FileRow]:  # fmt: skip
        rows = self._file_rows("id, path, realpath, size, mtime_ns, hash", paths, extra, args)
        return {r[1]: FileRow(*r) for r in rows}

    def files(self) -> dict[str, FileRow]:
        return self._files()

    def files_at(self, paths: Sequence[str]) -> dict[str, FileRow]:
        return self._files(paths)

    def file_realpath(self, path: str) -> str | None:
        rows = self._files([path])
        return rows[path].realpath if rows else None

    def linked_files(self) -> list[tuple[str, str]]:
        return self._file_rows("abspath, realpath", extra="WHERE abspath != realpath")

    def has_files_under(self, folder: str) -> bool:
        return bool(self._files(extra="WHERE path LIKE %s", args=(like_prefix(folder) + "/%",)))

    def file_tags(self) -> list[tuple[int, str, list[str]]]:
        rows = self._file_rows("id, path, tags")
        return [(file_id, path, list(tags)) for file_id, path, tags in rows]

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._q(
            "UPDATE memd_files SET size = %s, mtime_ns = %s WHERE id = %s",
            (size, mtime_ns, file_id),
        )

    def add_files(self, files: Sequence[tuple[FileMeta, Sequence[ChunkRow]]]) -> None:
        for meta, rows in files:
            self.replace_file(meta, rows)

    def replace_file(self, meta: FileMeta, rows: Sequence[ChunkRow]) -> int:
        """Publish ``meta``'s file whole with its chunks ``rows`` (memd's function assigns
        the ids, checks the size and the lease); raises ``FileRefused`` for a file the
        database will not take."""
        refuse_unsendable(meta, rows)
        columns = [list(c) for c in zip(*[(*r[:5], *r.fts) for r in rows], strict=True)]
        head = (meta.path, meta.abspath, meta.realpath, meta.source, meta.date, meta.size,
                meta.mtime_ns, meta.hash, meta.lines, json.dumps(list(meta.tags)),
                json.dumps(list(meta.aliases)))  # fmt: skip
        with database_errors(self.dsn), refusals(meta.path, self.dsn):
            file_id, _ = self.db.execute(
                f"SELECT * FROM memd_put_file({', '.join(['%s'] * 22)})",
                (*self._w(), *head, *(columns or [[]] * 9)),
            ).fetchone()
        self._written += len(rows)
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
        return self.file_chunks(file_id)[0]

    def replace_fts(self, chunk_id: int, fts: Sequence[str]) -> None:
        self._q(
            "UPDATE memd_chunks SET fts_heading = %s, fts_body = %s, fts_meta = %s, "
            "fts_cjk = %s WHERE id = %s",
            (*fts, chunk_id),
        )

    def delete_files(self, file_ids: Sequence[int]) -> None:
        self._q("SELECT memd_unpublish(%s, %s, %s)", (*self._w(), list(file_ids)))

    def file_meta(self, path: str) -> FileMeta | None:
        rows = self._file_rows(
            "path, abspath, realpath, source, date, size, mtime_ns, hash, lines, tags, aliases",
            [path],
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
            "SELECT id, lines, indexed_at FROM memd_file_rows(%s, %s, %s)",
            (host, workspace, [path]),
        )
        if not rows:
            return None
        file_id, lines, at = rows[0]
        return lines, self.file_chunks(file_id), at

    def file_chunks(self, file_id: int) -> list[tuple[int, Chunk]]:
        rows = self._q("SELECT * FROM memd_chunk_rows(%s)", (file_id,))
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
        files, chunks = self._q("SELECT * FROM memd_counts(%s, %s)", self._scope)[0]
        return {"files": files, "chunks": chunks}

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Hit]:
        rows = self._q(
            f"SELECT {HIT}, 0, {WHOSE} FROM memd_hits(%s, %s, %s) c",
            (*self._scope, list(ids)),
        )
        return {r[0]: Hit(*r) for r in rows}

    def dated_chunks(
        self,
        since: str | None,
        until: str | None,
        limit: int,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        rows = self._q(
            f"SELECT {HIT}, 0, {WHOSE} FROM memd_dated(%s, %s, %s, %s, %s, %s) c",
            (*self._scope, since, until, None if file_ids is None else list(file_ids), limit),
        )
        return [Hit(*r) for r in rows]
