"""Keep the C heap from holding on to memory the daemon has freed (glibc only).

Python's objects live in its own arenas, but numpy's arrays, SQLite's pages and the local
model's buffers come from malloc, which keeps freed pages in per-thread arenas; over weeks
of searches on many threads that counts in RSS as if still used.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes

_M_ARENA_MAX = -8  # glibc's mallopt parameter
TRIM_EVERY_S = 60.0


def limit_arenas(count: int = 2) -> None:
    """At most ``count`` malloc arenas for all threads: the read, write and background pools'
    threads share them instead of each keeping its own free pages."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, count)


def trim() -> None:
    """Hand the heap's free pages back to the system: what a freed model's engine and a
    dropped matrix left in the allocator would otherwise count in RSS for good."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


async def trim_periodically() -> None:
    """``trim`` once a minute, off the loop (it walks the arenas)."""
    while True:
        await asyncio.sleep(TRIM_EVERY_S)
        await asyncio.to_thread(trim)
