"""A few interchangeable things (model engines) handed to threads first come, first served.

``threading.Lock`` and ``queue.Queue`` promise no order: a thread that gives a thing back
and asks again at once usually gets it back before a thread already asleep wakes, so one
question could lose an engine to later ones again and again (once, with four readers on a
loaded machine, a question waited 1.6 s for the engine while the engine's own time was
0.6 s at most: bench/query_embed_bench.py).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class Turns:
    """``n`` slots, numbered from 0, each held by one thread at a time; a thread that
    waits gets the next slot given back before any thread that asked after it.

    >>> turns = Turns(2)
    >>> with turns.one() as slot:
    ...     slot
    0
    """

    def __init__(self, n: int) -> None:
        self._guard = threading.Lock()
        self._free = deque(range(n - 1, -1, -1))  # the last given back is taken first
        self._waiting: deque[list] = deque()  # [slot handed over, lock released on it]

    def take(self, blocking: bool = True) -> int | None:
        """A free slot, after every thread that asked before; without ``blocking``, a free
        slot only if nobody waits, else None."""
        with self._guard:
            if self._free and not self._waiting:
                # The slot used last: one reader keeps using one engine (one engine's
                # buffers, and a second is only made when two questions overlap).
                return self._free.pop()
            if not blocking:
                return None
            turn: list = [None, threading.Lock()]
            turn[1].acquire()
            self._waiting.append(turn)
        turn[1].acquire()  # released by give(), which put our slot in turn[0]
        return turn[0]

    def give(self, slot: int) -> None:
        """Give ``slot`` back: to the longest-waiting thread, or to the free ones."""
        with self._guard:
            if self._waiting:
                turn = self._waiting.popleft()
                turn[0] = slot
                turn[1].release()
            else:
                self._free.append(slot)

    @contextmanager
    def one(self) -> Iterator[int]:
        """Hold a slot for the ``with`` block."""
        slot = self.take()
        assert slot is not None  # a blocking take always returns one
        try:
            yield slot
        finally:
            self.give(slot)
