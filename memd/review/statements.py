"""Notes as statements: one line of prose each, with where it is and the day it is from.

A review weighs lines, not chunks: a proposal cites the one line it rests on. Headings,
code, front matter and blank lines are not statements; list markers, checkboxes and a
speaker's bold label (``**Caroline:**``) are taken off the text but not off the citation.
A key line memd wrote (``memd.write.keylines``) is a statement of its key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.sources.markdown import code_lines
from memd.store.fts import STOPWORDS
from memd.write.keylines import MARKER, key_lines, key_value

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SPEAKER = re.compile(r"^\*\*([^*]{1,40}?):?\*\*:?\s*")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_COMMENT = re.compile(r"<!--.*?-->")
# The provenance memd writes after a promoted line: "(memory/2026-03-09.md#L12; was: ...)".
_PROVENANCE = re.compile(r"\s*\([^()]*\.md#L\d+[^()]*\)\s*$")
# Fenced code is parsed out; an indented block is not looked for (rare in notes, and
# telling one from a nested list item means parsing every note).
_MAYBE_CODE = re.compile(r"```|~~~")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


@dataclass(frozen=True)
class Statement:
    """One line of a note: the text it states, where, and when (a daily note's date)."""

    path: str
    line: int  # 1-based
    date: str | None
    heading: str
    text: str
    speaker: str | None = None
    key: str | None = None  # memd's key line: the key (``text`` is its value)

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"


def statements(path: str, text: str, date: str | None) -> list[Statement]:
    """The statements of one note, in file order."""
    lines = text.splitlines()
    skip = code_lines(text) if _MAYBE_CODE.search(text) else set()
    keyed = {k.line: k for k in key_lines(text)} if MARKER in text else {}
    first = _after_front_matter(lines)
    out: list[Statement] = []
    heading = ""
    for n in range(first, len(lines)):
        raw = lines[n]
        if n in skip or not raw.strip():
            continue
        if m := _HEADING.match(raw):
            heading = m.group(2)
            continue
        if k := keyed.get(n + 1):
            out.append(Statement(path, n + 1, date, heading, key_value(text, k), key=k.key))
            continue
        body = unmarked(raw)
        if "<!--" in body:
            body = _COMMENT.sub("", body)
        if ".md#L" in body:
            body = _PROVENANCE.sub("", body)
        body = body.strip()
        speaker = None
        if m := _SPEAKER.match(body):
            speaker, body = m.group(1).strip(), body[m.end() :].strip()
        if len(words(body)) >= 3 and not body.startswith(("|", ">")):
            out.append(Statement(path, n + 1, date, heading, body, speaker))
    return out


def unmarked(line: str) -> str:
    """``line`` without its list marker or checkbox."""
    return _BULLET.sub("", line, count=1)


def words(text: str) -> list[str]:
    """Lower-case words of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry meaning, in a crude common form (plural and tense endings off)."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def stem(word: str) -> str:
    """A light suffix strip: enough to match "deploys"/"deploy", "switched"/"switch"."""
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _after_front_matter(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for n in range(1, min(len(lines), 200)):
            if lines[n].strip() in ("---", "..."):
                return n + 1
    return 0
