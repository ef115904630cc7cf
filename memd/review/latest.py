"""What each superseded statement says now: an update's chain followed to its end."""

from __future__ import annotations

from collections.abc import Sequence

from memd.review.updates import Update


def current(updates: Sequence[Update]) -> dict[tuple[str, int], Update]:
    """Each superseded statement (path, line) with the update that replaced it last: a
    chain A -> B -> C names C for A too."""
    by_older = {(u.older.path, u.older.line): u for u in updates}
    out = {}
    for key, u in by_older.items():
        seen = {key}
        last = u
        while (nxt := by_older.get((last.newer.path, last.newer.line))) is not None:
            if (nxt.older.path, nxt.older.line) in seen or len(seen) > 50:
                break
            seen.add((nxt.older.path, nxt.older.line))
            last = nxt
        if last is not u:
            if last.now == u.was:
                continue  # changed and changed back: what it says holds again
            last = Update(u.older, last.newer, u.kind, u.was, last.now,
                          u.likely or last.likely, min(u.score, last.score),
                          u.confirmed and last.confirmed)  # fmt: skip
        out[key] = last
    return out
