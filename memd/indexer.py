"""Reconcile a workspace's files with its index: only what changed is read and re-chunked.

A file whose size and mtime match the index is skipped; one whose bytes hash the same is
only re-stamped; a changed file is re-chunked and replaced in one transaction; a file that
is gone is removed. Parsing and chunking of many files runs in worker processes so both
cores work while this process writes to SQLite.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import structlog

from memd.chunker import chunk_document
from memd.config import Chunking
from memd.markdown import parse
from memd.store import ChunkRow, FileMeta, Store, chunk_rows
from memd.workspace import FileEntry, Workspace

log = structlog.get_logger()

MAX_FILE_BYTES = 20 * 1024 * 1024
_BATCH_FILES = 250  # files per write transaction: progress is durable, readers see it soon
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
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def as_dict(self) -> dict:
        return {
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
        }


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
) -> IndexReport:
    """Bring the index of ``workspace`` in line with its files; returns what changed."""
    started = time.perf_counter()
    report = IndexReport()
    entries = workspace.scan()
    known = store.files()
    present = {e.path for e in entries}
    gone = [row.id for path, row in known.items() if path not in present]
    jobs = []
    for e in entries:
        row = known.get(e.path)
        if (
            full
            or row is None
            or (row.size, row.mtime_ns, row.realpath)
            != (
                e.size,
                e.mtime_ns,
                e.realpath,
            )
        ):
            jobs.append(_Job(e, None if full or row is None else row.hash, chunking))
        else:
            report.unchanged += 1
    total = len(jobs)
    if gone:
        with store.transaction():
            store.delete_files(gone)
        report.removed = len(gone)
    done = 0
    for batch in _batched(_prepare_all(jobs, workers), _BATCH_FILES):
        with store.transaction():
            for p in batch:
                _apply(store, p, known, report)
        done += len(batch)
        if progress:
            progress(done, total)
    with store.transaction():
        if report.touched or full:
            store.set_meta("generation", str(int(store.get_meta("generation", "0")) + 1))
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
    # 'spawn' keeps workers clean of the parent's threads and open database handles.
    ctx = multiprocessing.get_context("spawn")
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for prepared in pool.map(prepare, jobs, chunksize=32):
                yield prepared
                done += 1
    except (BrokenProcessPool, OSError) as exc:
        # Workers can die (killed, out of memory, a __main__ that cannot be re-imported);
        # the files still get indexed, only more slowly.
        log.warning("index_workers_failed", error=str(exc), remaining=len(jobs) - done)
        yield from map(prepare, jobs[done:])


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
