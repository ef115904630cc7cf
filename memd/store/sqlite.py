"""The SQLite index of one workspace: files, chunks and their FTS5 index.

The database is a cache of the Markdown files; deleting it loses only time. It runs in
WAL mode so readers never wait for the writer. The schema version lives in
``PRAGMA user_version`` and is moved forward by ``memd.store.schema.MIGRATIONS``.
A file that is not a database, or is corrupt, is moved aside and rebuilt.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memd.errors import IndexCorrupt, StoreError
from memd.log import get_logger
from memd.sources.chunker import Chunk
from memd.store.fts import COLUMN_WEIGHTS
from memd.store.private import private_file, private_folder
from memd.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    ChunkRow,
    FileMeta,
    FileRow,
    Hit,
    SessionState,
)

log = get_logger()

BUSY_TIMEOUT_MS = 5000
T = TypeVar("T")


@contextlib.contextmanager
def _sqlite_errors(path: Path) -> Iterator[None]:
    """Map SQLite failures to memd errors that name the database file."""
    try:
        yield
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        raise IndexCorrupt(f"index database {path} is corrupt: {exc}") from exc
    except apsw.FullError as exc:
        raise StoreError(f"disk full while writing index {path}") from exc
    except apsw.ReadOnlyError as exc:
        raise StoreError(f"index database {path} is read-only") from exc
    except (apsw.IOError, apsw.CantOpenError, apsw.PermissionsError, apsw.BusyError) as exc:
        raise StoreError(f"cannot use index database {path}: {exc}") from exc


def _file_filter(
    where: list[str],
    args: list[object],
    since: str | None,
    until: str | None,
    file_ids: Sequence[int] | None,
) -> tuple[list[str], list[object]]:
    """``where``/``args`` with the date range and file restriction of a search added."""
    if since:
        where.append("f.date >= ?")
        args.append(since)
    if until:
        where.append("f.date <= ?")
        args.append(until)
    if file_ids is not None:
        where.append("f.id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(file_ids)))
    return where, args


def _file_values(meta: FileMeta) -> tuple:
    """A file's columns after ``path``, in table order."""
    return (
        meta.abspath,
        meta.realpath,
        meta.source,
        meta.date,
        meta.size,
        meta.mtime_ns,
        meta.hash,
        meta.lines,
        json.dumps(meta.tags),
        json.dumps(meta.aliases),
        time.time(),
    )


def _guard(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> T:
        with _sqlite_errors(self.path):
            return method(self, *args, **kwargs)

    return wrapper


class Store:
    """One workspace's index database; one writer per process, any number of readers."""

    def __init__(self, path: Path, db: apsw.Connection) -> None:
        self.path = path
        self.db = db

    @classmethod
    def open(cls, path: Path, readonly: bool = False) -> Store:
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

    @_guard
    def check(self) -> None:
        """Read every page (slow on big indexes); raises ``IndexCorrupt`` on damage."""
        result = self.db.execute("PRAGMA quick_check(1)").fetchall()
        if result != [("ok",)]:
            raise IndexCorrupt(f"index database {self.path} is corrupt: {result[0][0]}")

    @classmethod
    def _open(cls, path: Path, readonly: bool) -> Store:
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
        except apsw.ReadOnlyError as exc:
            db.close()
            raise StoreError(f"index database {path} is read-only: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes so they land together or not at all."""
        with _sqlite_errors(self.path), self.db:
            yield

    # -- files ------------------------------------------------------------------------------

    @_guard
    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute("SELECT id, path, realpath, size, mtime_ns, hash FROM files")
        return {r[1]: FileRow(*r) for r in rows}

    @_guard
    def files_at(self, paths: Sequence[str]) -> dict[str, FileRow]:
        """What the index knows about just these paths."""
        rows = self.db.execute(
            "SELECT id, path, realpath, size, mtime_ns, hash FROM files "
            "WHERE path IN (SELECT value FROM json_each(?))",
            (json.dumps(list(paths)),),
        )
        return {r[1]: FileRow(*r) for r in rows}

    @_guard
    def file_realpath(self, path: str) -> str | None:
        row = self.db.execute("SELECT realpath FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    @_guard
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
        values = _file_values(meta)
        if row:
            file_id = row[0]
            self._delete_chunks(file_id)
            self._update_file(file_id, values)
        else:
            self.db.execute(
                "INSERT INTO files(path, abspath, realpath, source, date, size, mtime_ns, hash, "
                "lines, tags, aliases, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (meta.path, *values),
            )
            file_id = self.db.last_insert_rowid()
        self._insert_chunks(file_id, rows)
        return file_id

    def replace_tail(self, meta: FileMeta, from_line: int, rows: Sequence[ChunkRow]) -> int:
        """Replace an indexed file's chunks that start at ``from_line`` or later by ``rows``
        (those unchanged stay, with their vectors) and its facts; the earlier chunks stay
        as they are. Returns the file's id (call inside ``transaction``)."""
        (file_id,) = self.db.execute("SELECT id FROM files WHERE path = ?", (meta.path,)).fetchone()
        self._update_file(file_id, _file_values(meta))
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
        self._insert_chunks(file_id, rows[same:])
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
            "hash=?, lines=?, tags=?, aliases=?, indexed_at=? WHERE id=?",
            (*values, file_id),
        )

    def _insert_chunks(self, file_id: int, rows: Sequence[ChunkRow]) -> None:
        # Ids are given here so both tables fill with one executemany each; AUTOINCREMENT
        # keeps them above every id ever used.
        seq = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
        first = (seq[0] if seq else 0) + 1
        cur = self.db.cursor()
        cur.executemany(
            "INSERT INTO chunks(id, file_id, start_line, end_line, heading, text, tokens) "
            "VALUES (?,?,?,?,?,?,?)",
            [(first + n, file_id, *r[:5]) for n, r in enumerate(rows)],
        )
        cur.executemany(
            "INSERT INTO chunks_fts(rowid, heading, body, meta, cjk) VALUES (?,?,?,?,?)",
            [(first + n, *r.fts) for n, r in enumerate(rows)],
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

    # -- session transcripts (memd.index.sessions) ------------------------------------------------

    @_guard
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
        self._insert_chunks(file_id, rows)

    # -- meta -------------------------------------------------------------------------------

    @_guard
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- reading ----------------------------------------------------------------------------

    @_guard
    def term_postings(self, clauses: Sequence[str]) -> tuple[int, list[set[int]]]:
        """How many chunks there are, and for each FTS5 clause (one query term) the chunks
        that hold it."""
        (total,) = self.db.execute("SELECT count(*) FROM chunks").fetchone()
        out = []
        for clause in clauses:
            rows = self.db.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (clause,)
            )
            out.append({r[0] for r in rows})
        return total, out

    @_guard
    def counts(self) -> dict[str, int]:
        files, chunks = self.db.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)"
        ).fetchone()
        return {"files": files, "chunks": chunks}

    @_guard
    def keyword_search(
        self,
        match: str,
        limit: int,
        since: str | None = None,
        until: str | None = None,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks matching an FTS5 expression, best first by weighted BM25."""
        weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
        where, args = _file_filter(["chunks_fts MATCH ?"], [match], since, until, file_ids)
        columns = "c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date"
        rank = f"-bm25(chunks_fts, {weights})"
        if len(where) == 1:
            # No filter: take the top rows from the FTS table alone and join only those; a
            # common word can match tens of thousands of chunks.
            sql = (
                f"SELECT {columns}, t.score FROM (SELECT rowid AS id, {rank} AS score "
                f"FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?) t "
                f"JOIN chunks c ON c.id = t.id JOIN files f ON f.id = c.file_id "
                f"ORDER BY t.score DESC, c.id"
            )
        else:
            sql = (
                f"SELECT {columns}, {rank} AS score "
                f"FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                f"JOIN files f ON f.id = c.file_id WHERE {' AND '.join(where)} "
                f"ORDER BY score DESC, c.id LIMIT ?"
            )
        args.append(limit)
        try:
            return [Hit(*row) for row in self.db.execute(sql, args)]
        except apsw.SQLError as exc:
            raise StoreError(f"keyword query failed: {exc}") from exc

    # -- embeddings -------------------------------------------------------------------------

    @_guard
    def pending_chunks(
        self, model: str, limit: int, quiet_since: float | None = None, nbytes: int | None = None
    ) -> list[tuple[int, str, str, str | None, str]]:
        """``(chunk id, heading, text, date, path)`` of chunks with no vector for ``model``
        (of ``nbytes`` when given: one of another size is stale); with ``quiet_since``, only
        from files last indexed before that time."""
        sql = (
            "SELECT c.id, c.heading, c.text, f.date, f.path "
            "FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.id AND v.model = ?1"
            " AND (?2 IS NULL OR length(v.vector) = ?2))"
        )
        args: list[object] = [model, nbytes]
        if quiet_since is not None:
            sql += " AND f.indexed_at <= ?"
            args.append(quiet_since)
        return list(self.db.execute(sql + " ORDER BY c.id LIMIT ?", [*args, limit]))

    @_guard
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

    @_guard
    def count_vector_rows(self, model: str) -> int:
        """Passage vectors stored for ``model``."""
        return self.db.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[
            0
        ]

    @_guard
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
        used = int(self.get_meta("cache_clock", "0"))
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
        self.db.executemany(
            "INSERT INTO embedding_cache(key, vector, used) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET used = excluded.used, vector = excluded.vector",
            [(key, vector, used + n) for n, (_, _, key, vector, _) in enumerate(rows, start=1)],
        )
        self.set_meta("cache_clock", str(used + len(rows)))
        excess = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] - cache_size
        if excess > 0:
            self.db.execute(
                "DELETE FROM embedding_cache WHERE key IN "
                "(SELECT key FROM embedding_cache ORDER BY used LIMIT ?)",
                (excess,),
            )

    @_guard
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

    @_guard
    def passage_terms(self, model: str, chunk_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        """``{(chunk id, passage number): term string}`` of ``model``'s vectors for the
        chunks (``memd.store.fts.term_strings``)."""
        rows = self.db.execute(
            "SELECT chunk_id, part, terms FROM vectors WHERE model = ? "
            "AND chunk_id IN (SELECT value FROM json_each(?))",
            (model, json.dumps(list(chunk_ids))),
        )
        return {(chunk_id, part): terms for chunk_id, part, terms in rows}

    @_guard
    def count_vectors_after(self, model: str, after_id: int) -> int:
        """How many vectors ``vectors_after`` would return."""
        # "+model": walk the rowids after ``after_id``, not every row of the model.
        sql = "SELECT count(*) FROM vectors WHERE id > ? AND +model = ?"
        return self.db.execute(sql, (after_id, model)).fetchone()[0]

    @_guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Hit]:
        """Live chunks among ``ids`` as hits (with no keyword score)."""
        if not ids:
            return {}
        rows = self.db.execute(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date, 0 "
            "FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )
        return {row[0]: Hit(*row) for row in rows}

    @_guard
    def dated_chunks(
        self,
        since: str | None,
        until: str | None,
        limit: int,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks of files dated from ``since`` to ``until`` (either may be open), newest
        file first, each file's chunks in order (a question that names only a time)."""
        where, args = _file_filter(["f.date IS NOT NULL"], [], since, until, file_ids)
        rows = self.db.execute(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date, 0 "
            f"FROM chunks c JOIN files f ON f.id = c.file_id WHERE {' AND '.join(where)} "
            "ORDER BY f.date DESC, f.path, c.start_line LIMIT ?",
            [*args, limit],
        )
        return [Hit(*row) for row in rows]

    @_guard
    def has_files_under(self, folder: str) -> bool:
        """Whether any indexed file lies below ``folder`` (a result-path prefix)."""
        # '/' + 1 is '0': the range holds exactly the paths starting with folder + '/'.
        row = self.db.execute(
            "SELECT 1 FROM files WHERE path > ? AND path < ? LIMIT 1", (folder + "/", folder + "0")
        ).fetchone()
        return row is not None

    @_guard
    def file_tags(self) -> list[tuple[int, str, list[str]]]:
        """``(id, path, tags)`` of every file, for filtering searches."""
        rows = self.db.execute("SELECT id, path, tags FROM files")
        return [(file_id, path, json.loads(tags)) for file_id, path, tags in rows]
