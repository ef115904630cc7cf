"""The records that cross the storage seam: files, chunks ready to write, session read
positions, chunks found by a query, and statements a review found superseded. Every
backend writes and returns these.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from memd.config import HIDDEN_TEXT
from memd.sources.chunker import Chunk
from memd.sources.dates import spoken_date
from memd.sources.names import name_tokens
from memd.store.fts import FtsRow, fts_row


class FileRow(NamedTuple):
    """What the index knows about one file (a tuple: a pass compares thousands)."""

    id: int
    path: str
    realpath: str
    size: int
    mtime_ns: int
    hash: str


@dataclass(frozen=True)
class FileMeta:
    """A file's facts as the indexer found them, written with its chunks."""

    path: str
    abspath: str
    realpath: str
    source: str
    date: str | None
    size: int
    mtime_ns: int
    hash: str
    lines: int
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    modified: float | None = None  # the file's mtime in seconds (the queue's "newest")


@dataclass(frozen=True)
class SessionState:
    """How far a session transcript has been read (``session_files``), with its file's
    id, size and mtime."""

    file_id: int
    size: int
    mtime_ns: int
    offset: int
    lines: int
    head: str
    head_bytes: int
    session_id: str
    started: str | None


class ChunkRow(NamedTuple):
    """A chunk ready to write: where it is, its text, and its FTS5 columns."""

    start_line: int
    end_line: int
    heading: str
    text: str
    tokens: int
    fts: FtsRow


def chunk_rows(
    meta: FileMeta,
    chunks: Sequence[Chunk],
    first: bool = True,
    hide: Collection[str] = HIDDEN_TEXT,
) -> list[ChunkRow]:
    """Prepare a file's chunks for ``Store.replace_file`` (cheap to send between processes);
    ``first`` False when they follow the file's first chunk (``Store.replace_tail``);
    ``hide`` as ``Chunking.hide``."""
    # Tags, aliases and a custom note's name go on its first chunk only, so a match on
    # them finds the note once rather than once per chunk; its names (file name, aliases)
    # also each as one word, for an exact lookup (memd.sources.names).
    title = "" if meta.source == "daily" else Path(meta.path).stem
    names = name_tokens(meta.path, meta.source, meta.aliases)
    first_meta = " ".join([*meta.tags, *meta.aliases, title, *names])
    # A daily note's date in words leads every chunk's heading: "what did we do in May"
    # or "on Thursday" then finds it, as a reader of the note knows its day.
    day = spoken_date(meta.date) if meta.date else ""
    rows = []
    for n, c in enumerate(chunks):
        heading = f"{day} {_heading_words(c.heading)}".strip()
        fts = fts_row(heading, c.text, first_meta if n == 0 and first else "", hide)
        rows.append(ChunkRow(c.start_line, c.end_line, c.heading, c.text, c.tokens, fts))
    return rows


@dataclass(frozen=True)
class Hit:
    """One chunk matched by a keyword query, with its raw (positive) BM25 score."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    source: str
    date: str | None
    bm25: float
    host: str | None = None  # a team store's hits say whose they are
    workspace: str | None = None


class Supersession(NamedTuple):
    """A statement a later one replaced: its lines, a digest of their text then
    (``lines_digest``), the citation of the statement replacing it, whether that was
    found by subject and value alone (``likely``: no change word), and what it says;
    ``confirmed``: stated, and the nearest in meaning of the candidates (search ranks by
    it)."""

    path: str
    start_line: int
    end_line: int
    digest: str
    by: str
    likely: bool = False
    now: str = ""
    confirmed: bool = False


def file_columns(meta: FileMeta) -> tuple:
    """A file's columns after ``path`` in the files table, in table order."""
    return (meta.abspath, meta.realpath, meta.source, meta.date, meta.size, meta.mtime_ns,
            meta.hash, meta.lines, json.dumps(meta.tags), json.dumps(meta.aliases),
            time.time(), meta.modified)  # fmt: skip


def lines_digest(lines: Sequence[str]) -> str:
    """A short hash of some lines' words: the same lines still say the same (whitespace
    and line endings aside) exactly when it is unchanged."""
    words = " ".join(" ".join(lines).split())
    return hashlib.sha256(words.encode()).hexdigest()[:16]


def _heading_words(heading: str) -> str:
    """The words of a heading path, without its '#' and '>' markers."""
    return heading.replace(">", " ").replace("#", " ")
