"""What a model embeds of a chunk: its passages, each led by a short context header.

A chunk (~400 tokens) is what search returns; its meaning is judged by its best passage
(a paragraph, a list item, a conversation turn), because one long vector blurs the few
lines a question is about. Each passage carries the chunk's context, so "what did we decide
in May" still meets a turn that only says "let's go with Postgres":

    Thursday, 25 May 2023 (Session 2 — 1:14 pm)
    Melanie: I ran a charity race for mental health last Saturday.

Passages are made from a chunk's text alone (no re-parse of the file), so they can be
computed when embedding, and the same text always gives the same passages (and cache keys).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import PurePosixPath

from memd.config import HIDDEN_TEXT
from memd.sources.chunker import count_tokens, encoder
from memd.sources.dates import spoken_date
from memd.sources.markdown import readable

FORMAT = 1  # bump when what is embedded changes: vectors of another format are made again
MAX_TOKENS = 150  # a longer block is cut between lines, a longer line between words
PACK_TOKENS = 100  # consecutive short blocks share a passage up to this size (measured)
_MODEL_MAX_CHARS = 2000

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ITEM = re.compile(r"^ ?(?:[-*+]|\d{1,9}[.)])\s")  # a top-level list item starts a passage
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")


def passages(
    heading: str,
    text: str,
    date: str | None = None,
    path: str = "",
    hide: Collection[str] = HIDDEN_TEXT,
) -> list[str]:
    """The texts to embed for one chunk, in order; never empty for a chunk with text or a
    heading; ``hide`` as ``Chunking.hide``."""
    header = context_header(heading, date, path)
    out = []
    for piece in _pack([piece for block in _blocks(text) for piece in _cut(block)]):
        body = _EMPHASIS.sub(r"\2", readable(piece, hide=hide))[:_MODEL_MAX_CHARS]
        out.append(f"{header}\n{body}" if header else body)
    if not out:  # a chunk of no prose; a stub's (no text at all) is its name
        whole = "\n".join(t for t in (header, text.strip()[:_MODEL_MAX_CHARS]) if t)
        out += [whole] if whole else []
    return out


def context_header(heading: str, date: str | None, path: str = "") -> str:
    """Where a passage sits, as a reader would say it: the note's day in words (daily
    notes) or its name, then the heading path."""
    titles = [t.lstrip("#").strip() for t in heading.split(" > ")] if heading else []
    titles = [t for t in titles if t and t != date]
    if date:
        where = " > ".join(titles)
        return f"{spoken_date(date)} ({where})" if where else spoken_date(date)
    name = PurePosixPath(path).stem if path else ""
    if name and name.upper() != "MEMORY" and (not titles or titles[0].lower() != name.lower()):
        titles.insert(0, name)
    return " > ".join(titles)


def _blocks(text: str) -> list[str]:
    """Paragraphs, top-level list items and whole code fences; headings left out (the
    header carries them)."""
    blocks: list[list[str]] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            current.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if not line.strip() or _HEADING.match(line) or _ITEM.match(line) or opening:
            if current:
                blocks.append(current)
            current = []
            if not line.strip() or _HEADING.match(line):
                continue
        if opening:
            fence = opening.group(1)
        current.append(line)
    if current:
        blocks.append(current)
    return ["\n".join(lines) for lines in blocks]


def _pack(pieces: list[str]) -> list[str]:
    """Consecutive pieces joined while together they stay within ``PACK_TOKENS``."""
    out: list[str] = []
    size = 0
    for piece in pieces:
        cost = count_tokens(piece) + 1
        if out and size + cost <= PACK_TOKENS:
            out[-1] = f"{out[-1]}\n{piece}"
            size += cost
        else:
            out.append(piece)
            size = cost
    return out


def _cut(block: str) -> list[str]:
    """``block`` in pieces of at most ``MAX_TOKENS``: whole lines where they fit."""
    if count_tokens(block) <= MAX_TOKENS:
        return [block]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in block.split("\n"):
        cost = count_tokens(line) + 1
        if current and size + cost > MAX_TOKENS:
            pieces.append("\n".join(current))
            current, size = [], 0
        if cost > MAX_TOKENS:
            ids = encoder().encode_ordinary(line)
            for i in range(0, len(ids), MAX_TOKENS):
                pieces.append(encoder().decode(ids[i : i + MAX_TOKENS]))
            continue
        current.append(line)
        size += cost
    if current:
        pieces.append("\n".join(current))
    return [p for p in pieces if p.strip()]
