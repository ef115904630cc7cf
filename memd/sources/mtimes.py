"""When files' mtimes say nothing of their age: written together by a git checkout, a copy
or a sync, every note has (nearly) the same one, and "newest first" would be path order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

WINDOW_S = 600.0  # mtimes this close (with the windows either side) were written together


def written_together(modified: Iterable[float]) -> tuple[float, float] | None:
    """The span of the mtimes written together, when at least half the files share one
    ``WINDOW_S`` window (with its neighbours, so a checkout across a boundary counts once);
    None when mtimes order the files."""
    windows = Counter(int(m // WINDOW_S) for m in modified)
    total = sum(windows.values())
    if total < 2:
        return None
    top, _ = windows.most_common(1)[0]
    together = windows[top - 1] + windows[top] + windows[top + 1]
    if together * 2 < total:
        return None
    return (top - 1) * WINDOW_S, (top + 2) * WINDOW_S
