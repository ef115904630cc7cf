"""One note, one place in a result list: chunks of a note that a search found fold into the
best of them, which counts the others (``more_chunks``).

A vault's note (an extra root's, or a workspace read as a vault) is one topic: all its
chunks fold into one place, so a long note whose every section holds the query's words
does not fill a short list. MEMORY.md, daily notes, memory/ files and transcripts hold many
separate entries, each an answer of its own, and a long section is cut into chunks that
repeat a few lines of the one before: no line is shown twice. A chunk whose every line a
better one of its note already shows folds into it; one that overlaps a better one keeps
only the lines it adds (folding those too hid answers: a neighbour repeats a few lines and
holds others of its own). A request with ``all_chunks`` keeps every chunk.
"""

from __future__ import annotations

import dataclasses

from memd.search.ranking import Candidate
from memd.store.rows import Hit

_WHOLE_NOTE_SOURCES = ("extra",)  # notes whose chunks all fold into one place


def one_per_note(cands: list[Candidate], min_score: float) -> list[Candidate]:
    """The candidates left when each folds into a better one of its note (by relevance;
    the earlier chunk on a tie) or is cut to the lines no better one shows, with
    ``more_chunks`` on each kept one: how many folded into it at or above ``min_score``."""
    kept: dict[tuple, list[Candidate]] = {}
    out = []
    for c in sorted(cands, key=lambda c: (-c.relevance, c.hit.start_line, c.hit.chunk_id)):
        c.more_chunks = 0
        hit = c.hit
        note = kept.setdefault((hit.host, hit.workspace, hit.path), [])
        into = None
        if hit.source in _WHOLE_NOTE_SOURCES:
            into = note[0] if note else None
        elif any(_shares_lines(k.hit, hit) for k in note):
            own = _own_lines(hit, [k.hit for k in note])
            if own is None:
                into = max(note, key=lambda k: _shared(k.hit, hit))
            else:
                c.hit = own
        if into is None:
            note.append(c)
            out.append(c)
        elif round(c.relevance, 4) >= min_score:
            into.more_chunks += 1
    return out


def _own_lines(hit: Hit, shown: list[Hit]) -> Hit | None:
    """``hit`` cut to its longest run of lines none of ``shown`` cites (without blank lines
    at its ends), or None when no line of text is left (or its text is not its lines,
    one for one)."""
    lines = hit.text.split("\n")
    if len(lines) != hit.end_line - hit.start_line + 1:
        return None
    free = [
        not any(s.start_line <= n <= s.end_line for s in shown)
        for n in range(hit.start_line, hit.end_line + 1)
    ]
    best, run = (0, 0), 0
    for i, ok in enumerate([*free, False]):
        if not ok:
            if i - run > best[1] - best[0]:
                best = (run, i)
            run = i + 1
    start, end = best
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start == end:
        return None
    return dataclasses.replace(
        hit,
        start_line=hit.start_line + start,
        end_line=hit.start_line + end - 1,
        text="\n".join(lines[start:end]),
    )


def _shares_lines(a: Hit, b: Hit) -> bool:
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def _shared(a: Hit, b: Hit) -> int:
    return min(a.end_line, b.end_line) - max(a.start_line, b.start_line) + 1
