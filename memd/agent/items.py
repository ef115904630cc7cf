"""A note's statements as a session's start shows them: each with what it cannot be shown
without, and what kind of line it is.

A statement (``memd.review.statements``) is one Markdown unit. Shown to a model alone it
can mislead: a nested bullet without the bullet it belongs to, a line ending in a colon
without the code block or table it introduces. ``items`` gives each statement its parent
and its block, and says whether the owner marked it as a rule (``CRITICAL``, ``ALWAYS``,
``NEVER``, a bold sentence, a heading of rules) and whether it is a flushed session turn
rather than something a person wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.review.statements import Statement, statements

# Words an owner writes in capitals to mark what must not be missed, and marks that do the
# same; matched case-sensitively: "never" in a sentence is not a rule.
_EMPHASIS = re.compile(
    r"\b(?:CRITICAL|IMPORTANT|ALWAYS|NEVER|MUST(?:\s+NOT)?|DO\s+NOT|DON'T|REQUIRED|"
    r"MANDATORY|WARNING|NO\s+EXCEPTIONS)\b|[\U0001F6A8\u26A0\u2757\u203C\u26D4]"
)
_RULES_HEADING = re.compile(r"\b(?:rules?|critical|non-negotiables?|must|never|always)\b", re.I)
# A bold sentence is a rule (``**Zero tolerance.**``, ``**Never force-push.**``); a bold
# name before a colon (``**Priya Raman**: backend lead``) is a label.
_BOLD_SENTENCE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\*\*[^*]+?[.!]\*\*")
_ROLE = re.compile(r"^(?:user|assistant|human|ai|claude|agent|bot|system|me)$", re.I)
_TURN = re.compile(r"^(?:asked|answered|user|assistant)\s*:", re.I)
_TRANSCRIPT = re.compile(r"\.jsonl\b|\btranscript\b|\bsession\s+`[^`]+`", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A bold label as its owner wrote it: "**Priya Raman**:", "**Dev Patel:**", "**Zero
# tolerance.**" (shown so, never with a colon moved or added).
_LABEL = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?:\[[ xX]\]\s+)?(\*\*[^*]+\*\*(?:\s*:)?)")


@dataclass(frozen=True)
class Item:
    """A statement as a session's start may show it."""

    statement: Statement
    block: tuple[str, ...] = ()  # the code block or table it introduces, as written
    parent: Item | None = None  # the bullet or the line ending in a colon it belongs to
    emphasis: bool = False  # marked by its owner as a rule
    turn: bool = False  # a session turn flushed from a transcript, not a person's note
    label: str | None = None  # its bold label as written ("**Dev Patel:**")

    @property
    def span(self) -> tuple[str, int, int]:
        """Its file and lines, its block included."""
        s = self.statement
        return s.path, s.line, s.last + (len(self.block) + 1 if self.block else 0)


def items(path: str, text: str, date: str | None) -> list[Item]:
    """The statements of one note as items, in file order."""
    lines = text.splitlines()
    found = statements(path, text, date)
    out: list[Item] = []
    for n, s in enumerate(found):
        raw = lines[s.line - 1]
        parent = _parent(found, out, n, lines)
        emphasis = bool(
            _EMPHASIS.search(s.text)
            or _BOLD_SENTENCE.match(raw)
            or _RULES_HEADING.search(s.heading)
            or (parent is not None and parent.emphasis)  # a rule's own sub-points
        )
        said = f"{s.speaker or ''}: {s.text}" if s.speaker else s.text
        turn = bool(
            (s.speaker and _ROLE.match(s.speaker))
            or _TURN.match(said)
            or _TRANSCRIPT.search(s.text)
        )
        label = (m := _LABEL.match(raw)) and s.speaker and m.group(1)
        out.append(Item(s, _block(lines, s), parent, emphasis, turn, label or None))
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parent(found: list[Statement], made: list[Item], n: int, lines: list[str]) -> Item | None:
    """The item a statement belongs under: the nearest bullet above it indented less (a
    line of its own even when too short to be a statement: ``- Deploy steps:``), or, for a
    list's first level, the paragraph ending in a colon right before the list."""
    s = found[n]
    raw = lines[s.line - 1]
    if not _BULLET.match(raw):
        return None
    indent = _indent(raw)
    starts = {f.line: k for k, f in enumerate(found[:n])}
    gap = False  # a blank line between this list and what is above it
    for at in range(s.line - 2, -1, -1):
        line = lines[at]
        if not line.strip():
            gap = True
            continue
        if line.lstrip().startswith("#") or _FENCE.match(line):
            return None
        if _indent(line) >= indent and _BULLET.match(line):
            continue
        if _indent(line) > indent:
            continue  # a continuation line of an item above
        if _BULLET.match(line):
            if _indent(line) == indent:
                continue
            return _item_at(found, made, starts, lines, at)
        # Not a bullet: the paragraph that opens the list, if it ends in a colon.
        if indent == 0 and not gap and line.rstrip().endswith(":"):
            return _item_at(found, made, starts, lines, at)
        return None
    return None


def _item_at(
    found: list[Statement], made: list[Item], starts: dict[int, int], lines: list[str], at: int
) -> Item | None:
    """The item of the statement holding line ``at`` (0-based), or one made of that line
    alone when it is no statement (too short: ``- Deploy steps:``)."""
    for first, k in starts.items():
        if first - 1 <= at <= found[k].last - 1:
            return made[k]
    text = _BULLET.sub("", lines[at]).strip()
    if not text:
        return None
    path = found[0].path
    return Item(Statement(path, at + 1, found[0].date, "", text))


def _block(lines: list[str], s: Statement) -> tuple[str, ...]:
    """The code block or table right after ``s`` that it introduces (ends in a colon) or
    that is indented under it; () when none."""
    at = s.last  # 0-based: the line after the statement
    if at < len(lines) and not lines[at].strip():
        at += 1
    if at >= len(lines):
        return ()
    first = lines[at]
    under = _indent(first) > _indent(lines[s.line - 1]) and bool(_BULLET.match(lines[s.line - 1]))
    if not (s.text.rstrip().endswith(":") or under):
        return ()
    if m := _FENCE.match(first):
        fence = m.group(1)
        for end in range(at + 1, len(lines)):
            if lines[end].lstrip().startswith(fence):
                return tuple(lines[at : end + 1])
        return tuple(lines[at:])
    if first.lstrip().startswith("|"):
        end = at
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        return tuple(lines[at:end])
    return ()
