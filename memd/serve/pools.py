"""Thread pools that know whether work still runs on them.

A stopping daemon closes its indexes and then has no use for what its threads are still
doing: an embedding batch (seconds of a local model on a busy machine), a call to a hung
endpoint. Neither can be interrupted, and both the event loop (its default executor) and the
interpreter (at exit) would wait for them; knowing that such work runs lets the daemon end
the process at once instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# How much nicer than the daemon's requests its embedding work runs (a back-fill's batches,
# the interim tier): on a busy machine a hook's context or a search gets the processor
# first, and a back-fill takes what is left.
BACKGROUND_NICE = 10


def in_background() -> None:
    """Lower the calling thread's processor priority by ``BACKGROUND_NICE``. On Linux a
    thread's niceness is its own and passes to the threads and processes it starts (a local
    model's inference threads); elsewhere nothing changes."""
    if sys.platform != "linux":
        return  # there PRIO_PROCESS with a thread's id would name a process
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):  # a priority not to be read or set: work runs as is
        nice = os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE
        os.setpriority(os.PRIO_PROCESS, tid, min(nice, 19))


class Pool(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` that counts the calls started on it and not yet ended."""

    def __init__(
        self,
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix,
                         initializer=initializer)  # fmt: skip
        self.name = thread_name_prefix
        self._running = 0
        self._count_lock = threading.Lock()

    @property
    def running(self) -> int:
        """Calls running on a thread of this pool right now (queued ones not counted)."""
        with self._count_lock:
            return self._running

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        def counted() -> T:
            with self._count_lock:
                self._running += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count_lock:
                    self._running -= 1

        return super().submit(counted)


# Background work that takes processors for minutes: a back-fill's batches, the interim
# tier. Its threads run niced (``in_background``); what a stop waits for (an index
# pass's transaction, the writer) never runs here, so a busy machine does not hold a stop.
BACKGROUND = Pool(max_workers=4, thread_name_prefix="memd-niced", initializer=in_background)


async def in_niced(fn: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread`` for background work: on a niced thread of ``BACKGROUND``."""
    return await asyncio.get_running_loop().run_in_executor(BACKGROUND, fn, *args)
