"""Read, hash, parse and chunk the files a reconcile pass looks at: in worker processes when
there are many, so both cores work while the pass writes to SQLite."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from memd.config import Chunking
from memd.index.regrow import Tail, regrow, tail_of
from memd.index.workers import in_workers, warm
from memd.sources.canvas import canvas_chunks, is_canvas
from memd.sources.chunker import chunk_with_restart, stub_chunk
from memd.sources.layout import FileEntry, stat_stamp
from memd.sources.markdown import Document, is_drawing, parse
from memd.sources.names import note_name
from memd.store.rows import ChunkRow, FileMeta, chunk_rows

MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Job:
    """A file to read, with the hash the index holds for it (None: none to compare with)."""

    entry: FileEntry
    known_hash: str | None
    chunking: Chunking
    tail: Tail | None = None  # the file as last chunked, if it may only have grown
    # Also run over the file's text in the worker, its answer handed back (``Prepared.read``):
    # a later stage's reading of the same notes (what is current) then costs no second read
    # and runs on both cores. A module-level function, so a worker can import it by name.
    reader: Reader | None = None
    # Whether to work out where a later append could re-chunk the file from (its Tail,
    # ~5 % of the work): only a caller that keeps them for its next pass needs them.
    regrow: bool = True

    def __reduce__(self) -> tuple:
        # Sent to a worker for every file: as a plain tuple it loads in a fifth of the time.
        return _job, (tuple(self.entry), *(getattr(self, f) for f in _JOB_FIELDS))


_JOB_FIELDS = tuple(Job.__dataclass_fields__)[1:]  # after the entry


def _job(entry: tuple, *rest: Any) -> Job:
    return Job(FileEntry._make(entry), *rest)


# ``reader(entry, text)``: ``entry`` with its size and ``st_mtime_ns`` as read.
Reader = Callable[[FileEntry, str], Any]


@dataclass(frozen=True)
class Prepared:
    """A job's outcome: new chunks (all of them, or those from ``from_line`` on),
    ``unchanged`` content, or a reason it was skipped."""

    entry: FileEntry
    meta: FileMeta | None = None
    rows: list[ChunkRow] | None = None
    unchanged: bool = False
    skipped: str | None = None
    warnings: tuple[str, ...] = ()
    from_line: int | None = None  # only the chunks from this line on are new
    retag: bool = False  # the file's tags changed: its first chunk's FTS row too
    tail: Tail | None = None
    read: Any = None  # what ``Job.reader`` made of the text (None: no reader, or no text)

    def __reduce__(self) -> tuple:
        # How a worker sends it back: as plain tuples, which pickle and load in a third of
        # the time of the records' own classes (a full index sends some 10^5 of them).
        meta = self.meta
        return _prepared, (
            tuple(self.entry),
            None if meta is None else tuple(getattr(meta, f) for f in _META_FIELDS),
            None if self.rows is None else [(*row[:5], tuple(row[5])) for row in self.rows],
            *(getattr(self, f) for f in _PREPARED_FIELDS),
        )


_META_FIELDS = tuple(FileMeta.__dataclass_fields__)
_PREPARED_FIELDS = tuple(Prepared.__dataclass_fields__)[3:]  # after the entry, meta and rows


def _prepared(entry: tuple, meta: tuple | None, rows: list[tuple] | None, *rest: Any) -> Prepared:
    """A ``Prepared`` from the plain tuples ``Prepared.__reduce__`` sent. Each row is made
    a ``ChunkRow`` in C (``tuple.__new__``: no Python call per row); its FTS columns stay
    the plain tuple they came as."""
    return Prepared(
        FileEntry._make(entry),
        None if meta is None else FileMeta(*meta),
        None if rows is None else list(map(tuple.__new__, repeat(ChunkRow), rows)),
        *rest,
    )


# What the fork server imports once, before it forks any worker (``workers.in_workers``).
PRELOAD = "memd.index.preload"


def prepare_all(jobs: list[Job], workers: int | None) -> Iterator[Prepared]:
    """``prepare`` of every job, in order: in worker processes when there are many."""
    reader = jobs[0].reader if jobs else None  # one pass reads every file alike
    preload = (PRELOAD,) if reader is None else (PRELOAD, reader.__module__)
    return in_workers(prepare, jobs, workers, preload=preload)


def warm_workers() -> None:
    """Start what forks the parse workers now, for a caller about to index many files (a
    first index): it loads the parsing code while the caller walks the workspace."""
    warm(prepare, (PRELOAD,))


def prepare(job: Job) -> Prepared:
    """Read, hash, parse and chunk one file (runs in a worker process)."""
    e = job.entry
    try:
        with open(e.abspath, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_FILE_BYTES:
                size_mb = st.st_size / 2**20
                return Prepared(e, skipped=f"file is {size_mb:.0f} MiB, over the 20 MiB limit")
            data = f.read()
    except FileNotFoundError:
        return Prepared(e, skipped="file vanished before it could be read")
    except OSError as exc:
        return Prepared(e, skipped=f"cannot read file: {exc.strerror}")
    stamp = stat_stamp(st)
    entry = FileEntry(e.path, e.abspath, e.realpath, e.source, e.date, len(data), stamp)
    read = _read(job, st, data)
    chunking = job.chunking
    if job.tail is not None and (
        grown := regrow(data, job.tail, chunking.tokens, chunking.overlap, chunking.hide)
    ):
        # Only appended to: re-chunk the end, keep every earlier chunk.
        meta = _meta(e, data, st, grown.hash, grown.lines, grown.tags, job.tail.aliases,
                     job.tail.date)  # fmt: skip
        rows = chunk_rows(meta, grown.chunks, first=False, hide=chunking.hide)
        retag = grown.tags != job.tail.tags
        return Prepared(entry, meta, rows, from_line=grown.from_line, retag=retag, tail=grown.tail,
                        read=read)  # fmt: skip
    digest = hashlib.sha256(data).hexdigest()
    if digest == job.known_hash:
        return Prepared(entry, unchanged=True, read=read)
    warnings: list[str] = []
    clean = True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        clean = False
        text = data.decode("utf-8", errors="replace")
        warnings.append(
            f"not valid UTF-8 (first bad byte at offset {exc.start}); "
            "indexed with replacement characters"
        )
    if is_canvas(e.path):
        chunks, tags, lines, problems = canvas_chunks(text)
        meta = _meta(e, data, st, digest, lines, tags, (), None)
        warnings.extend(problems)
        if not chunks and not problems and e.source == "extra":  # pictures and links
            chunks = [stub_chunk(Document([], []), note_name(e.path))]
        rows = chunk_rows(meta, chunks, hide=chunking.hide)
        return Prepared(entry, meta=meta, rows=rows, warnings=tuple(warnings), read=read)
    doc = parse(text, drawing=is_drawing(e.path), hide=chunking.hide)
    warnings.extend(doc.warnings)
    chunks, restart = chunk_with_restart(doc, chunking.tokens, chunking.overlap)
    # A vault's stub is a note with a name, aliases and tags (an agent's empty memory
    # file is nothing yet).
    if not chunks and e.source == "extra":
        chunks = [stub_chunk(doc, note_name(e.path))]
    meta = _meta(e, data, st, digest, len(doc.lines), doc.tags, doc.aliases, doc.date)
    # A drawing's text is its text elements only, which a parse of its end cannot tell.
    tail = None
    if job.regrow and clean and not is_drawing(e.path):
        tail = tail_of(data, digest, doc, restart)
    return Prepared(
        entry,
        meta=meta,
        rows=chunk_rows(meta, chunks, hide=chunking.hide),
        warnings=tuple(warnings),
        tail=tail,
        read=read,
    )


def _read(job: Job, st: os.stat_result, data: bytes) -> Any:
    """``job.reader`` over the file's text (bytes that are not UTF-8 replaced, as a reader
    of the file would), with the entry as the walk would stat it."""
    if job.reader is None:
        return None
    e = job.entry
    entry = FileEntry(e.path, e.abspath, e.realpath, e.source, e.date, len(data), st.st_mtime_ns)
    return job.reader(entry, data.decode("utf-8", errors="replace"))


def _meta(
    e: FileEntry,
    data: bytes,
    st: os.stat_result,
    digest: str,
    lines: int,
    tags: tuple[str, ...],
    aliases: tuple[str, ...],
    date: str | None,
) -> FileMeta:
    """A file's facts; its date from its name, else from its front matter."""
    return FileMeta(
        path=e.path,
        abspath=e.abspath,
        realpath=e.realpath,
        source=e.source,
        date=e.date or date,
        size=len(data),
        mtime_ns=stat_stamp(st),
        hash=digest,
        lines=lines,
        tags=tags,
        aliases=aliases,
        modified=st.st_mtime,
    )
