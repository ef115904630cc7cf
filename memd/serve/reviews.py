"""One workspace's daily review inside the daemon.

At ``review.at`` local time (``flush.timezone``'s when set) a review runs in a thread and
its report is kept in the state folder. A run the daemon missed (it was not running, the
machine slept) is made up soon after the first index pass, as cron's anacron would.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable

from memd.config import Config
from memd.errors import MemdError
from memd.log import get_logger
from memd.memory import Memory
from memd.serve.watcher import wait_event

log = get_logger()

_CHECK_S = 60.0  # the clock is looked at this often (a laptop sleeps, a zone changes)
_HOLD_S = 30 * 60.0  # a due review waits for the vector back-fill at most this long


def last_due(now: dt.datetime, at: str) -> dt.datetime:
    """The latest time of day ``at`` (HH:MM) at or before ``now``, in ``now``'s zone."""
    hour, minute = map(int, at.split(":"))
    today = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return today if today <= now else today - dt.timedelta(days=1)


class ReviewSchedule:
    """Runs the review when due; ``info()`` is what ``status`` shows of it."""

    def __init__(
        self,
        memory: Memory,
        config: Config,
        stop: asyncio.Event,
        ready: asyncio.Event,
        embedding: Callable[[], bool] = lambda: False,
    ) -> None:
        self.memory, self.config, self.stop, self.ready = memory, config, stop, ready
        self.embedding = embedding  # whether the vector back-fill is under way
        self.state = "waiting for the first index pass"
        self._held_since: float | None = None

    def info(self) -> dict:
        now = self.config.flush.now()
        following = last_due(now, self.config.review.at) + dt.timedelta(days=1)
        kept = self.memory.reviewer.waiting() or {"waiting": 0, "reviewed_at": None}
        return {**kept, "next_at": following.isoformat(timespec="minutes"), "state": self.state}

    async def run(self) -> None:
        await self.ready.wait()
        self.state = "idle"
        while not self.stop.is_set():
            if self._due() and not self._held():
                self.state = "reviewing"
                try:
                    await asyncio.to_thread(self.memory.reviewer.run)
                    self.state = "idle"
                except MemdError as exc:  # a workspace gone meanwhile: try at the next check
                    log.warning("review_failed", workspace=self.memory.workspace.name,
                                error=str(exc))  # fmt: skip
                    self.state = f"failed: {exc}"
            await wait_event(self.stop, _CHECK_S)

    def _held(self) -> bool:
        """A review with the local model checks its best candidates by meaning on the same
        cores the vector back-fill uses (17 s of CPU the first time): while the
        back-fill runs it waits, for at most ``_HOLD_S``."""
        if self.memory.embedder.provider != "local" or not self.embedding():
            self._held_since = None
            return False
        now = time.monotonic()
        if self._held_since is None:
            self._held_since = now
        if now - self._held_since >= _HOLD_S:
            return False
        self.state = "waiting for the embedding back-fill"
        return True

    def _due(self) -> bool:
        kept = self.memory.reviewer.waiting()
        if kept is None:
            return True
        done = dt.datetime.fromisoformat(kept["reviewed_at"].replace("Z", "+00:00"))
        return done < last_due(self.config.flush.now(), self.config.review.at)
