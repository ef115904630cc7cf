"""Reconcile a workspace's files with its index: only what changed is read and re-chunked.

A file whose size and stat stamp (mtime, ctime and inode) match the index is skipped,
unless a watcher reported it; one whose bytes hash the same is only re-stamped; a changed
file is re-chunked and replaced in one transaction; a file that is gone is removed.
Parsing and chunking of many files runs in worker processes so both cores work while this
process writes to SQLite.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

from memd.config import Chunking
from memd.index.regrow import Tail, regrow, tail_of
from memd.log import get_logger
from memd.sources.chunker import chunk_with_restart
from memd.sources.layout import SESSIONS_DIR, FileEntry, Workspace
from memd.sources.markdown import parse
from memd.store.schema import ChunkRow, FileMeta, FileRow, chunk_rows
from memd.store.sqlite import Store

log = get_logger()

MAX_FILE_BYTES = 20 * 1024 * 1024
_BATCH_FILES = 250  # files per write transaction: progress is durable, readers see it soon
# Bumped when chunking or FTS columns change: an index built before is re-chunked once.
# 2: a heading alone joins the text under it; a daily note's date leads its headings.
# 3: the headings that open a long section keep at least its first line with them.
CHUNK_FORMAT = 3
_PR_SET_PDEATHSIG = 1
_PARALLEL_MIN = 64  # below this many files to read, worker start-up costs more than it saves

Progress = Callable[[int, int], None]


@dataclass
class IndexReport:
    """What one reconcile pass did."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks: int = 0
    cancelled: bool = False
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def as_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class _Job:
    entry: FileEntry
    known_hash: str | None
    chunking: Chunking
    tail: Tail | None = None  # the file as last chunked, if it may only have grown


# Where each workspace file may be re-chunked from when it grows (``memd.index.regrow``), by
# index path; kept by whoever owns the index (``memd.index.index.Index``), for its lifetime.
Tails = dict[str, Tail]


@dataclass(frozen=True)
class _Prepared:
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


def reconcile(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    full: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    cancel: threading.Event | None = None,
    tails: Tails | None = None,
) -> IndexReport:
    """Bring the index of ``workspace`` in line with its files; returns what changed.

    ``cancel`` stops the pass between two write transactions (the daemon's shutdown).
    ``tails`` lets a file that only grew be re-chunked from its end (and is kept up).
    """
    started = time.perf_counter()
    entries = workspace.scan()
    known = store.files()
    present = {e.path for e in entries}
    # Session transcripts are not the workspace's files: memd.index.sessions keeps them.
    gone = [p for p in known if p not in present and not p.startswith(SESSIONS_DIR + "/")]
    changes = _Changes(entries, gone, known)
    return _sync(
        store, workspace, chunking, changes, full, progress, workers, cancel, started, tails
    )


def reconcile_paths(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    paths: Iterable[str],
    cancel: threading.Event | None = None,
    tails: Tails | None = None,
) -> IndexReport:
    """Re-index only the given absolute paths (what a file watcher reported)."""
    started = time.perf_counter()
    located = [loc for path in dict.fromkeys(paths) if (loc := workspace.locate(path))]
    known = store.files_at([shown for shown, _ in located])
    entries = [entry for _, entry in located if entry is not None]
    gone = [shown for shown, entry in located if entry is None and shown in known]
    # A watcher event means the file changed, whatever its stat says (a same-size edit
    # that restores the old mtime): read it; an unchanged hash costs only a re-stamp.
    changes = _Changes(entries, gone, known, trust_stat=False)
    return _sync(store, workspace, chunking, changes, False, None, 1, cancel, started, tails)


@dataclass(frozen=True)
class _Changes:
    """Files to look at (``entries``), index paths whose files are gone, and what the
    index knew before."""

    entries: list[FileEntry]
    gone: list[str]
    known: dict[str, FileRow]
    trust_stat: bool = True


def _sync(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    changes: _Changes,
    full: bool,
    progress: Progress | None,
    workers: int | None,
    cancel: threading.Event | None,
    started: float,
    tails: Tails | None = None,
) -> IndexReport:
    report = IndexReport()
    tails = {} if tails is None else tails
    settings = f"{chunking.tokens}/{chunking.overlap}/{CHUNK_FORMAT}"
    if store.get_meta("chunking", settings) != settings:
        full = True  # chunks cut with other settings would not match the new ones
    known = changes.known
    jobs = []
    for e in changes.entries:
        row = known.get(e.path)
        same = changes.trust_stat and same_stat(row, e)
        if full or not same:
            tail = tails.get(e.path)
            if (
                full
                or row is None
                or tail is None
                or (tail.size, tail.hash) != (row.size, row.hash)
            ):
                tail = None
            jobs.append(_Job(e, None if full or row is None else row.hash, chunking, tail))
        else:
            report.unchanged += 1
    if changes.gone:
        with store.transaction():
            store.delete_files([known[path].id for path in changes.gone])
        report.removed = len(changes.gone)
        for path in changes.gone:
            tails.pop(path, None)
    done = 0
    prepared = _prepare_all(jobs, workers)
    try:
        for batch in _batched(prepared, _BATCH_FILES):
            with store.transaction():
                for p in batch:
                    _apply(store, p, known, report, tails)
            done += len(batch)
            if progress:
                progress(done, len(jobs))
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
    finally:
        prepared.close()  # stops worker processes promptly when cancelled
    with store.transaction():
        if report.touched or full:
            store.set_meta("generation", str(int(store.get_meta("generation", "0")) + 1))
        if not report.cancelled:
            store.set_meta("chunking", settings)
        store.set_meta("last_indexed_at", str(time.time()))
    report.seconds = time.perf_counter() - started
    if report.touched or report.warnings:
        log.info(
            "index_pass",
            workspace=workspace.name,
            added=report.added,
            changed=report.changed,
            removed=report.removed,
            skipped=report.skipped,
            chunks=report.chunks,
            ms=round(report.seconds * 1000),
        )
    return report


def _apply(store: Store, p: _Prepared, known: dict, report: IndexReport, tails: Tails) -> None:
    row = known.get(p.entry.path)
    for w in p.warnings:
        report.warnings.append(f"{p.entry.path}: {w}")
        log.warning("file_warning", path=p.entry.path, problem=w)
    if p.skipped:
        report.skipped += 1
        report.warnings.append(f"{p.entry.path}: {p.skipped}")
        log.warning("file_skipped", path=p.entry.path, reason=p.skipped)
        if row:  # what the index held is no longer the file; do not serve it
            store.delete_files([row.id])
            report.removed += 1
    elif p.unchanged:
        store.touch_file(row.id, p.entry.size, p.entry.mtime_ns)
        report.unchanged += 1
    elif p.from_line is not None:
        file_id = store.replace_tail(p.meta, p.from_line, p.rows)
        if p.retag:  # tags are searchable on a file's first chunk
            chunk_id, first = store.first_chunk(file_id)
            store.replace_fts(chunk_id, chunk_rows(p.meta, [first])[0].fts)
        report.chunks += len(p.rows)
        report.changed += 1
    else:
        store.replace_file(p.meta, p.rows)
        report.chunks += len(p.rows)
        if row:
            report.changed += 1
        else:
            report.added += 1
    if p.tail is not None:
        tails[p.entry.path] = p.tail
    elif not p.unchanged:
        tails.pop(p.entry.path, None)


def _prepare_all(jobs: list[_Job], workers: int | None) -> Iterator[_Prepared]:
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    if workers <= 1 or len(jobs) < _PARALLEL_MIN:
        yield from map(prepare, jobs)
        return
    # Imported here: a pass with little to parse (every search without a daemon) skips them.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # 'spawn' keeps workers clean of the parent's threads and open database handles.
    ctx = multiprocessing.get_context("spawn")
    done = 0
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_die_with, initargs=(os.getpid(),)
    )
    try:
        for prepared in pool.map(prepare, jobs, chunksize=32):
            yield prepared
            done += 1
    except (BrokenProcessPool, OSError) as exc:
        # Workers can die (killed, out of memory, a __main__ that cannot be re-imported);
        # the files still get indexed, only more slowly.
        log.warning("index_workers_failed", error=str(exc), remaining=len(jobs) - done)
        yield from map(prepare, jobs[done:])
    finally:
        # Also reached when the caller stops early: drop the queued work, do not wait it out.
        pool.shutdown(wait=True, cancel_futures=True)


def _die_with(parent: int) -> None:
    """Worker start-up: end this worker when ``parent`` ends, even by SIGKILL, rather than
    leave ~85 MB behind."""
    if sys.platform.startswith("linux"):
        import ctypes  # only in workers: the parent never needs it

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(1)

    def watch() -> None:  # where prctl is missing (macOS)
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="memd-parent-watch").start()


def prepare(job: _Job) -> _Prepared:
    """Read, hash, parse and chunk one file (runs in a worker process)."""
    e = job.entry
    try:
        with open(e.abspath, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_FILE_BYTES:
                size_mb = st.st_size / 2**20
                return _Prepared(e, skipped=f"file is {size_mb:.0f} MiB, over the 20 MiB limit")
            data = f.read()
    except FileNotFoundError:
        return _Prepared(e, skipped="file vanished before it could be read")
    except OSError as exc:
        return _Prepared(e, skipped=f"cannot read file: {exc.strerror}")
    stamp = stat_stamp(st)
    entry = FileEntry(e.path, e.abspath, e.realpath, e.source, e.date, len(data), stamp)
    chunking = job.chunking
    if job.tail is not None and (
        grown := regrow(data, job.tail, chunking.tokens, chunking.overlap)
    ):
        # Only appended to: re-chunk the end, keep every earlier chunk.
        meta = _meta(e, data, st, grown.hash, grown.lines, grown.tags, job.tail.aliases)
        rows = chunk_rows(meta, grown.chunks, first=False)
        retag = grown.tags != job.tail.tags
        return _Prepared(entry, meta, rows, from_line=grown.from_line, retag=retag, tail=grown.tail)
    digest = hashlib.sha256(data).hexdigest()
    if digest == job.known_hash:
        return _Prepared(entry, unchanged=True)
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
    doc = parse(text)
    warnings.extend(doc.warnings)
    chunks, restart = chunk_with_restart(doc, chunking.tokens, chunking.overlap)
    meta = _meta(e, data, st, digest, len(doc.lines), doc.tags, doc.aliases)
    tail = tail_of(data, digest, doc, restart) if clean else None
    return _Prepared(
        entry, meta=meta, rows=chunk_rows(meta, chunks), warnings=tuple(warnings), tail=tail
    )


def _meta(
    e: FileEntry,
    data: bytes,
    st: os.stat_result,
    digest: str,
    lines: int,
    tags: tuple[str, ...],
    aliases: tuple[str, ...],
) -> FileMeta:
    return FileMeta(
        path=e.path,
        abspath=e.abspath,
        realpath=e.realpath,
        source=e.source,
        date=e.date,
        size=len(data),
        mtime_ns=stat_stamp(st),
        hash=digest,
        lines=lines,
        tags=tags,
        aliases=aliases,
    )


def stat_stamp(st: os.stat_result) -> int:
    """What the index compares (in its ``mtime_ns`` column) to skip a file unread: mtime,
    ctime and inode together. An edit that keeps the size and puts the old mtime back
    still moves ctime (which no one can set), and a save by rename changes the inode."""
    raw = f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=7).digest(), "big")


def same_stat(row: FileRow | None, e: FileEntry) -> bool:
    """Whether the index holds ``e`` as its stat is now (then it need not be read)."""
    return row is not None and (row.size, row.mtime_ns, row.realpath) == (
        e.size,
        stamp_at(e.abspath),
        e.realpath,
    )


def stamp_at(path: str) -> int | None:
    """The ``stat_stamp`` of the file at ``path``; None if it cannot be stat'ed."""
    try:
        return stat_stamp(os.stat(path))
    except OSError:
        return None


def _batched(items: Iterable[_Prepared], n: int) -> Iterator[list[_Prepared]]:
    batch: list[_Prepared] = []
    for item in items:
        batch.append(item)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch
