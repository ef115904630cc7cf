"""Conflicts and duplicates: statements that disagree about one subject, and lines said
twice where one is enough.

A subject's statements are taken in time order (MEMORY.md and other undated files first:
a daily note is the newer word); its newest statement is in conflict with the newest
earlier one that disagrees with it (another value, or the same one denied). A keyed
memory that a later note contradicts is such a conflict too, and applying it stores the
newer value under the key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from memd.review.facts import Fact, disagree, facts
from memd.review.reversals import overturned
from memd.review.statements import Statement, content_words

_NEAR = 0.8  # share of content words two lines share (both ways) to be duplicates


@dataclass
class Conflict:
    """The newest statement on a subject and the earlier one it contradicts."""

    label: str
    older: Statement
    newer: Statement
    was: Fact
    now: Fact
    changes: int  # how many times the value changed in all
    superseded: list[Statement]  # every earlier statement the newest contradicts

    @property
    def key(self) -> Statement | None:
        """A keyed memory the newer statement (a note, not a key) contradicts."""
        if self.newer.key is not None:
            return None
        return next((s for s in reversed(self.superseded) if s.key is not None), None)


@dataclass
class Duplicate:
    """Two lines that say the same; ``extra`` is the one applying removes (a key line)."""

    kept: Statement
    extra: Statement


def conflicts(every: Sequence[Statement]) -> list[Conflict]:
    """One conflict per subject whose newest statement disagrees with an earlier one."""
    by_subject: dict[str, list[tuple[Statement, Fact]]] = defaultdict(list)
    for s in every:
        if s.task:  # a task or a question says what is not (yet) so
            continue
        stated = facts(f"{s.key} is {s.text}") if s.key else facts(s.text, s.speaker)
        for fact in stated:
            by_subject[fact.subject].append((s, fact))
    found = []
    for said in by_subject.values():
        if len(said) < 2:
            continue
        said.sort(key=lambda sf: _when(sf[0]))
        newer, now = said[-1]
        earlier = [(s, f) for s, f in said[:-1] if disagree(f, now)]
        if not earlier:
            continue
        older, was = earlier[-1]
        changes = sum(disagree(a, b) for (_, a), (_, b) in pairwise(said))
        gone = [s for s, _ in earlier]
        found.append(Conflict(now.label, older, newer, was, now, max(changes, 1), gone))
    # Reversals ("switched X from A to B", "replaced A with B", "went back to A") name the
    # value left behind: the statement they overturn is found by it, however it is worded.
    taken = {(c.newer.path, c.newer.line) for c in found}
    for o in overturned(sorted(every, key=_when)):
        if (o.newer.path, o.newer.line) in taken:
            continue
        taken.add((o.newer.path, o.newer.line))
        r = o.reversal
        label = r.subject or (f"{o.old} or {r.new}" if r.new else o.old)
        was, now = _fact(label, o.old), _fact(label, r.new or f"no longer {o.old}")
        found.append(Conflict(label, o.older, o.newer, was, now, 1, [o.older]))
    return found


def _when(s: Statement) -> tuple:
    """Time order: undated files and keys first (a daily note is the newer word), then by
    day, file and line."""
    return (s.date or "", s.key is None, s.path, s.line)


def _fact(label: str, value: str) -> Fact:
    words = frozenset(w.lower() for w in value.split())
    return Fact(" ".join(content_words(label)), label, value, words)


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
