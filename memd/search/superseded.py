"""Newer facts first, as the review knows them: a result holding a statement a later one
replaced ranks lower and names what replaced it (``superseded_by``).

The review (a stage above search) keeps what it found in the store; this reads it for the
candidates of a query. A row counts only while the chunk's lines still say what was
reviewed (their digest): an edit that moves or rewrites them never marks another line.
A chunk that also holds the superseding statement is not marked: it says both.

A marked result keeps ``SUPERSEDED`` of its score; when the chunk holding what replaced it
answers the same question nearly as well (``NEAR`` of the lowered score, or better), the
marked one goes just below it. Measured with bench/superseded_bench.py (README).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memd.search.ranking import Candidate
from memd.store.base import Store
from memd.store.rows import Hit, Supersession, lines_digest

SUPERSEDED = 0.8
NEAR = 0.5
_CITATION = re.compile(r"^(?P<path>.+)#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")


def mark_superseded(store: Store, cands: Sequence[Candidate]) -> None:
    """Set ``superseded_by`` on the candidates that hold a superseded statement."""
    if not cands:
        return
    found = store.superseded_in([c.hit.chunk_id for c in cands])
    for c in cands:
        for s in found.get(c.hit.chunk_id, ()):
            if still_says(c.hit, s) and not _holds(c.hit, s.by):
                c.superseded_by = s.by
                break


def demote(cands: list[Candidate]) -> list[Candidate]:
    """Lower the scores of marked candidates (in place; returns them): by ``SUPERSEDED``,
    and below their replacement among ``cands`` when it is near."""
    marked = [c for c in cands if c.superseded_by is not None]
    for c in marked:
        c.score *= SUPERSEDED
    for c in marked:
        by = c.superseded_by or ""
        newer = max((o.score for o in cands if o is not c and _holds(o.hit, by)), default=None)
        if newer is not None and NEAR * c.score <= newer < c.score:
            c.score = max(newer - 1e-4, 0.0)
    return cands


def still_says(hit: Hit, s: Supersession) -> bool:
    """Whether the chunk's lines at ``s`` say what the review read there."""
    lines = hit.text.split("\n")
    said = lines[s.start_line - hit.start_line : s.end_line - hit.start_line + 1]
    return len(said) == s.end_line - s.start_line + 1 and lines_digest(said) == s.digest


def _holds(hit: Hit, citation: str) -> bool:
    """Whether the chunk holds the first line of the statement ``citation`` names."""
    m = _CITATION.match(citation)
    return bool(m) and m["path"] == hit.path and hit.start_line <= int(m["start"]) <= hit.end_line
