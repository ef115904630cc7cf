"""Newer facts first: a result that matched on a statement a later one replaced names it
(``superseded_by``, with ``superseded``: "confirmed" when the newer one says it changed
and the older is also the nearest to it in meaning, "stated" when only the first holds,
"likely" when found by subject and value alone) and, where the kind of relation is right
often enough, ranks below what replaced it.

What later notes superseded is kept in the store as notes change
(``memd.review.currency``); this reads it for the candidates of a query. A row counts
only while the chunk's lines still say what was read (their digest), and only where the
question matched on those lines: a chunk that holds one superseded line among others the
question is about is not marked. A chunk that also holds the superseding statement is
not marked: it says both.

A marked result keeps ``SUPERSEDED`` of its score; when the chunk holding what replaced
it answers the same question nearly as well (``NEAR`` of the lowered score, or better),
the marked one goes just below it. A relation lowers a result only once its kind has
been measured right at least ``LOWER_FROM`` of the time on hand-labelled pairs nobody
tuned on (``PRECISION``, from bench/updates_bench.py's report halves: those of the three
sets whose tune halves were read, and two sets by other writers); until then it only
labels: a wrong relation must never bury a correct note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memd.search.ranking import Candidate
from memd.search.timerank import terms
from memd.store.base import Store
from memd.store.rows import Hit, Supersession, lines_digest

SUPERSEDED = 0.8
NEAR = 0.5
LOWER_FROM = 0.9
# Measured precision by kind of relation on the report halves (bench/updates_bench.py
# --near local, every set): "confirmed" 80 right of 88, "stated" 93 of 116, "likely" 73
# of 114.
PRECISION = {"confirmed": 0.909, "stated": 0.80, "likely": 0.64}
_CITATION = re.compile(r"^(?P<path>.+)#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")


def mark_superseded(store: Store, cands: Sequence[Candidate], query: str = "") -> None:
    """Set ``superseded_by`` on the candidates that matched on a superseded statement."""
    if not cands:
        return
    found = store.superseded_in([c.hit.chunk_id for c in cands])
    asked = terms(query)
    for c in cands:
        for s in found.get(c.hit.chunk_id, ()):
            if still_says(c.hit, s) and not _holds(c.hit, s.by) and matched_on(c.hit, s, asked):
                c.superseded_by, c.superseded_how, c.superseded_now = s.by, how(s), s.now or None
                break


def how(s: Supersession) -> str:
    """How the relation was found: "confirmed", "stated" or "likely"."""
    return "likely" if s.likely else "confirmed" if s.confirmed else "stated"


def demote(cands: list[Candidate]) -> list[Candidate]:
    """Lower the scores of marked candidates (in place; returns them): by ``SUPERSEDED``,
    and below their replacement among ``cands`` when it is near."""
    marked = [
        c for c in cands
        if c.superseded_by is not None
        and PRECISION.get(c.superseded_how or "", 0.0) >= LOWER_FROM
    ]  # fmt: skip
    for c in marked:
        c.score *= SUPERSEDED
    for c in marked:
        by = c.superseded_by or ""
        newer = max((o.score for o in cands if o is not c and _holds(o.hit, by)), default=None)
        if newer is not None and NEAR * c.score <= newer < c.score:
            c.score = max(newer - 1e-4, 0.0)
    return cands


def still_says(hit: Hit, s: Supersession) -> bool:
    """Whether the chunk's lines at ``s`` say what was read there."""
    lines = hit.text.split("\n")
    said = lines[s.start_line - hit.start_line : s.end_line - hit.start_line + 1]
    return len(said) == s.end_line - s.start_line + 1 and lines_digest(said) == s.digest


def matched_on(hit: Hit, s: Supersession, asked: set[str]) -> bool:
    """Whether the question matched this chunk on the superseded lines: they hold as many
    of its words as any line of the chunk does (with none of its words anywhere, a match
    by meaning: when they are most of the chunk)."""
    if not asked:
        return True
    lines = hit.text.split("\n")
    inside = range(s.start_line - hit.start_line, s.end_line - hit.start_line + 1)
    scores = [len(asked & terms(line)) for line in lines]
    best = max(scores, default=0)
    if best > 0:
        return max(scores[i] for i in inside) == best
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return 2 * sum(i in inside for i in filled) >= len(filled)


def _holds(hit: Hit, citation: str) -> bool:
    """Whether the chunk holds the first line of the statement ``citation`` names."""
    m = _CITATION.match(citation)
    return bool(m) and m["path"] == hit.path and hit.start_line <= int(m["start"]) <= hit.end_line
