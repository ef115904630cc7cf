"""Many files written in a row (a first index, ``memd index --full``): the full-text index's
write settings for it, new files' rows inserted together, and a merge after a full pass.

FTS5 keeps the terms of a transaction in memory (1 MB by default) and writes them out as a
new segment when that fills and at each commit, merging segments as it goes (automerge).
For a pass over thousands of files both cost the writer more than they save: with 16 MB
and merging left until the pass is over, a 5,000-note index took 0.4 CPU-s less in the
writing process and ended with 6 segments against 5 (searches read them as fast). The
settings live in the database, so they are put back after the pass, and at the next open
by a writer if the process died during one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence

import apsw

from memd.store.rows import ChunkRow, FileMeta, file_columns

# FTS5's own defaults (fts5Int.h), written back after a pass.
_DEFAULTS = {"automerge": 4, "hashsize": 1024 * 1024}
_BULK = {"automerge": 0, "hashsize": 16 * 1024 * 1024}
_HELD = "SELECT path FROM files WHERE path IN (SELECT value FROM json_each(?))"


def _configure(db: apsw.Connection, values: dict[str, int]) -> None:
    for key, value in values.items():  # keys and values are ours: no user text here
        db.execute(f"INSERT INTO chunks_fts(chunks_fts, rank) VALUES('{key}', {int(value)})")


def restore_after_bulk(db: apsw.Connection) -> None:
    """Put the full-text index's write settings back if a bulk pass left them (its
    process died): one read of FTS5's small config table when they are as they should be."""
    rows = db.execute("SELECT k, v FROM chunks_fts_config WHERE k IN ('automerge', 'hashsize')")
    left = {k for k, v in rows if _BULK.get(k) == v}
    if left:
        with db:
            _configure(db, {k: _DEFAULTS[k] for k in left})


class BulkWrites:
    """Many files written in a row into an SQLite store (``self.db``)."""

    db: apsw.Connection
    replace_file: Callable[[FileMeta, Sequence[ChunkRow]], int]
    _insert_chunks: Callable[[Sequence[tuple[int, Sequence[ChunkRow]]]], None]

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Hold while writing many files in several transactions: the full-text index
        writes out and merges less often meanwhile; its usual settings come back after."""
        with self.db:
            _configure(self.db, _BULK)
        try:
            yield
        finally:
            # A failing disk: the next open by a writer restores them.
            with contextlib.suppress(apsw.Error), self.db:
                _configure(self.db, _DEFAULTS)

    def tidy(self) -> None:
        """Merge the full-text index into one segment, after many indexed files were
        written again (``memd index --full`` of 5,000 notes: 0.4 s; else 26 segments
        and what they deleted, and searches took twice as long)."""
        with self.db:
            self.db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")

    def add_files(self, files: Sequence[tuple[FileMeta, Sequence[ChunkRow]]]) -> None:
        """Insert files the index does not hold yet, with their chunks (call inside
        ``transaction``): one statement a table for all of them, where one a file cost the
        writing process a tenth of its CPU in a first index."""
        if not files:
            return
        # Another process indexing the same folder may have added some since this one
        # looked (two one-shot commands at once): those are replaced, as ever.
        paths = json.dumps([meta.path for meta, _ in files])
        held = {path for (path,) in self.db.execute(_HELD, (paths,))}
        for meta, rows in files:
            if meta.path in held:
                self.replace_file(meta, rows)
        files = [f for f in files if f[0].path not in held]
        if not files:
            return
        # A file id is the rowid after the largest, as SQLite would give it.
        (top,) = self.db.execute("SELECT coalesce(max(id), 0) FROM files").fetchone()
        self.db.cursor().executemany(
            "INSERT INTO files(id, path, abspath, realpath, source, date, size, mtime_ns, hash, "
            "lines, tags, aliases, indexed_at, modified) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(i, meta.path, *file_columns(meta)) for i, (meta, _) in enumerate(files, top + 1)],
        )
        self._insert_chunks([(i, rows) for i, (_, rows) in enumerate(files, top + 1)])
