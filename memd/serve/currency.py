"""What is current, found again after index passes in a loop of its own: a pass (and so
how soon an edit is searchable) never waits for it, a burst of edits is one refresh, and
a refresh is followed by a rest four times as long as it took, so a vault edited all day
spends at most a fifth of a core on it (5,000 notes: 1.8 s a refresh on a loaded machine,
bench/currency_bench.py)."""

from __future__ import annotations

import asyncio
import time

from memd.memory import Memory
from memd.serve.watcher import wait_event

_REST = 4.0  # times a refresh's own duration


class CurrencyLoop:
    """Refreshes ``memory.currency`` for the files the passes since the last one touched."""

    def __init__(self, memory: Memory, stop: asyncio.Event, ready: asyncio.Event) -> None:
        self.memory, self.stop, self.ready = memory, stop, ready
        self.due = asyncio.Event()
        self._paths: set[str] = set()
        self._all = True  # the first refresh reads every note

    def note(self, paths: set[str] | None) -> None:
        """A pass ended over these absolute paths (None: the whole workspace)."""
        if paths is None:
            self._all = True
        else:
            self._paths |= paths
        self.due.set()

    async def run(self) -> None:
        await self.ready.wait()
        while not self.stop.is_set():
            await wait_event(self.due, 60.0)
            if not self.due.is_set():
                continue
            self.due.clear()
            paths, self._paths = self._paths, set()
            every, self._all = self._all, False
            started = time.monotonic()
            await asyncio.to_thread(self.memory.currency.refresh, None if every else paths)
            if self.memory.currency.pending:
                self.due.set()  # statements wait for their meaning: the next batch after a rest
            await wait_event(self.stop, _REST * (time.monotonic() - started))
