"""Background tasks that outlive their own faults.

A daemon runs for months: a loop that raises (a bug, an error nobody foresaw) is logged
with its traceback and started again after a pause, and what status shows of it says so
meanwhile, instead of the task ending in silence.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from memd.log import get_logger
from memd.serve.watcher import wait_event

log = get_logger()

_PAUSE_MIN_S, _PAUSE_MAX_S = 1.0, 60.0
_HEALTHY_S = 300.0  # a run this long resets the pause: a rare fault restarts at once


@dataclass
class Supervised:
    """What a supervised task has been through (for status)."""

    name: str
    crashes: int = 0
    last_error: str | None = None
    restarting: bool = False


async def supervise(
    name: str,
    start: Callable[[], Awaitable[None]],
    stop: asyncio.Event,
    record: Supervised | None = None,
) -> None:
    """Run ``start()`` until ``stop`` is set; an exception is logged and the task started
    again after a pause that doubles up to a minute. Cancellation ends it."""
    record = record or Supervised(name)
    pause = 0.0
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        began = loop.time()
        try:
            await start()
            return  # it ended by itself: it saw ``stop``
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any fault: the point is to outlive it
            if loop.time() - began >= _HEALTHY_S:
                pause = 0.0
            pause = min(max(pause * 2, _PAUSE_MIN_S), _PAUSE_MAX_S)
            record.crashes += 1
            record.last_error = f"{type(exc).__name__}: {exc}"
            log.error("task_crashed", task=name, error=record.last_error, restart_in_s=pause,
                      crashes=record.crashes, traceback=traceback.format_exc())  # fmt: skip
            record.restarting = True
            await wait_event(stop, pause)
            record.restarting = False
