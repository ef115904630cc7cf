"""The daemon's read connections to one index, pooled.

Pooled rather than kept per thread: thread pools grow, shrink and hand work to any of their
threads, so connections kept per thread piled up (one for every thread that ever read) and
outlived the threads that opened them. A burst of reads opens more, for the burst only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memd.store.base import Store

IDLE = 2  # connections kept open between reads; more are closed when given back


class ReadPool:
    """Read connections opened by ``open_reader``, lent one at a time."""

    def __init__(self, open_reader: Callable[[], Store]) -> None:
        self._open = open_reader
        self._lock = threading.Lock()
        self._idle: list[tuple[int, Store]] = []
        self._all: list[Store] = []
        self.epoch = 0  # bumped when the database file is replaced: older connections go

    def take(self) -> tuple[int, Store]:
        """An idle connection on the current database, or a new one."""
        with self._lock:
            while self._idle:
                epoch, reader = self._idle.pop()
                if epoch == self.epoch:
                    return epoch, reader
                self._drop(reader)
            epoch = self.epoch
        reader = self._open()
        with self._lock:
            self._all.append(reader)
        return epoch, reader

    def give(self, epoch: int, reader: Store) -> None:
        """Return a connection from ``take``: kept for the next reader, or closed if stale."""
        with self._lock:
            if not any(kept is reader for kept in self._all):
                return  # closed meanwhile
            if epoch == self.epoch and len(self._idle) < IDLE:
                self._idle.append((epoch, reader))
            else:
                self._drop(reader)  # stale, or one of a burst of reads that has passed

    def renew(self) -> None:
        """The database file was replaced: connections opened before are closed when returned."""
        with self._lock:
            self.epoch += 1

    def close(self) -> None:
        """Close every connection, lent or idle."""
        with self._lock:
            for reader in self._all:
                reader.close()
            self._all.clear()
            self._idle.clear()

    def __len__(self) -> int:
        return len(self._all)

    def _drop(self, reader: Store) -> None:
        self._all = [kept for kept in self._all if kept is not reader]
        reader.close()
