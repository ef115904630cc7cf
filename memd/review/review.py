"""A review of one workspace: its notes read as statements, then proposals made of them.

Every proposal carries a stable id, a hash of its kind and of the text of the lines it
cites: the same proposal has the same id after a restart, and a dismissed one comes back
only when one of those lines changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from memd.records import Proposal
from memd.review.conflicts import conflicts, duplicates
from memd.review.promote import promotions
from memd.review.statements import Statement, statements
from memd.review.supersede import supersessions
from memd.store.rows import Supersession

KINDS = ("promote", "conflict", "duplicate")


@dataclass(frozen=True)
class Note:
    """A memory file as the review reads it."""

    path: str
    text: str
    date: str | None  # a daily note's
    core: bool  # MEMORY.md


def review(
    notes: Sequence[Note],
    since: str | None = None,
    kinds: Sequence[str] = KINDS,
) -> list[Proposal]:
    """Every proposal for ``notes``, best first; ``since`` (YYYY-MM-DD) keeps those whose
    newest cited line is a daily note from that day on."""
    return review_all(notes, since, kinds)[0]


def review_all(
    notes: Sequence[Note],
    since: str | None = None,
    kinds: Sequence[str] = KINDS,
) -> tuple[list[Proposal], list[Supersession] | None]:
    """``review``'s proposals, and every statement a later one superseded (in all the
    notes, whatever ``since``; None when ``kinds`` did not look for conflicts)."""
    core: list[Statement] = []
    daily: list[Statement] = []
    other: list[Statement] = []
    for note in notes:
        found = statements(note.path, note.text, note.date)
        (core if note.core else daily if note.date else other).extend(found)
    out: list[Proposal] = []
    found = conflicts([*core, *other, *daily]) if {"promote", "conflict"} & set(kinds) else []
    if "promote" in kinds:
        # A statement a later one contradicts is not promoted, nor the later one: its
        # conflict proposes it, naming what it replaces.
        taken = {(s.path, s.line) for c in found for s in (*c.superseded, c.newer)}
        recent = [
            s for s in daily
            if (since is None or (s.date or "") >= since) and (s.path, s.line) not in taken
        ]  # fmt: skip
        for p in promotions(recent, core):
            s = p.newest
            why = ", ".join(p.why) or "durable wording"
            out.append(
                _proposal(
                    "promote",
                    f"{why}; not in MEMORY.md",
                    p.score,
                    p.said,
                    f"{s.text} ({s.citation})",
                    "append",
                )
            )
    if "conflict" in kinds:
        for c in found:
            if since is not None and (c.newer.date or "") < since:
                continue
            newer = c.newer.citation
            if c.key is not None:
                reason = (f"key {c.key.key!r} says {c.key.text!r}; {_where(c.newer)} says "
                          f"{c.now.value!r}")  # fmt: skip
                out.append(_proposal("conflict", reason, 0.9, [c.key, c.newer], c.now.value,
                                     "store", key=c.key.key, newer=newer))  # fmt: skip
                continue
            reason = (f"{c.label}: {c.was.value!r} ({_where(c.older)}) then {c.now.value!r} "
                      f"({_where(c.newer)})")  # fmt: skip
            if c.changes > 1:
                reason += f"; changed {c.changes} times"
            text = f"{c.newer.text} ({newer}; was: {c.older.citation})"
            out.append(_proposal("conflict", reason, 0.8, [c.older, c.newer], text, "append",
                                 newer=newer))  # fmt: skip
    if "duplicate" in kinds and since is None:
        keys = [s for s in (*core, *other, *daily) if s.key is not None]
        for d in duplicates(core, keys):
            said = [d.kept, d.extra]  # the extra last: a forget removes that one
            if d.extra.key is not None:
                reason = f"key {d.extra.key!r} says what {_where(d.kept)} says"
                out.append(_proposal("duplicate", reason, 0.7, said, d.extra.text, "forget",
                                     key=d.extra.key))  # fmt: skip
            else:
                reason = f"{_where(d.extra)} says what {_where(d.kept)} says; merge by hand"
                out.append(_proposal("duplicate", reason, 0.5, said, d.extra.text, "none"))
    order = {k: n for n, k in enumerate(KINDS)}
    out.sort(key=lambda p: (-p.score, order[p.kind], p.citations))
    if not {"promote", "conflict"} & set(kinds):
        return out, None
    return out, supersessions(found, {n.path: n.text for n in notes})


def proposal_id(kind: str, cited: Sequence[Statement]) -> str:
    """A hash of what a proposal rests on: its kind and each cited line's text."""
    h = hashlib.sha256(kind.encode())
    for s in cited:
        h.update(f"\0{s.path}\0{s.key or ''}\0{' '.join(s.text.split())}".encode())
    return h.hexdigest()[:12]


def _proposal(
    kind: str,
    reason: str,
    score: float,
    cited: Sequence[Statement],
    text: str,
    action: str,
    key: str | None = None,
    newer: str | None = None,
) -> Proposal:
    citations = [s.citation for s in cited[-5:]]
    return Proposal(proposal_id(kind, cited), kind, reason, score, citations, text, action,
                    newer, key)  # fmt: skip


def _where(s: Statement) -> str:
    return s.date or s.path
