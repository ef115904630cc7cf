"""What a review tells search: the statements a later one replaced.

Each conflict's newest statement supersedes the earlier ones it contradicts. The review
hands these to the index (``Journal.supersede``, on the writer), where search reads them:
a result holding a superseded statement ranks below what replaced it and says by what.
Each row carries a digest of the superseded lines' words, so an edit that moves or
changes those lines never marks whatever comes to stand there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memd.review.conflicts import Conflict
from memd.store.rows import Supersession, lines_digest


def supersessions(found: Sequence[Conflict], texts: Mapping[str, str]) -> list[Supersession]:
    """One row per superseded statement of ``found`` (``texts``: each note's text by path,
    as the review read it); a statement two conflicts supersede keeps the first."""
    lines: dict[str, list[str]] = {}
    rows: dict[tuple[str, int, int], Supersession] = {}
    for c in found:
        for s in c.superseded:
            if s.path not in texts:
                continue
            start, end = s.line, s.last
            if (s.path, start, end) in rows:
                continue
            if s.path not in lines:
                lines[s.path] = texts[s.path].splitlines()
            said = lines[s.path][start - 1 : end]
            if said:
                rows[(s.path, start, end)] = Supersession(
                    s.path, start, end, lines_digest(said), c.newer.citation
                )
    return list(rows.values())
