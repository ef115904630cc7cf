"""Which lines are keyed memories, and free text that can never pass for one.

memd writes a key as ``- **key**: content <!-- memd:key -->``. The HTML comment is hidden
wherever the Markdown is rendered (Obsidian's reading view, GitHub) and tells memd's own
lines from text that only looks like them. A line is a key line when it has the
``- **key**:`` form (any bullet, any spacing) outside code blocks; where a key has lines
with the marker, only those count, else the unmarked form older memd versions wrote.
Free text memd appends (flush entries) gets a backslash before the colon of any line in
that form, ``- **editor**\\: vim``: it renders exactly the same, but is never a key line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.sources.markdown import code_lines

MARKER = "<!-- memd:key -->"
_FORM = r"^([ \t]*[-*+][ \t]+\*\*({key})\*\*[ \t]*):"
_ANY_KEY = re.compile(_FORM.format(key=".+?"), re.MULTILINE)
_MARKED = re.compile(r"[ \t]*" + re.escape(MARKER) + r"[ \t]*\r?$")


@dataclass(frozen=True)
class KeyLine:
    """One key line: its key, where it is in the text, and whether memd marked it."""

    key: str
    start: int  # offset of the line's first character
    end: int  # offset of its newline, or the end of the text
    line: int  # 1-based
    marked: bool


def key_line(key: str, content: str) -> str:
    """The line memd writes for a key (without its newline)."""
    return f"- **{key}**: {content} {MARKER}"


def key_lines(text: str, key: str | None = None) -> list[KeyLine]:
    """The key lines of ``text`` (all, or those of ``key``), in file order."""
    pattern = _ANY_KEY if key is None else re.compile(_FORM.format(key=re.escape(key)), re.M)
    found: list[KeyLine] = []
    code: set[int] | None = None
    line, at = 0, 0
    for m in pattern.finditer(text):
        if code is None:  # parsed only when some line has the form
            code = code_lines(text)
        line += text.count("\n", at, m.start())
        at = m.start()
        if line in code:
            continue
        end = text.find("\n", m.start())
        end = len(text) if end == -1 else end
        marked = _MARKED.search(text, m.start(), end) is not None
        found.append(KeyLine(m.group(2), m.start(), end, line + 1, marked))
    # Where a key has marked lines, unmarked look-alikes of it are text, not the key.
    marked_keys = {k.key for k in found if k.marked}
    return [k for k in found if k.marked or k.key not in marked_keys]


def key_value(text: str, k: KeyLine) -> str:
    """What a key line says after its key (without memd's marker)."""
    line = text[k.start : k.end]
    m = _ANY_KEY.match(line)
    value = line[m.end() :] if m else line
    return _MARKED.sub("", value).strip()


def escape_free_text(text: str) -> str:
    """``text`` with a ``\\`` before the colon of every line in key form outside code, so
    that appended free text never reads as a key line (it renders the same)."""
    if "**" not in text:
        return text
    code: set[int] | None = None
    out: list[str] = []
    line, at, copied = 0, 0, 0
    for m in _ANY_KEY.finditer(text):
        if code is None:
            code = code_lines(text)
        line += text.count("\n", at, m.start())
        at = m.start()
        if line in code:
            continue
        colon = m.end() - 1
        out.append(text[copied:colon] + "\\")
        copied = colon
    return "".join(out) + text[copied:]
