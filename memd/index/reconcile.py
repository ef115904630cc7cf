"""Reconcile a workspace's files with its index: only what changed is read and re-chunked.

A file whose size and stat stamp (mtime, ctime and inode) match the index is skipped,
unless a watcher reported it; one whose bytes hash the same is only re-stamped; a changed
file is re-chunked and replaced in one transaction; a file that is gone is removed.
Files are read, parsed and chunked by ``memd.index.prepare``, in worker processes when
there are many.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memd.config import Chunking
from memd.log import Tally, get_logger
from memd.records import IndexReport
from memd.sources.entries import UNNAMED, holdable, shown_name
from memd.sources.layout import SESSIONS_DIR, FileEntry, Workspace, stat_stamp
from memd.store.base import Store
from memd.store.rows import ChunkRow, FileMeta, FileRow, chunk_rows

if TYPE_CHECKING:
    from memd.index.prepare import Prepared, Reader
    from memd.index.regrow import Tail

log = get_logger()
_WATCHED_PASSES = Tally("index_pass")

_BATCH_FILES = 250  # files per write transaction: progress is durable, readers see it soon
# A pass over this many files (a first index) writes in bulk (``Store.bulk``), in larger
# transactions (up to _BULK_BATCH files): each commit also writes out the full-text index's
# terms (a 5,000-note index: 0.4 CPU-s less in the writing process, with the bulk settings,
# than 250 at a time).
_BULK_FILES = 1000
_BULK_BATCH = 1000
# Bumped when chunking or FTS columns change: an index built before is re-chunked once.
# 2: a heading alone joins the text under it; a daily note's date leads its headings.
# 3: the headings that open a long section keep at least its first line with them.
# 4: Obsidian: comments, Dataview queries and drawings' data hidden; links name their
#    targets; front matter gives dates; bad front matter is not text; dated file names.
# 5: notes' names as words of their own (exact lookup); stubs get a record; links and
#    anchors give no tags.
# 6: code in a callout or a list item and a link's destination with parentheses give no
#    tags; a name of signs alone ("$?") is a name.
CHUNK_FORMAT = 6

Progress = Callable[[int, int], None]


# Where each workspace file may be re-chunked from when it grows (``memd.index.regrow``), by
# index path; kept by whoever owns the index (``memd.index.index.Index``), for its lifetime.
Tails = dict[str, "Tail"]


def reconcile(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    full: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    cancel: threading.Event | None = None,
    tails: Tails | None = None,
    skipped: dict[str, str] | None = None,
    reader: Reader | None = None,
    read: dict[str, Any] | None = None,
) -> IndexReport:
    """Bring the index of ``workspace`` in line with its files; returns what changed.

    ``cancel`` stops the pass between two write transactions (the daemon's shutdown).
    ``tails`` lets a file that only grew be re-chunked from its end (and is kept up);
    None: the caller keeps none (a process that exits after this pass), so none is made.
    ``skipped`` (path -> why; kept up) holds every file the index could not take.
    ``reader`` is also run over the text of every file the pass reads, in its workers;
    its answers go to ``read`` by path (``memd.index.prepare.Job.reader``).
    """
    started = time.perf_counter()
    known = store.files()
    # A file the index holds as it is on disk is only named by the walk (a stat and a
    # lookup), unless the rules of what is memory or how it is chunked changed since.
    trusted = not full and store.get_meta("layout") == _rules(workspace)
    trusted = trusted and store.get_meta("chunking") == _settings(chunking)
    entries, unchanged, unnamed = workspace.scan_against(known if trusted else None)
    present = {e.path for e in entries}.union(unchanged)
    # Session transcripts are not the workspace's files: memd.index.sessions keeps them.
    gone = [p for p in known if p not in present and not p.startswith(SESSIONS_DIR + "/")]
    changes = _Changes(entries, gone, known, unchanged=len(unchanged),
                       unnamed=dict.fromkeys(unnamed, UNNAMED))  # fmt: skip
    report = _sync(store, workspace, chunking, changes, full, progress, workers, cancel,
                   started, tails, (reader, read))  # fmt: skip
    if not report.cancelled and not trusted:
        with store.transaction():
            store.set_meta("layout", _rules(workspace))
    if skipped is not None:
        if not report.cancelled:  # a whole pass saw every file
            skipped.clear()
        skipped.update(report.skipped_files)
    return report


def reconcile_paths(
    store: Store,
    workspace: Workspace,
    chunking: Chunking,
    paths: Iterable[str],
    cancel: threading.Event | None = None,
    tails: Tails | None = None,
    skipped: dict[str, str] | None = None,
) -> IndexReport:
    """Re-index only the given absolute paths (what a file watcher reported)."""
    started = time.perf_counter()
    located = [loc for path in dict.fromkeys(paths) if (loc := workspace.locate(path))]
    unnamed = {s: UNNAMED for s, _ in located if not holdable(s)}
    located = [(shown, entry) for shown, entry in located if shown not in unnamed]
    known = store.files_at([shown for shown, _ in located])
    entries = [entry for _, entry in located if entry is not None]
    gone = [shown for shown, entry in located if entry is None and shown in known]
    # A watcher event means the file changed, whatever its stat says (a same-size edit
    # that restores the old mtime): read it; an unchanged hash costs only a re-stamp.
    changes = _Changes(entries, gone, known, trust_stat=False, unnamed=unnamed)
    report = _sync(store, workspace, chunking, changes, False, None, 1, cancel, started, tails)
    if skipped is not None:
        for shown, _ in located:
            skipped.pop(shown, None)
        skipped.update(report.skipped_files)
    return report


@dataclass(frozen=True)
class _Changes:
    """Files to look at (``entries``), index paths whose files are gone, and what the
    index knew before."""

    entries: list[FileEntry]
    gone: list[str]
    known: dict[str, FileRow]
    trust_stat: bool = True
    unchanged: int = 0  # files the walk found as the index holds them (not in ``entries``)
    unnamed: dict[str, str] = field(default_factory=dict)  # path -> why it is not indexed


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
    reading: tuple[Reader | None, dict[str, Any] | None] = (None, None),
) -> IndexReport:
    report = IndexReport(unchanged=changes.unchanged)
    reader, read = reading
    regrow = tails is not None
    tails = {} if tails is None else tails
    settings = _settings(chunking)
    if store.get_meta("chunking", settings) != settings:
        full = True  # chunks cut with other settings would not match the new ones
    known = changes.known
    for path, why in changes.unnamed.items():
        _skip(report, path, why)
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
            jobs.append((e, None if full or row is None else row.hash, tail))
        else:
            report.unchanged += 1
    if changes.gone:
        with store.transaction():
            store.delete_files([known[path].id for path in changes.gone])
        report.removed = len(changes.gone)
        for path in changes.gone:
            tails.pop(path, None)
    done = 0
    prepared = _prepared(jobs, chunking, workers, reader, regrow)
    bulk = len(jobs) >= _BULK_FILES
    try:
        with store.bulk() if bulk else contextlib.nullcontext():
            for batch in _batched(prepared, _batch_size(len(jobs), bulk)):
                with store.transaction():
                    new: list[tuple[FileMeta, list[ChunkRow]]] = []
                    for p in batch:
                        _apply(store, p, known, report, tails, chunking.hide, new)
                        if read is not None and p.read is not None:
                            read[p.entry.path] = p.read
                    store.add_files(new)
                done += len(batch)
                if progress:
                    progress(done, len(jobs))
                if cancel is not None and cancel.is_set():
                    report.cancelled = True
                    break
    finally:
        prepared.close()  # stops worker processes promptly when cancelled
    if bulk and not report.cancelled and report.changed:
        store.tidy()  # indexed files written again: what they held was deleted
    # A pass that found nothing to change writes nothing: a one-shot search's pass is then
    # a read (no transaction, no fsync that a busy disk made take up to 0.1 s); the index
    # object that ran it keeps when it ended (``Index.freshness``).
    if report.touched or full or report.cancelled or store.get_meta("chunking") != settings:
        with store.transaction():
            if report.touched or full:
                store.set_meta("generation", str(int(store.get_meta("generation", "0")) + 1))
            if not report.cancelled:
                store.set_meta("chunking", settings)
            store.set_meta("last_indexed_at", str(time.time()))
    report.seconds = time.perf_counter() - started
    if report.touched or report.warnings:
        fields = dict(workspace=workspace.name, added=report.added, changed=report.changed,
                      removed=report.removed, skipped=report.skipped, chunks=report.chunks,
                      ms=round(report.seconds * 1000))  # fmt: skip
        if changes.trust_stat:  # a whole pass (start, reconcile): rare, worth a line
            log.info("index_pass", **fields)
        else:  # a watcher's few files: one a save, so a summary a minute
            _WATCHED_PASSES.add(**fields)
    return report


def _rules(workspace: Workspace) -> str:
    """What decides which files are memory (folders, globs): an index kept under other
    rules has its files classified again, not taken as they were."""
    config = workspace.config
    return repr((config.path, config.extra_paths, config.exclude))


def _settings(chunking: Chunking) -> str:
    """How chunks are cut: an index cut otherwise is re-chunked whole."""
    return f"{chunking.tokens}/{chunking.overlap}/{CHUNK_FORMAT}/{','.join(chunking.hide)}"


def _apply(
    store: Store, p: Prepared, known: dict, report: IndexReport, tails: Tails, hide: tuple,
    new: list[tuple[FileMeta, list[ChunkRow]]],
) -> None:  # fmt: skip
    """Write what a prepared file says (a file the index does not hold yet goes to ``new``,
    for ``Store.add_files`` with the rest of its batch)."""
    row = known.get(p.entry.path)
    for w in p.warnings:
        report.warnings.append(f"{p.entry.path}: {w}")
        log.warning("file_warning", path=p.entry.path, problem=w)
    if p.skipped:
        _skip(report, p.entry.path, p.skipped)
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
            store.replace_fts(chunk_id, chunk_rows(p.meta, [first], hide=hide)[0].fts)
        report.chunks += len(p.rows)
        report.changed += 1
    else:
        report.chunks += len(p.rows)
        if row:
            store.replace_file(p.meta, p.rows)
            report.changed += 1
        else:
            new.append((p.meta, p.rows))
            report.added += 1
    if p.tail is not None:
        tails[p.entry.path] = p.tail
    elif not p.unchanged:
        tails.pop(p.entry.path, None)


def _skip(report: IndexReport, path: str, why: str) -> None:
    report.skipped += 1
    report.skipped_files[path] = why
    report.warnings.append(f"{shown_name(path)}: {why}")
    log.warning("file_skipped", path=shown_name(path), reason=why)


def same_stat(row: FileRow | None, e: FileEntry) -> bool:
    """Whether the index holds ``e`` as its stat is now (then it need not be read)."""
    if row is None or (row.size, row.realpath) != (e.size, e.realpath):
        return False
    return row.mtime_ns == (e.stamp if e.stamp is not None else stamp_at(e.abspath))


def stamp_at(path: str) -> int | None:
    """The ``stat_stamp`` of the file at ``path``; None if it cannot be stat'ed."""
    try:
        return stat_stamp(os.stat(path))
    except OSError:
        return None


def _prepared(
    jobs: list[tuple[FileEntry, str | None, Tail | None]],
    chunking: Chunking,
    workers: int | None,
    reader: Reader | None = None,
    regrow: bool = True,
) -> Iterator[Prepared]:
    """The changed files read, parsed and chunked (``memd.index.prepare``), in order;
    ``regrow``: with their tails."""
    if jobs:
        # Loaded only when a file changed: a pass that finds none (a one-shot search) skips it.
        from memd.index.prepare import Job, prepare_all

        yield from prepare_all(
            [Job(e, old, chunking, tail, reader, regrow) for e, old, tail in jobs], workers
        )


def _batch_size(jobs: int, bulk: bool) -> int:
    """Files a write transaction takes: in bulk up to ``_BULK_BATCH``, with at least five
    transactions a pass (a stop waits for the one in flight, readers see them land)."""
    return max(_BATCH_FILES, min(_BULK_BATCH, jobs // 5)) if bulk else _BATCH_FILES


def _batched(items: Iterable[Prepared], n: int) -> Iterator[list[Prepared]]:
    batch: list[Prepared] = []
    for item in items:
        batch.append(item)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch
