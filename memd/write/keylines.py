"""Which lines are keyed memories, and free text that can never pass for one.

memd writes a key as ``- **key**: content <!-- memd:key -->``. The HTML comment is hidden
wherever the Markdown is rendered (Obsidian's reading view, GitHub) and is the only thing
that makes a line memd's: a key line has the ``- **key**:`` form (any bullet, any spacing)
outside code blocks *and* the mark. A bold-name list a person wrote (``- **Tom**: platform
lead``) is text, which memd never changes. Free text memd appends (flush entries) that
carries the mark gets a backslash before the colon, ``- **editor**\\: vim <!-- memd:key
-->``: it renders the same, but is never a key line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memd.sources.markdown import code_lines

MARKER = "<!-- memd:key -->"
_FORM = r"^([ \t]*[-*+][ \t]+\*\*({key})\*\*[ \t]*):"
_ANY_KEY = re.compile(_FORM.format(key=".+?"), re.MULTILINE)
_MARKED = re.compile(r"[ \t]*" + re.escape(MARKER) + r"[ \t]*\r?$")


@dataclass(frozen=True)
class KeyLine:
    """One key line (memd's, marked): its key and where it is in the text."""

    key: str
    start: int  # offset of the line's first character
    end: int  # offset of its newline, or the end of the text
    line: int  # 1-based


def key_line(key: str, content: str) -> str:
    """The line memd writes for a key (without its newline)."""
    return f"- **{key}**: {content} {MARKER}"


def key_lines(text: str, key: str | None = None) -> list[KeyLine]:
    """The key lines of ``text`` (all, or those of ``key``), in file order."""
    pattern = _ANY_KEY if key is None else re.compile(_FORM.format(key=re.escape(key)), re.M)
    return [
        KeyLine(m.group(2), m.start(), end, line)
        for m, end, line, marked in _key_form(text, pattern)
        if marked
    ]


def look_alikes(text: str) -> list[tuple[int, str]]:
    """Lines (1-based) in key form without memd's mark, with their keys: a person's, never
    changed."""
    return [(line, m.group(2)) for m, _, line, marked in _key_form(text, _ANY_KEY) if not marked]


def _key_form(text: str, pattern: re.Pattern) -> Iterator[tuple[re.Match, int, int, bool]]:
    """Each line in key form outside code: its match, end offset, 1-based line, and
    whether it carries the mark."""
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
        yield m, end, line + 1, _MARKED.search(text, m.start(), end) is not None


def key_value(text: str, k: KeyLine) -> str:
    """What a key line says after its key (without memd's marker)."""
    line = text[k.start : k.end]
    m = _ANY_KEY.match(line)
    value = line[m.end() :] if m else line
    return _MARKED.sub("", value).strip()


def escape_free_text(text: str) -> str:
    """``text`` with a ``\\`` before the colon of every key line in it, so that appended
    free text never reads as one of memd's keys (it renders the same)."""
    if MARKER not in text:
        return text
    out: list[str] = []
    copied = 0
    for k in key_lines(text):
        colon = _ANY_KEY.match(text, k.start).end() - 1  # type: ignore[union-attr]
        out.append(text[copied:colon] + "\\")
        copied = colon
    return "".join(out) + text[copied:]
