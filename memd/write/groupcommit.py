"""Group commit: requests that queue up while one batch is being committed are committed
together as the next batch.

Eight agents flushing at once then cost two commits (two index updates, one writer
transaction each), not eight in a row. Each request still gets its own answer or error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

I = TypeVar("I")  # noqa: E741 - a request
R = TypeVar("R")  # its answer

Commit = Callable[[Callable[[], None]], None]


class GroupCommit(Generic[I, R]):
    """Runs ``run_batch`` (through ``commit``, i.e. on the writer) over every request
    waiting; ``run_batch`` returns one answer or exception per request, in order."""

    def __init__(self, commit: Commit, run_batch: Callable[[list[I]], list[R | Exception]]):
        self._commit = commit
        self._run_batch = run_batch
        self._queue: list[tuple[I, Future]] = []
        self._queue_lock = threading.Lock()
        self._batch_lock = threading.Lock()  # batches never overlap, even without a writer

    def submit(self, item: I) -> R:
        """Commit ``item`` with whatever else is waiting; its answer, or raises its error."""
        pending: tuple[I, Future] = (item, Future())
        with self._queue_lock:
            self._queue.append(pending)
        try:
            self._commit(self._drain)
        except BaseException:
            with self._queue_lock:
                if pending in self._queue:  # never ran: it must not run later
                    self._queue.remove(pending)
                    raise
        return pending[1].result()

    def _drain(self) -> None:
        with self._batch_lock:
            with self._queue_lock:
                batch, self._queue = self._queue, []
            if not batch:
                return  # an earlier drain took this one's request along
            try:
                results = self._run_batch([item for item, _ in batch])
            except Exception as exc:  # a bug: every request of the batch reports it
                for _, future in batch:
                    future.set_exception(exc)
                return
            for (_, future), result in zip(batch, results, strict=True):
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)
