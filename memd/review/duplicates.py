"""Duplicates: lines said twice where one is enough (within MEMORY.md, or a key memd
stores saying what a person's line says)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memd.review.statements import Statement, content_words

_NEAR = 0.8  # share of content words two lines share (both ways) to be duplicates


@dataclass
class Duplicate:
    """Two lines that say the same; ``extra`` is the one applying removes (a key line)."""

    kept: Statement
    extra: Statement


def duplicates(core: Sequence[Statement], keys: Sequence[Statement]) -> list[Duplicate]:
    """Near-identical lines within MEMORY.md, and keyed memories saying one thing twice."""
    found: list[Duplicate] = []
    seen: list[tuple[Statement, frozenset[str]]] = []
    pool = [*core, *(k for k in keys if k not in core)]
    for s in pool:
        words = frozenset(content_words(s.text if s.key is None else f"{s.key} {s.text}"))
        if len(words) < 3:
            continue
        for other, theirs in seen:
            shared = len(words & theirs)
            if shared >= _NEAR * len(words) and shared >= _NEAR * len(theirs):
                # Keep the hand-written line, or the first key: the extra is a key if any.
                kept, extra = (other, s) if s.key is not None or other.key is None else (s, other)
                found.append(Duplicate(kept, extra))
                break
        else:
            seen.append((s, words))
    return found
