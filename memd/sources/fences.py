"""Fenced code found by a scan of the lines, for readers that only need to skip code
(tags, statements, a file's end), and the lines of a text that hold a mark.

Both look only at the lines that may matter: found by ``str.find`` over the joined text,
so the lines with nothing to look at cost no step of Python.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"(`{3,}|~{3,})")
_FENCE_LEAD = " \t>-*+0123456789.)"  # before a fence: indent, a quote's or a list item's mark


def fenced_lines(lines: list[str], text: str | None = None) -> set[int]:
    """0-based numbers of the lines of fenced code (the fences too), by a scan of the
    lines: a fence opens with three or more backticks or tildes (indented, in a list item
    or a quote) and closes with at least as many of the same. A tenth of a parse's time,
    for a reader that only needs to skip code (``markdown.code_lines`` for indented code
    too). ``text``: the lines joined by ``"\\n"``, when the caller has it."""
    out: set[int] = set()
    fence, opened = "", 0
    # Only a line holding three backticks or tildes may open or close a fence.
    for n in lines_holding("\n".join(lines) if text is None else text, "```", "~~~"):
        line = lines[n]
        if fence:
            if fence in line:  # what may close it (most lines of code do not)
                bare = line.lstrip(_FENCE_LEAD)
                if bare.startswith(fence) and not bare[len(fence) :].strip(fence[0]).strip():
                    out.update(range(opened, n + 1))
                    fence = ""
        elif m := _FENCE.match(line.lstrip(_FENCE_LEAD)):
            fence, opened = m.group(1), n
    if fence:
        out.update(range(opened, len(lines)))
    return out


def lines_holding(text: str, *marks: str) -> list[int]:
    """0-based numbers, in order, of the lines of ``text`` (split on ``"\\n"``) that hold
    any of ``marks`` (none of which holds a ``"\\n"``)."""
    found: set[int] = set()
    for mark in marks:
        line, counted = 0, 0  # ``line``: how many "\n" text[:counted] holds
        pos = text.find(mark)
        while pos >= 0:
            line += text.count("\n", counted, pos)
            found.add(line)
            end = text.find("\n", pos)
            if end < 0:
                break
            line, counted = line + 1, end + 1
            pos = text.find(mark, counted)
    return sorted(found)
