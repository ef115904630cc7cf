"""One line of ``memd doctor``: what was checked, how it went, and what to do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """``state`` is ok, warn (works, but not as well as it could) or fail (to fix)."""

    name: str
    state: str  # ok | warn | fail
    detail: str
    fix: str = ""
