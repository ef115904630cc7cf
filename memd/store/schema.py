"""What a SQLite index database holds: its tables, and the migrations that build them.

The schema version lives in ``PRAGMA user_version`` and is moved forward by the
functions in ``MIGRATIONS``: append one, never edit one.
"""

from __future__ import annotations

import apsw


def _schema_v1(db: apsw.Connection) -> None:
    db.execute(
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            abspath TEXT NOT NULL,
            realpath TEXT NOT NULL,
            source TEXT NOT NULL,
            date TEXT,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            hash TEXT NOT NULL,
            lines INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            aliases TEXT NOT NULL DEFAULT '[]',
            indexed_at REAL NOT NULL
        );
        CREATE INDEX files_date ON files(date);
        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: vectors key on it
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL
        );
        CREATE INDEX chunks_file ON chunks(file_id);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            heading, body, meta, cjk,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        """
    )


def _schema_v2(db: apsw.Connection) -> None:
    db.execute(
        """
        CREATE TABLE embedding_cache(
            key BLOB PRIMARY KEY,      -- sha256(provider, model, dimensions, text)
            vector BLOB NOT NULL,      -- float32, normalised
            used INTEGER NOT NULL      -- a counter: least recently used go first
        ) WITHOUT ROWID;
        CREATE INDEX embedding_cache_used ON embedding_cache(used);
        CREATE TABLE vectors(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- readers load new rows by id
            chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            model TEXT NOT NULL,                   -- the embedder key: never mix two
            vector BLOB NOT NULL,
            UNIQUE(chunk_id, model)
        );
        """
    )


def _schema_v3(db: apsw.Connection) -> None:
    # A chunk's meaning is now its passages' vectors (memd.sources.passages): several rows a chunk.
    # Whole-chunk vectors mean something else, so they go and chunks are embedded again.
    db.execute(
        """
        DROP TABLE vectors;
        CREATE TABLE vectors(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- readers load new rows by id
            chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            model TEXT NOT NULL,                   -- the embedder key: never mix two
            part INTEGER NOT NULL,                 -- the passage's place in its chunk
            vector BLOB NOT NULL,
            UNIQUE(chunk_id, model, part)
        );
        -- Counting embedded chunks (of the current vector size) reads only this index.
        CREATE INDEX vectors_first ON vectors(model, part, length(vector));
        """
    )


def _schema_v4(db: apsw.Connection) -> None:
    # How far each session transcript has been read, so a growing one is read on from there.
    db.execute(
        """
        CREATE TABLE session_files(
            file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            offset INTEGER NOT NULL,      -- bytes read: the start of the first unread line
            lines INTEGER NOT NULL,       -- lines read
            head TEXT NOT NULL,           -- sha256 of the first head_bytes: same file?
            head_bytes INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            started TEXT,                 -- ISO time of the first turn
            skipped INTEGER NOT NULL DEFAULT 0
        );
        """
    )


def _schema_v5(db: apsw.Connection) -> None:
    # Each vector keeps the words of the passage it was made from: ranking asks which
    # passage holds the query's words. Rows without them go; the embedding cache has them.
    db.execute(
        """
        DROP TABLE vectors;
        CREATE TABLE vectors(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- readers load new rows by id
            chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            model TEXT NOT NULL,                   -- the embedder key: never mix two
            part INTEGER NOT NULL,                 -- the passage's place in its chunk
            vector BLOB NOT NULL,
            terms TEXT NOT NULL,                   -- its words as FTS5 tokenizes them
            UNIQUE(chunk_id, model, part)
        );
        CREATE INDEX vectors_first ON vectors(model, part, length(vector));
        """
    )


def _schema_v6(db: apsw.Connection) -> None:
    # A name for this index, made with it: a copy published elsewhere can tell a new index
    # (whose rows are numbered from 1 again) from the one it copied.
    db.execute("INSERT OR IGNORE INTO meta VALUES ('index_id', lower(hex(randomblob(16))))")


def _schema_v7(db: apsw.Connection) -> None:
    # The file's modification time (seconds): the embedding queue takes an undated note by
    # it, newest first. Files indexed before have none until they change (indexed_at serves).
    # Whether a chunk has a vector of the current size, read from an index alone: the queue
    # asks it of every chunk of the files done (40,000 chunks: 140 ms from the rows, 40 here).
    db.execute(
        """
        ALTER TABLE files ADD COLUMN modified REAL;
        CREATE INDEX vectors_sized ON vectors(chunk_id, model, length(vector));
        """
    )


def _schema_v8(db: apsw.Connection) -> None:
    # What the last review found superseded: a statement's lines and the citation of the
    # one replacing it. Search reads it (a result holding such lines ranks lower and says
    # so); the digest of the lines' words tells whether they still say what was reviewed.
    db.execute(
        """
        CREATE TABLE superseded(
            path TEXT NOT NULL,            -- the result path of the superseded statement
            start_line INTEGER NOT NULL,   -- its lines, 1-based, inclusive
            end_line INTEGER NOT NULL,
            digest TEXT NOT NULL,          -- memd.store.rows.lines_digest of those lines
            by TEXT NOT NULL,              -- the superseding statement's citation
            PRIMARY KEY(path, start_line, end_line)
        ) WITHOUT ROWID;
        """
    )


def _schema_v9(db: apsw.Connection) -> None:
    # Updates are found as notes change (memd.review.currency), not only by a review: each
    # superseded row says whether a change word was written (``likely`` when not) and what
    # the newer statement says. A statement of MEMORY.md or an undated note has the time
    # memd first saw it (``statement_seen``), so a daily note written later can update it.
    db.execute(
        """
        ALTER TABLE superseded ADD COLUMN likely INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE superseded ADD COLUMN now TEXT NOT NULL DEFAULT '';
        CREATE TABLE statement_seen(
            path TEXT NOT NULL,
            digest TEXT NOT NULL,          -- memd.store.rows.lines_digest of its lines
            seen TEXT NOT NULL,            -- ISO time first seen; '' for before memd watched
            PRIMARY KEY(path, digest)
        ) WITHOUT ROWID;
        """
    )


def _schema_v10(db: apsw.Connection) -> None:
    # A stated update whose older statement is also the nearest in meaning of the newer
    # one's candidates: the kind of relation measured right often enough to rank by.
    db.execute("ALTER TABLE superseded ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 0;")


# Each entry moves the schema from version i to i + 1; append, never edit.
MIGRATIONS = [
    _schema_v1, _schema_v2, _schema_v3, _schema_v4, _schema_v5, _schema_v6, _schema_v7,
    _schema_v8, _schema_v9, _schema_v10,
]  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)
