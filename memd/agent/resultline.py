"""A search result as the model is shown it: on one line with its citation, a table or code
block kept whole under the text that introduces it, or left out with that text."""

from __future__ import annotations

from memd.records import SearchResult
from memd.review.statements import unmarked


def result_line(r: SearchResult) -> str:
    """A result on one line with its citation, and what replaced it if a later note did."""
    if r.superseded_by:
        how = ", likely" if r.superseded == "likely" else ""
        return f"{flat(r.snippet)} ({r.citation}) → now: {r.now or ''} ({r.superseded_by}{how})"
    return f"{flat(r.snippet)} ({r.citation})"


def flat(snippet: str) -> str:
    """A result's text on one line, its headings left out (the citation says where); a
    snippet cut short loses its last, partial line rather than end mid-item. A table or
    a code block keeps its rows, each on a line of its own under the text before it; one
    the snippet cut off is left out whole, with the line that introduced it."""
    rows = snippet.splitlines()
    if snippet.endswith("…") and len(rows) > 1:
        rows = rows[:-1]
    pieces: list[tuple[str, str]] = []  # ("text" | "block", line)
    fence = None
    for line in rows:
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            pieces.append(("block", line.rstrip()))
        elif fence is not None:
            pieces.append(("block", line.rstrip()))
            if stripped.startswith(fence):
                fence = None
        elif stripped.startswith("|"):
            pieces.append(("block", line.rstrip()))
        elif stripped and not stripped.startswith("#"):
            pieces.append(("text", unmarked(line).strip()))
    if fence is not None:  # cut inside a code block: that block and its lead-in go
        opened = max(n for n, (kind, line) in enumerate(pieces)
                     if kind == "block" and line.strip().startswith(fence))  # fmt: skip
        if opened > 0 and pieces[opened - 1][0] == "text":
            opened -= 1
        pieces = pieces[:opened]
    out: list[str] = []
    for kind, line in pieces:
        if kind == "text" and out and not out[-1].startswith(("|", "```", "~~~", " ")):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return "\n".join(out)
