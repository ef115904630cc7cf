"""One note, one place in a result list: chunks of a note that a search found fold into the
best of them, which counts the others (``more_chunks``).

A vault's note (an extra root's, or a workspace read as a vault) is one topic: all its
chunks fold into one place, so a long note whose every section holds the query's words
does not fill a short list. MEMORY.md, daily notes, memory/ files and transcripts hold many
separate entries, each an answer of its own: only chunks that overlap a better one (the
same lines twice, from a long section cut with overlap) fold there. A request with
``all_chunks`` keeps every chunk.
"""

from __future__ import annotations

from memd.search.ranking import Candidate

_WHOLE_NOTE_SOURCES = ("extra",)  # notes whose chunks all fold into one place


def one_per_note(cands: list[Candidate], min_score: float) -> list[Candidate]:
    """The candidates left when each folds into a better one of its note (by relevance;
    the earlier chunk on a tie) that it may fold into, with ``more_chunks`` on each kept
    one: how many folded into it at or above ``min_score``."""
    kept: dict[tuple, list[Candidate]] = {}
    out = []
    for c in sorted(cands, key=lambda c: (-c.relevance, c.hit.start_line, c.hit.chunk_id)):
        c.more_chunks = 0
        hit = c.hit
        note = kept.setdefault((hit.host, hit.workspace, hit.path), [])
        whole = hit.source in _WHOLE_NOTE_SOURCES
        into = next((k for k in note if whole or _overlap(k, c)), None)
        if into is None:
            note.append(c)
            out.append(c)
        elif round(c.relevance, 4) >= min_score:
            into.more_chunks += 1
    return out


def _overlap(a: Candidate, b: Candidate) -> bool:
    return a.hit.start_line <= b.hit.end_line and b.hit.start_line <= a.hit.end_line
