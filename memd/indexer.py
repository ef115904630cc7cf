"""Reconcile a workspace's files with its index: only what changed is read and re-chunked.

A file whose size and mtime match the index is skipped; one whose bytes hash the same is
only re-stamped; a changed file is re-chunked and replaced in one transaction; a file that
is gone is removed. Parsing and chunking of many files runs in worker processes so both
cores work while this process writes to SQLite.
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

from memd.chunker import chunk_document
from memd.config import Chunking
from memd.log import get_logger
from memd.markdown import parse
from memd.schema import ChunkRow, FileMeta, FileRow, chunk_rows
from memd.store import Store
from memd.workspace import FileEntry, Workspace

log = get_logger()

MAX_FILE_BYTES = 20 * 1024 * 1024
_BATCH_FILES = 250  # files per write transaction: progress is durable, readers see it soon
# Bumped when chunking or FTS columns change: an index built before is re-chunked once.
# 2: a heading alone joins the text under it; a daily note's date leads its headings.
CHUNK_FORMAT = 2
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


@dataclass(frozen=True)
class _Prepared:
    """A job's outcome: new chunks, ``unchanged`` content, or a reason it was skipped."""

    entry: FileEntry
    meta: FileMeta | None = None
    rows: list[ChunkRow] | None = None
    unchanged: bool = False
    skipped: str | None = None
    warnings: tuple[str, ...] = ()


def reconcile(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    full: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """Bring the index of ``workspace`` in line with its files; returns what changed.

    ``cancel`` stops the pass between two write transactions (the daemon's shutdown).
    """
    started = time.perf_counter()
    entries = workspace.scan()
    known = store.files()
    present = {e.path for e in entries}
    gone = [path for path in known if path not in present]
    changes = _Changes(entries, gone, known)
    return _sync(store, workspace, chunking, changes, full, progress, workers, cancel, started)


def reconcile_paths(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    paths: Iterable[str],
    cancel: threading.Event | None = None,
) -> IndexReport:
    """Re-index only the given absolute paths (what a file watcher reported)."""
    started = time.perf_counter()
    located = [loc for path in dict.fromkeys(paths) if (loc := workspace.locate(path))]
    known = store.files_at([shown for shown, _ in located])
    entries = [entry for _, entry in located if entry is not None]
    gone = [shown for shown, entry in located if entry is None and shown in known]
    changes = _Changes(entries, gone, known)
    return _sync(store, workspace, chunking, changes, False, None, 1, cancel, started)


@dataclass(frozen=True)
class _Changes:
    """Files to look at (``entries``), index paths whose files are gone, and what the
    index knew before."""

    entries: list[FileEntry]
    gone: list[str]
    known: dict[str, FileRow]


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
) -> IndexReport:
    report = IndexReport()
    settings = f"{chunking.tokens}/{chunking.overlap}/{CHUNK_FORMAT}"
    if store.get_meta("chunking", settings) != settings:
        full = True  # chunks cut with other settings would not match the new ones
    known = changes.known
    jobs = []
    for e in changes.entries:
        row = known.get(e.path)
        same = row is not None and (row.size, row.mtime_ns, row.realpath) == (
            e.size,
            e.mtime_ns,
            e.realpath,
        )
        if full or not same:
            jobs.append(_Job(e, None if full or row is None else row.hash, chunking))
        else:
            report.unchanged += 1
    if changes.gone:
        with store.transaction():
            store.delete_files([known[path].id for path in changes.gone])
        report.removed = len(changes.gone)
    done = 0
    prepared = _prepare_all(jobs, workers)
    try:
        for batch in _batched(prepared, _BATCH_FILES):
            with store.transaction():
                for p in batch:
                    _apply(store, p, known, report)
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


def _apply(store: Store, p: _Prepared, known: dict, report: IndexReport) -> None:
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
    else:
        store.replace_file(p.meta, p.rows)
        report.chunks += len(p.rows)
        if row:
            report.changed += 1
        else:
            report.added += 1


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
    entry = FileEntry(e.path, e.abspath, e.realpath, e.source, e.date, len(data), st.st_mtime_ns)
    digest = hashlib.sha256(data).hexdigest()
    if digest == job.known_hash:
        return _Prepared(entry, unchanged=True)
    warnings: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        warnings.append(
            f"not valid UTF-8 (first bad byte at offset {exc.start}); "
            "indexed with replacement characters"
        )
    doc = parse(text)
    warnings.extend(doc.warnings)
    chunks = chunk_document(doc, job.chunking.tokens, job.chunking.overlap)
    meta = FileMeta(
        path=e.path,
        abspath=e.abspath,
        realpath=e.realpath,
        source=e.source,
        date=e.date,
        size=len(data),
        mtime_ns=st.st_mtime_ns,
        hash=digest,
        lines=len(doc.lines),
        tags=doc.tags,
        aliases=doc.aliases,
    )
    return _Prepared(entry, meta=meta, rows=chunk_rows(meta, chunks), warnings=tuple(warnings))


def _batched(items: Iterable[_Prepared], n: int) -> Iterator[list[_Prepared]]:
    batch: list[_Prepared] = []
    for item in items:
        batch.append(item)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch
