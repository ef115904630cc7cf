"""Notes as statements: one Markdown unit each, with where it is and the day it is from.

A statement is a list item with its continuation lines, or a paragraph: never a physical
line, so a hard-wrapped item is one statement (its text the lines joined with spaces,
citing ``#L4-L5``) and reads the same as the item written on one line. Headings, code,
front matter and blank lines are not statements; list markers, checkboxes and a speaker's
bold label (``**Caroline:**``) are taken off the text but not off the citation. A line that
opens with a speaker's label starts a statement of its own (a transcript's turns are not
one paragraph). A key line memd wrote (``memd.write.keylines``) is a statement of its key.
Tasks and questions (``TODO``, ``- [ ]``, a line ending in ``?``, a wish) say what is not
yet so: they are marked ``task`` and never read as facts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from itertools import islice

from memd.sources.fences import fenced_lines
from memd.store.fts import STOPWORDS
from memd.write.keylines import MARKER, key_lines, key_value

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SPEAKER = re.compile(r"^\*\*([^*]{1,40}?):?\*\*:?\s*")
# A session's turn written plainly ("user: 1 and 2 for now"): only names no label has
# ("Model:", "System:" and "Agent:" label facts as often as they open turns).
_TURN = re.compile(r"^(user|assistant|human)\s*:\s*", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_COMMENT = re.compile(r"<!--.*?-->")
# The provenance memd writes after a promoted line: "(memory/2026-03-09.md#L12; was: ...)".
_PROVENANCE = re.compile(r"\s*\([^()]*\.md#L\d+[^()]*\)\s*$")
# Fenced code is parsed out; an indented block is not looked for (rare in notes, and
# telling one from a nested list item means parsing every note).
_MAYBE_CODE = re.compile(r"```|~~~")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_CHECKBOX = re.compile(r"^(?:[-*+]|\d+[.)])\s+\[([ xX])\]")
_TODO = re.compile(r"^(?:\*\*)?(?:TODO|FIXME|TBD|XXX|HACK)\b|^(?:\*\*)?(?:todo|to do)\s*:", re.I)
# A wish or an intention: what someone would like, not what is so.
_WISH = re.compile(
    r"^(?:(?:we|i)\s+(?:should|could|might|may|need to|want to|would like to|hope to|plan to)|"
    r"(?:it\s+)?would be (?:nice|good|great)|maybe\b|perhaps\b|consider\b|look into\b)",
    re.I,
)


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
    end_line: int | None = None  # the unit's last line, when it spans more than one
    task: str | None = None  # "open", "done" or "question": not a fact
    # The list item this one is nested under, when that item introduces it (ends in a
    # colon): "- Logistik Nord gets its own limit:" scopes "  - Limit: 1200/min".
    lead: str | None = None

    @property
    def last(self) -> int:
        return self.end_line or self.line

    @property
    def citation(self) -> str:
        if self.end_line and self.end_line > self.line:
            return f"{self.path}#L{self.line}-L{self.end_line}"
        return f"{self.path}#L{self.line}"


def statements(path: str, text: str, date: str | None) -> list[Statement]:
    """The statements of one note, in file order."""
    lines = text.splitlines()
    skip = fenced_lines(lines) if _MAYBE_CODE.search(text) else set()
    keyed = {k.line: k for k in key_lines(text)} if MARKER in text else {}
    out: list[Statement] = []
    heading = ""
    unit: list[int] = []  # the physical lines (0-based) of the unit being read

    items: list[tuple[int, str]] = []  # the open list items above: (indent, text)

    def close() -> None:
        if unit:
            said = _statement(path, date, heading, [lines[n] for n in unit], unit[0], unit[-1])
            first = lines[unit[0]]
            if _BULLET.match(first):
                indent = len(first) - len(first.lstrip())
                while items and items[-1][0] >= indent:
                    items.pop()
                lead = items[-1][1] if items and items[-1][1].endswith(":") else None
                items.append((indent, said.text if said else unmarked(first).strip()))
                if said is not None and lead:
                    said = replace(said, lead=lead)
            else:
                items.clear()
            if said is not None:
                out.append(said)
            unit.clear()

    for n in range(_after_front_matter(lines), len(lines)):
        raw = lines[n]
        if n in skip or not raw.strip():
            close()
            continue
        if m := _HEADING.match(raw):
            close()
            heading = m.group(2)
            items.clear()
            continue
        if k := keyed.get(n + 1):
            close()
            out.append(Statement(path, n + 1, date, heading, key_value(text, k), key=k.key))
            continue
        if unit and _continues(raw, lines[unit[-1]], lines[unit[0]]):
            unit.append(n)
            continue
        close()
        unit.append(n)
    close()
    return out


def _continues(line: str, previous: str, first: str) -> bool:
    """Whether ``line`` goes on with the unit that began at ``first``, as Markdown reads it
    (a paragraph's lines, a list item's continuation, lazy or indented): unless it opens a
    unit of its own (a list item, a speaker's turn, a table row or quote) or the line
    before ends in a hard break. Hard-wrapped or not, a unit reads the same."""
    stripped = line.lstrip()
    if _BULLET.match(stripped) or _SPEAKER.match(stripped) or _TURN.match(stripped):
        return False
    if stripped.startswith(("|", ">")):
        return False
    return not (first.lstrip().startswith(("|", ">")) or previous.endswith(("  ", "\\")))


def _statement(
    path: str, date: str | None, heading: str, raw: list[str], first: int, last: int
) -> Statement | None:
    head = raw[0].lstrip()
    body = " ".join(part.strip() for part in [unmarked(raw[0]), *raw[1:]])
    if "<!--" in body:
        body = _COMMENT.sub("", body)
    if ".md#L" in body:
        body = _PROVENANCE.sub("", body)
    body = " ".join(body.split())
    speaker = None
    if m := _SPEAKER.match(body) or _TURN.match(body):
        speaker, body = m.group(1).strip(), body[m.end() :].strip()
    if head.startswith(("|", ">")) or len(list(islice(_WORD.finditer(body), 3))) < 3:
        return None
    end = last + 1 if last > first else None
    task = _task(head) or _task_words(body)
    return Statement(path, first + 1, date, heading, body, speaker, end_line=end, task=task)


def _task(head: str) -> str | None:
    if m := _CHECKBOX.match(head):
        return "open" if m.group(1) == " " else "done"
    return None


def _task_words(body: str) -> str | None:
    if _TODO.match(body) or _WISH.match(body):
        return "open"
    if body.rstrip().endswith("?"):
        return "question"
    return None


def unmarked(line: str) -> str:
    """``line`` without its list marker or checkbox."""
    return _BULLET.sub("", line, count=1)


def words(text: str) -> list[str]:
    """Lower-case words of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry meaning, in a crude common form (plural and tense endings off)."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


@functools.lru_cache(maxsize=1 << 16)  # a note's words repeat: most are stemmed already
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
