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
from memd.review.duplicates import duplicates
from memd.review.judge import probability
from memd.review.judge_weights import THRESHOLD
from memd.review.lasting import dialogue
from memd.review.latest import current
from memd.review.promote import Promotion, promotions
from memd.review.statements import Statement, content_words, statements
from memd.review.updates import TURNS, Update, eligible, find_updates
from memd.sources.layout import CORE_NAMES

KINDS = ("promote", "conflict", "duplicate")
SHOWN = 20  # proposals a review shows, best first; the rest are counted
_SAME_FACT = 0.7  # share of the shorter's content words: two promotions of one fact
DISPUTED = 0.5  # of the update judge's bar: a later line this likely to update one disputes it


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
    """Every proposal for ``notes``, best first (a report shows ``SHOWN``); ``since``
    (YYYY-MM-DD) keeps those whose newest cited line is a daily note from that day on."""
    core: list[Statement] = []
    daily: list[Statement] = []
    other: list[Statement] = []
    for note in notes:
        found = statements(note.path, note.text, note.date)
        (core if note.core else daily if note.date else other).extend(found)
    out: list[Proposal] = []
    every = [*core, *other, *daily]
    pairs: list | None = [] if "promote" in kinds else None  # every pair read closely
    latest = (current(find_updates(every, _when, collect=pairs))
              if {"promote", "conflict"} & set(kinds) else {})  # fmt: skip
    if "promote" in kinds:
        # A statement a later one replaced is never promoted; one that replaced a line of
        # MEMORY.md is proposed as that update instead. Nor is one a later line may
        # update or dispute: a pair the update judge finds half as likely as it needs is
        # too weak to say "replaced" but enough to say "not this one, not yet".
        replaced = set(latest) | {(o.path, o.line) for o, _, f in pairs or ()
                                  if probability(f) >= DISPUTED * THRESHOLD}  # fmt: skip
        fixing = {(u.newer.path, u.newer.line) for u in latest.values() if _curated(u.older)}
        kept = [
            s for s in daily
            if eligible(s) and (s.path, s.line) not in replaced and (s.path, s.line) not in fixing
        ]  # fmt: skip
        found = promotions(kept, core, dialogue(daily))
        # ``since`` keeps what was said since; the days it was said on count them all.
        found = [p for p in found if since is None or (p.newest.date or "") >= since]
        for p in _one_per_fact(found):
            s = p.newest
            why = ", ".join(p.why) or "durable wording"
            out.append(_proposal("promote", f"{why}; not in MEMORY.md", p.score, p.said,
                                 f"{_worded(s)} ({s.citation})", "append"))  # fmt: skip
    if "conflict" in kinds:
        # What a person acts on: a line of MEMORY.md (or a key) that a later note says has
        # changed ("now", "switched", "was"), proposed once per current statement. Found
        # without a change word, or between two daily notes, an update only labels search
        # results and the session start: as a proposal it was mostly wrong (review bench).
        for u in latest.values():
            where = (u.newer.path, u.newer.line)
            if since is not None and (u.newer.date or "") < since:
                continue
            if where not in latest and _curated(u.older) and not u.likely:
                out.append(_update(u))
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
    return out


def _when(s: Statement) -> str:
    """A review's order: MEMORY.md and undated notes first, a daily note by its date."""
    return s.date or ""


def _curated(s: Statement) -> bool:
    """A line a person keeps current by hand: MEMORY.md's, or a key memd stores."""
    return s.date is None and (s.key is not None or s.path in CORE_NAMES)


def _update(u: Update) -> Proposal:
    """MEMORY.md (or a key) says what a later note changed: the newer line, to append."""
    how = "likely (no change word)" if u.likely else "stated"
    if _reads_as_values(u):
        reason = (f"update, {how}: {_where(u.older)} says {u.was!r}, {_where(u.newer)} says "
                  f"{u.now!r}")  # fmt: skip
    else:  # the words that differ are no value a person would name: the lines themselves
        reason = (f"update, {how}: {_where(u.older)} says {_brief(u.older)!r}, "
                  f"{_where(u.newer)} says {_brief(u.newer)!r}")  # fmt: skip
    # MEMORY.md (or a key) holding the old value is the one a person must correct.
    score = (0.75 if u.likely else 0.9) if _curated(u.older) else (0.6 if u.likely else 0.7)
    if u.older.key is not None:
        value = u.now if u.older.text.strip(" .").lower() == u.was.lower() else u.newer.text
        return _proposal("conflict", f"key {u.older.key!r}: {reason}", score,
                         [u.older, u.newer], value, "store", key=u.older.key,
                         newer=u.newer.citation)  # fmt: skip
    text = f"{_worded(u.newer)} ({u.newer.citation}; was: {u.older.citation})"
    return _proposal("conflict", reason, score, [u.older, u.newer], text, "append",
                     newer=u.newer.citation)  # fmt: skip


def _worded(s: Statement) -> str:
    """The statement as its note words it, a bold label kept ("**Rule:** ...")."""
    if s.speaker and s.speaker.split()[0].lower() not in TURNS:
        return f"**{s.speaker}:** {s.text}"
    return s.text


def _one_per_fact(found: list[Promotion]) -> list[Promotion]:
    """The best promotion of each fact: one whose words another better one mostly holds
    is the same fact said again."""
    kept: list[tuple[Promotion, frozenset[str]]] = []
    for p in found:  # best first
        words = frozenset(content_words(p.newest.text))
        if any(len(words & theirs) >= _SAME_FACT * min(len(words), len(theirs))
               for _, theirs in kept):  # fmt: skip
            continue
        kept.append((p, words))
    return [p for p, _ in kept]


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


# Kinds read by their shape (a day, a time, a date, a number): what changed is one.
_SHAPED = frozenset(("day", "time", "date", "num"))
_BRIEF = 70  # characters of a line a reason quotes


def _reads_as_values(u: Update) -> bool:
    """Whether ``was`` and ``now`` name what changed as a person would: values of a shape,
    or on each side one name or word run as its line writes it, not the line's label
    ("Model: ..."). Else the reason quotes the lines ("'handles, service'" says nothing)."""
    if u.kind in _SHAPED:
        return True
    for part, s in ((u.was, u.older), (u.now, u.newer)):
        label = s.text.split(":", 1)[0].strip(" *").lower() if ":" in s.text else None
        if not part or ", " in part or part.lower() == label:
            return False
        if part.lower() not in s.text.lower():
            return False
    return True


def _brief(s: Statement) -> str:
    text = " ".join(s.text.split())
    return text if len(text) <= _BRIEF else text[: _BRIEF - 1].rstrip() + "…"
