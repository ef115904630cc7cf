"""Worker processes for a pass: ``fn(item)`` of many items on both cores, in order, with
the processes' lifetimes kept in hand (they end with the process that started them, even
when it is killed, and what multiprocessing starts beside them ends when idle)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memd.log import get_logger

log = get_logger()

_PR_SET_PDEATHSIG = 1
_PARALLEL_MIN = 64  # below this many items, worker start-up costs more than it saves
_FORKSERVER = "multiprocessing.forkserver"

_spawned = 0  # pools of spawned processes alive in this process
_spawned_lock = threading.Lock()
# The tracker is stopped only when no pool has started for this long: passes that follow
# one another (a library indexing again and again) keep the one they have, since starting
# it anew each time cost a test suite half as much time again.
_TRACKER_IDLE_S = 3.0
_WARM_IDLE_S = 30.0  # a fork server started ahead of a pass (``warm``) that no pool used


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
    """Stop the fork server, if no pool runs (hold ``_spawned_lock``). Left alone it would
    end with this process, never waited for; stopped here it is, so the CPU of the workers
    it forked counts among this process's children's (``getrusage``), as spawned ones' did."""
    if not _spawned and _FORKSERVER in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules[_FORKSERVER]._forkserver._stop()


def stop_fork_server() -> None:
    """Stop the fork server now if no pool runs (as when idle, or at exit): a process that
    reads its children's CPU (``getrusage``) then counts the workers it forked."""
    with _spawned_lock:
        _stop_fork_server()


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


def warm(fn: Callable[[Any], Any], preload: Sequence[str] = ()) -> None:
    """Start the fork server for ``in_workers(fn, ..., preload=preload)`` now, where the
    platform has one: it imports ``preload`` while this process goes on (about 0.2 s of
    its own start-up that a pool would otherwise wait for). Never fails: a pool that finds
    no server starts one as before."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    _context(multiprocessing, [*preload, fn.__module__])
    from multiprocessing import forkserver

    with contextlib.suppress(Exception):
        forkserver.ensure_running()
    # Stopped if no pool came to use it (a pass with little to parse, in a process that
    # lives on: the MCP bridge); a pool that runs then stops it when it ends, as ever.
    timer = threading.Timer(_WARM_IDLE_S, _stop_idle_tracker)
    timer.daemon = True
    timer.start()


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
            # Parts of up to 128 items (fewer hand-overs: a 5,000-note index's wall 5 % less
            # than with 32), at least four a worker so a small pass still spreads.
            part = max(1, min(128, len(items) // (4 * workers)))
            for result in pool.map(fn, items, chunksize=part):
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
