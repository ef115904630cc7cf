"""What a later note replaced, as the session start shows it: ``old → now: new (cite)``,
so an agent is never told an old value as current (``memd.review.currency`` finds it)."""

from __future__ import annotations

from memd.agent.view import MemoryView
from memd.review.statements import Statement
from memd.store.rows import Supersession, lines_digest

Replaced = dict[tuple[str, int], Supersession]


def replaced_lines(view: MemoryView, paths: list[str]) -> Replaced:
    """What later notes replaced in the notes at ``paths``, by (path, first line) of the
    older statement, where its lines still say what was read (a file edited since the
    index last looked is read again)."""
    rows = view.superseded(paths)
    lines: dict[str, list[str]] = {}
    out: Replaced = {}
    for r in rows:
        if r.path not in lines:
            try:
                text = (view.root / r.path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            lines[r.path] = text.splitlines()
        if lines_digest(lines[r.path][r.start_line - 1 : r.end_line]) == r.digest:
            out[(r.path, r.start_line)] = r
    return out


def now_said(s: Statement, replaced: Replaced) -> str:
    """`` → now: …`` when a later note replaced ``s``: the agent is never told an old value
    as current."""
    r = replaced.get((s.path, s.line))
    if r is None or r.end_line != s.last:
        return ""
    how = ", likely" if r.likely else ""
    return f" → now: {r.now} ({r.by}{how})"
