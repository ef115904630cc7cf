"""Read, hash, parse and chunk the files a reconcile pass looks at: in worker processes when
there are many, so both cores work while the pass writes to SQLite."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from memd.config import Chunking
from memd.index.regrow import Tail, regrow, tail_of
from memd.log import get_logger
from memd.sources.canvas import canvas_chunks, is_canvas
from memd.sources.chunker import chunk_with_restart, stub_chunk
from memd.sources.layout import FileEntry, stat_stamp
from memd.sources.markdown import Document, is_drawing, parse
from memd.sources.names import note_name
from memd.store.rows import ChunkRow, FileMeta, chunk_rows

log = get_logger()

MAX_FILE_BYTES = 20 * 1024 * 1024
_PR_SET_PDEATHSIG = 1
_PARALLEL_MIN = 64  # below this many files to read, worker start-up costs more than it saves


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
        fields = (self.known_hash, self.chunking, self.tail, self.reader, self.regrow)
        return _job, (tuple(self.entry), *fields)


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
            self.unchanged, self.skipped, self.warnings, self.from_line, self.retag,
            self.tail, self.read,
        )  # fmt: skip


_META_FIELDS = tuple(FileMeta.__dataclass_fields__)


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


_spawned = 0  # pools of spawned processes alive in this process
_spawned_lock = threading.Lock()
# The tracker is stopped only when no pool has started for this long: passes that follow
# one another (a library indexing again and again) keep the one they have, since starting
# it anew each time cost a test suite half as much time again.
_TRACKER_IDLE_S = 3.0


@contextlib.contextmanager
def spawned_pool() -> Iterator[None]:
    """Hold while a pool of spawned processes lives (drop the pool inside): when the last
    one ends, multiprocessing's resource tracker, a process of ~13 MB that would otherwise
    live as long as the daemon, is stopped too (the next pool starts another)."""
    global _spawned
    with _spawned_lock:
        _spawned += 1
    try:
        yield
    finally:
        with _spawned_lock:
            _spawned -= 1
            if _spawned == 0:
                import gc

                gc.collect()  # what the pool left in cycles, now (a watcher's inotify too)
                timer = threading.Timer(_TRACKER_IDLE_S, _stop_idle_tracker)
                timer.daemon = True
                timer.start()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Hold while many long-lived objects, none in a cycle, are made (what a pass's workers
    read for a later stage): Python's cyclic collector would walk them all again at each
    of its full collections (0.8 CPU-s of a 5,000-note ``memd index``). What it would have
    freed meanwhile is freed after."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _stop_idle_tracker() -> None:
    with _spawned_lock:
        if _spawned:
            return  # a pool started meanwhile: it needs the tracker
        import gc
        from multiprocessing import resource_tracker

        # The pool's semaphores unregister when collected: after the tracker stopped,
        # that would start it again.
        gc.collect()
        with contextlib.suppress(Exception):
            resource_tracker._resource_tracker._stop()
        _stop_fork_server()  # ~60 MB with the encoder


def _stop_fork_server() -> None:
    """Stop the fork server, if no pool runs (hold ``_spawned_lock``). It would end with
    this process anyway, unwaited for: stopped, it is, and the CPU of the workers it
    forked counts as this process's children's (``getrusage``), as spawned workers' do."""
    if not _spawned and _FORKSERVER in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules[_FORKSERVER]._forkserver._stop()


def stop_fork_server() -> None:
    """Stop the fork server now if no pool runs (as when idle, or at exit): a process that
    reads its children's CPU (``getrusage``) then counts the workers it forked."""
    with _spawned_lock:
        _stop_fork_server()


_FORKSERVER = "multiprocessing.forkserver"
# What the fork server imports once, before it forks any worker (``_context``).
PRELOAD = "memd.index.preload"


def _context(multiprocessing: Any, preload: list[str]) -> Any:
    """Where workers come from: forked by multiprocessing's fork server, which imported
    ``preload`` once (memd's parsing code and the tokenizer: each worker started anew
    spent 0.2 s of CPU on them); else started anew ('spawn'). Either keeps workers clean
    of this process's threads and open database handles, which a plain fork would copy."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(dict.fromkeys(preload)))
    atexit.unregister(stop_fork_server)  # once, however many pools
    atexit.register(stop_fork_server)
    return ctx


def prepare_all(jobs: list[Job], workers: int | None) -> Iterator[Prepared]:
    """``prepare`` of every job, in order: in worker processes when there are many."""
    readers = {job.reader.__module__ for job in jobs[:1] if job.reader is not None}
    return in_workers(prepare, jobs, workers, preload=(PRELOAD, *readers))


def in_workers(
    fn: Callable[[Any], Any],
    items: list[Any],
    workers: int | None = None,
    preload: Sequence[str] = (),
) -> Iterator[Any]:
    """``fn(item)`` of every item, in order: in worker processes when there are many (so
    both cores work), else here. ``fn`` is a module-level function (a worker imports it by
    name); if the workers die, the rest is done here, only more slowly. ``preload``:
    modules the workers need besides ``fn``'s, loaded once for all of them where the
    platform has a fork server (the first pool of a process decides)."""
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    if workers <= 1 or len(items) < _PARALLEL_MIN:
        yield from map(fn, items)
        return
    # Imported here: a pass with little to parse (every search without a daemon) skips them.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ctx = _context(multiprocessing, [*preload, fn.__module__])
    done = 0
    # The results, some 10^5 small objects for 5,000 notes, none in a cycle, are freed as
    # soon as they are written: the cyclic collector walking them cost a tenth of the
    # writing process's CPU.
    with spawned_pool(), collector_paused():
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=_die_with, initargs=(os.getpid(),)
        )
        try:
            for result in pool.map(fn, items, chunksize=32):
                yield result
                done += 1
        except (BrokenProcessPool, OSError) as exc:
            # Workers can die (killed, out of memory, a __main__ that cannot be re-imported);
            # the files still get indexed, only more slowly.
            log.warning("index_workers_failed", error=str(exc), remaining=len(items) - done)
            yield from map(fn, items[done:])
        finally:
            # Also reached when the caller stops early: drop the queued work, do not wait.
            pool.shutdown(wait=True, cancel_futures=True)
            del pool


def _die_with(owner: int) -> None:
    """Worker start-up: end this worker when ``owner`` (the process that started the
    pool) ends, even by SIGKILL, rather than leave ~85 MB behind; the cyclic collector no
    longer walks what the imports made."""
    import gc

    gc.freeze()
    parent = os.getppid()  # the owner, or the fork server that forked this worker
    if sys.platform.startswith("linux"):
        import ctypes  # only in workers: the parent never needs it

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent or not _alive(owner):  # gone before prctl took effect
        os._exit(1)

    def watch() -> None:  # where prctl is missing (macOS), or the parent is the fork server
        while os.getppid() == parent and _alive(owner):
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="memd-parent-watch").start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # there, but not ours to signal
    return True


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
