"""The SQLite backend of the storage seam: one workspace's index in one database file.

The database is a cache of the Markdown files; deleting it loses only time. It runs in
WAL mode so readers never wait for the writer. The schema version lives in
``PRAGMA user_version`` and is moved forward by ``memd.store.schema.MIGRATIONS``.
A file that is not a database, or is corrupt, is moved aside and rebuilt. The search
reads are in ``sqlite_queries``, the vectors and the embedding cache in ``sqlite_vectors``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from itertools import count
from pathlib import Path
from typing import TypeVar

import apsw

from memd.errors import IndexCorrupt, StoreError
from memd.log import get_logger
from memd.sources.chunker import Chunk
from memd.store.private import private_file, private_folder
from memd.store.rows import (
    ChunkRow,
    FileMeta,
    FileRow,
    SessionState,
    Supersession,
    file_columns,
)
from memd.store.schema import MIGRATIONS, SCHEMA_VERSION
from memd.store.sqlite_bulk import BulkWrites, restore_after_bulk
from memd.store.sqlite_errors import guard, sqlite_errors
from memd.store.sqlite_queries import QueryTables
from memd.store.sqlite_vectors import VectorTables

log = get_logger()

BUSY_TIMEOUT_MS = 5000
T = TypeVar("T")


class SqliteStore(QueryTables, VectorTables, BulkWrites):
    """One workspace's index database; one writer per process, any number of readers."""

    def __init__(self, path: Path, db: apsw.Connection) -> None:
        self.path = path
        self.db = db

    @classmethod
    def open(cls, path: Path, readonly: bool = False) -> SqliteStore:
        """Open (creating or migrating) the database at ``path``; rebuild it if corrupt."""
        try:
            private_folder(path.parent)
        except OSError as exc:
            raise StoreError(f"cannot create state folder {path.parent}: {exc.strerror}") from exc
        if not readonly:
            try:
                private_file(path)
            except OSError as exc:
                raise StoreError(f"cannot open index database {path}: {exc.strerror}") from exc
        try:
            return cls._open(path, readonly)
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            if readonly:
                raise IndexCorrupt(f"index database {path} is corrupt; run 'memd index'") from exc
            cls.move_aside(path, str(exc))
            private_file(path)
            return cls._open(path, readonly)

    @staticmethod
    def move_aside(path: Path, reason: str) -> Path:
        """Rename a damaged database (and its WAL) so a new one can be built; kept for
        inspection."""
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        log.warning("index_corrupt", path=str(path), moved_to=str(aside), error=reason)
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        return aside

    @guard
    def check(self) -> None:
        """Read every page (slow on big indexes); raises ``IndexCorrupt`` on damage."""
        result = self.db.execute("PRAGMA quick_check(1)").fetchall()
        if result != [("ok",)]:
            raise IndexCorrupt(f"index database {self.path} is corrupt: {result[0][0]}")

    @classmethod
    def _open(cls, path: Path, readonly: bool) -> SqliteStore:
        flags = (
            apsw.SQLITE_OPEN_READONLY
            if readonly
            else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        )
        try:
            db = apsw.Connection(str(path), flags=flags)
        except apsw.CantOpenError as exc:
            raise StoreError(f"cannot open index database {path}: {exc}") from exc
        db.setbusytimeout(BUSY_TIMEOUT_MS)
        try:
            version = db.execute("PRAGMA user_version").fetchall()[0][0]
            db.execute("SELECT count(*) FROM sqlite_schema").fetchall()
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL").fetchall()
                db.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON")
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"index database {path} has schema version {version}, newer than this "
                        f"memd ({SCHEMA_VERSION}); upgrade memd or delete the file to rebuild"
                    )
                for step in range(version, SCHEMA_VERSION):
                    with db:
                        MIGRATIONS[step](db)
                        db.execute(f"PRAGMA user_version={step + 1}")
                restore_after_bulk(db)
        except apsw.ReadOnlyError as exc:
            db.close()
            raise StoreError(f"index database {path} is read-only: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    def reader(self) -> SqliteStore:
        """Another connection to this database, read-only (WAL: it never waits)."""
        return self.open(self.path, readonly=True)

    def replace_damaged(self, reason: str) -> SqliteStore:
        """Close, move this database aside, and open an empty one at its path."""
        self.close()
        self.move_aside(self.path, reason)
        return self.open(self.path)

    def size_bytes(self) -> int:
        """The database file and its write-ahead log."""
        files = (f"{self.path}{suffix}" for suffix in ("", "-wal"))
        return sum(os.path.getsize(f) for f in files if os.path.exists(f))

    def close(self) -> None:
        try:
            self.db.close()
        except apsw.ThreadingViolationError:
            # Another thread is inside a query on it: work a stopping daemon (or a reload)
            # abandons. SQLite closes it when that thread lets go and it is collected.
            log.debug("store_close_deferred", path=str(self.path))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes so they land together or not at all."""
        with sqlite_errors(self.path), self.db:
            yield

    # -- files ------------------------------------------------------------------------------

    @guard
    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute("SELECT id, path, realpath, size, mtime_ns, hash FROM files")
        return {r[1]: FileRow(*r) for r in rows}

    @guard
    def file_times(self) -> dict[str, tuple[str, str | None, float | None]]:
        """Each file's ``(source, date, modified)``: what orders notes newest first."""
        rows = self.db.execute("SELECT path, source, date, modified FROM files")
        return {path: (source, date, modified) for path, source, date, modified in rows}

    @guard
    def files_at(self, paths: Sequence[str]) -> dict[str, FileRow]:
        """What the index knows about just these paths."""
        rows = self.db.execute(
            "SELECT id, path, realpath, size, mtime_ns, hash FROM files "
            "WHERE path IN (SELECT value FROM json_each(?))",
            (json.dumps(list(paths)),),
        )
        return {r[1]: FileRow(*r) for r in rows}

    @guard
    def file_realpath(self, path: str) -> str | None:
        row = self.db.execute("SELECT realpath FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    @guard
    def linked_files(self) -> list[tuple[str, str]]:
        """``(abspath, realpath)`` of indexed files reached through a symlink."""
        return list(
            self.db.execute("SELECT abspath, realpath FROM files WHERE abspath != realpath")
        )

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content hash did not change."""
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id)
        )

    def replace_file(self, meta: FileMeta, rows: Sequence[ChunkRow]) -> int:
        """Insert or replace one file and all its chunks (call inside ``transaction``);
        returns the file's id."""
        row = self.db.execute("SELECT id FROM files WHERE path = ?", (meta.path,)).fetchone()
        values = file_columns(meta)
        if row:
            file_id = row[0]
            self._delete_chunks(file_id)
            self._update_file(file_id, values)
        else:
            self.db.execute(
                "INSERT INTO files(path, abspath, realpath, source, date, size, mtime_ns, hash, "
                "lines, tags, aliases, indexed_at, modified) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (meta.path, *values),
            )
            file_id = self.db.last_insert_rowid()
        self._insert_chunks([(file_id, rows)])
        return file_id

    def replace_tail(self, meta: FileMeta, from_line: int, rows: Sequence[ChunkRow]) -> int:
        """Replace an indexed file's chunks that start at ``from_line`` or later by ``rows``
        (those unchanged stay, with their vectors) and its facts; the earlier chunks stay
        as they are. Returns the file's id (call inside ``transaction``)."""
        (file_id,) = self.db.execute("SELECT id FROM files WHERE path = ?", (meta.path,)).fetchone()
        self._update_file(file_id, file_columns(meta))
        old = self.db.execute(
            "SELECT id, start_line, end_line, heading, text FROM chunks "
            "WHERE file_id = ? AND start_line >= ? ORDER BY start_line, id",
            (file_id, from_line),
        ).fetchall()
        same = 0
        while same < min(len(old), len(rows)) and old[same][1:] == tuple(rows[same][:4]):
            same += 1
        stale = json.dumps([r[0] for r in old[same:]])
        self.db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))", (stale,)
        )
        self.db.execute("DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (stale,))
        self._insert_chunks([(file_id, rows[same:])])
        return file_id

    def first_chunk(self, file_id: int) -> tuple[int, Chunk]:
        """The id and content of a file's first chunk."""
        chunk_id, *fields = self.db.execute(
            "SELECT id, start_line, end_line, heading, text, tokens FROM chunks "
            "WHERE file_id = ? ORDER BY start_line, id LIMIT 1",
            (file_id,),
        ).fetchone()
        return chunk_id, Chunk(*fields)

    def replace_fts(self, chunk_id: int, fts: Sequence[str]) -> None:
        """Give one chunk new FTS columns (call inside ``transaction``)."""
        self.db.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        self.db.execute(
            "INSERT INTO chunks_fts(rowid, heading, body, meta, cjk) VALUES (?,?,?,?,?)",
            (chunk_id, *fts),
        )

    def _update_file(self, file_id: int, values: tuple) -> None:
        self.db.execute(
            "UPDATE files SET abspath=?, realpath=?, source=?, date=?, size=?, mtime_ns=?, "
            "hash=?, lines=?, tags=?, aliases=?, indexed_at=?, modified=? WHERE id=?",
            (*values, file_id),
        )

    def _insert_chunks(self, files: Sequence[tuple[int, Sequence[ChunkRow]]]) -> None:
        """Insert each ``(file_id, rows)``'s chunks."""
        # Ids are given here so both tables fill with one executemany each; AUTOINCREMENT
        # keeps them above every id ever used.
        seq = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
        ids = count((seq[0] if seq else 0) + 1)
        numbered = [(next(ids), file_id, r) for file_id, rows in files for r in rows]
        cur = self.db.cursor()
        cur.executemany(
            "INSERT INTO chunks(id, file_id, start_line, end_line, heading, text, tokens) "
            "VALUES (?,?,?,?,?,?,?)",
            [(chunk_id, file_id, *r[:5]) for chunk_id, file_id, r in numbered],
        )
        cur.executemany(
            "INSERT INTO chunks_fts(rowid, heading, body, meta, cjk) VALUES (?,?,?,?,?)",
            [(chunk_id, *r.fts) for chunk_id, _, r in numbered],
        )

    def delete_files(self, file_ids: Sequence[int]) -> None:
        for file_id in file_ids:
            self._delete_chunks(file_id)
            self.db.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def _delete_chunks(self, file_id: int) -> None:
        self.db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)",
            (file_id,),
        )
        self.db.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))

    @guard
    def file_meta(self, path: str) -> FileMeta | None:
        row = self.db.execute(
            "SELECT path, abspath, realpath, source, date, size, mtime_ns, hash, lines, tags, "
            "aliases FROM files WHERE path = ?",
            (path,),
        ).fetchone()
        if row is None:
            return None
        *head, tags, aliases = row
        return FileMeta(*head, tuple(json.loads(tags)), tuple(json.loads(aliases)))

    @guard
    def file_chunks(self, file_id: int) -> list[tuple[int, Chunk]]:
        rows = self.db.execute(
            "SELECT id, start_line, end_line, heading, text, tokens FROM chunks "
            "WHERE file_id = ? ORDER BY start_line, id",
            (file_id,),
        )
        return [(r[0], Chunk(*r[1:])) for r in rows]

    # -- session transcripts (memd.index.sessions) ------------------------------------------------

    @guard
    def session_files(self) -> dict[str, SessionState]:
        """What the index knows of every session transcript, by result path."""
        rows = self.db.execute(
            "SELECT f.path, f.id, f.size, f.mtime_ns, s.offset, s.lines, s.head, s.head_bytes, "
            "s.session_id, s.started FROM files f JOIN session_files s ON s.file_id = f.id"
        )
        return {r[0]: SessionState(*r[1:]) for r in rows}

    def save_session(self, state: SessionState, skipped: int = 0) -> None:
        """Record how far a transcript was read (call inside ``transaction``)."""
        self.db.execute(
            "INSERT INTO session_files(file_id, offset, lines, head, head_bytes, session_id, "
            "started, skipped) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(file_id) DO UPDATE SET "
            "offset=excluded.offset, lines=excluded.lines, head=excluded.head, "
            "head_bytes=excluded.head_bytes, session_id=excluded.session_id, "
            "started=excluded.started, skipped=session_files.skipped + excluded.skipped",
            (state.file_id, state.offset, state.lines, state.head, state.head_bytes,
             state.session_id, state.started, skipped),
        )  # fmt: skip
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, lines = ?, indexed_at = ? WHERE id = ?",
            (state.size, state.mtime_ns, state.lines, time.time(), state.file_id),
        )

    def append_chunks(self, file_id: int, rows: Sequence[ChunkRow]) -> None:
        """Add chunks to a file without touching the ones it has (call inside
        ``transaction``): a transcript that grew."""
        self._insert_chunks([(file_id, rows)])

    # -- what a review found superseded (memd.review) ------------------------------------------

    def replace_superseded(self, rows: Sequence[Supersession]) -> None:
        """Every superseded statement, in place of what the store had (call inside
        ``transaction``)."""
        self.db.execute("DELETE FROM superseded")
        self.db.cursor().executemany(
            "INSERT OR REPLACE INTO superseded(path, start_line, end_line, digest, by, likely, "
            "now, confirmed) VALUES (?,?,?,?,?,?,?,?)",
            [(*r[:5], int(r.likely), r.now, int(r.confirmed)) for r in rows],
        )

    @guard
    def statements_seen(self) -> dict[tuple[str, str], str]:
        """``{(path, digest): first seen}`` of undated notes' statements."""
        rows = self.db.execute("SELECT path, digest, seen FROM statement_seen")
        return {(path, digest): seen for path, digest, seen in rows}

    def save_seen(self, rows: Sequence[tuple[str, str, str]], gone: Sequence[str]) -> None:
        """Add ``(path, digest, seen)`` rows and forget files ``gone`` (call inside
        ``transaction``)."""
        cur = self.db.cursor()
        cur.executemany("DELETE FROM statement_seen WHERE path = ?", [(p,) for p in gone])
        cur.executemany("INSERT OR IGNORE INTO statement_seen VALUES (?,?,?)", rows)

    # -- meta -------------------------------------------------------------------------------

    @guard
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
