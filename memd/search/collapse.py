"""One note, one place in a result list: the chunks of a note that a search found are
folded into its best one, which counts the others (``more_chunks``).

Overlapping chunks of a long note, or several sections of it that hold the query's words,
would otherwise fill a short result list with one file. A request with ``all_chunks``
keeps every chunk (a caller that wants each matching section).
"""

from __future__ import annotations

from memd.search.ranking import Candidate


def one_per_note(cands: list[Candidate], min_score: float) -> list[Candidate]:
    """Each note's best candidate by relevance (the first in the note on a tie), with
    ``more_chunks`` the number of its other chunks at or above ``min_score``."""
    best: dict[tuple, Candidate] = {}
    others: dict[tuple, int] = {}
    for c in sorted(cands, key=lambda c: (-c.relevance, c.hit.start_line, c.hit.chunk_id)):
        note = (c.hit.host, c.hit.workspace, c.hit.path)
        if note not in best:
            best[note] = c
            others[note] = 0
        elif round(c.relevance, 4) >= min_score:
            others[note] += 1
    for note, c in best.items():
        c.more_chunks = others[note]
    return list(best.values())
