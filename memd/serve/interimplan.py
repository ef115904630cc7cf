"""When a workspace's back-fill makes its interim tier (``memd.index.interim``), and the
tier's hand-over from one runner to the next on a reload that keeps the model.

A back-fill of ``INTERIM_MIN`` chunks or more gets the tier once the full model has given
the newest week its vectors, or after ``INTERIM_AFTER_S`` of it at most: the tiers' order
is decided, not raced. A smaller back-fill ends soon enough without it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from memd.config import Config, Embeddings
from memd.index.backfill import LARGE as INTERIM_MIN
from memd.index.index import Index

INTERIM_AFTER_S = 60.0
_MADE = float("inf")  # the tier is made (or being made) for this back-fill


class InterimPlan:
    """The interim tier's schedule for one runner's index."""

    def __init__(self, db: Index, settings: Embeddings) -> None:
        self.db = db
        self.settings = settings
        self.since: float | None = None  # when the full model began this back-fill
        self.stop = threading.Event()  # set when the runner closes: the tier stops

    def due(self, pending: int) -> bool:
        """Whether the back-fill now makes the interim tier (once); lets the tier go when
        the full model has reached every chunk."""
        if not pending:
            self.since = self.db.interim = None
            return False
        if not self.settings.interim or pending < INTERIM_MIN or self.since == _MADE:
            return False
        now = time.monotonic()
        self.since = self.since or now
        if now - self.since < INTERIM_AFTER_S:
            recent = self.db.recent_coverage()  # the newest notes' full vectors first
            if recent["full"] < recent["chunks"]:
                return False
        self.since = _MADE
        return True

    def hand_over(self) -> tuple:
        """The tier (made or being made) and its back-fill's clock, for the runner that
        replaces this one on a reload that keeps the model: it goes on being made, and
        closing this runner no longer stops it (``take_over``)."""
        state = (self.db.interim, self.since, self.stop)
        self.stop = threading.Event()
        return state

    def take_over(self, state: tuple) -> None:
        """Serve and finish the tier of the runner this one replaces."""
        self.db.interim, self.since, self.stop = state


def hand_over(runners: Mapping[str, Any], old: Config, new: Config) -> dict[str, tuple]:
    """The interim tiers of ``runners`` that go on under ``new`` (a reload that keeps the
    model): those of workspaces with the same files and the same chunks."""
    names = {ws.name for ws in new.workspaces}
    return {
        name: runner.interim.hand_over()
        for name, runner in runners.items()
        if name in names
        and new.chunking == old.chunking
        and new.workspace(name) == old.workspace(name)
    }
