"""Re-chunk only the end of a file that grew by appending (a flush, a store, an agent's log).

A full re-chunk parses the whole file: 190 ms for a daily note of 3,000 entries, for one
new entry. Text appended to a file cannot change the blocks before the last group of
sections that made chunks (``chunker.Restart``: a top-level heading, after which nothing
earlier is still open), so parsing from there, under the heading stack in force there,
gives exactly the chunks a full re-chunk gives from that line on; every earlier chunk is
kept as it is. ``Tail`` remembers that point for each file; it is used only when the file's
first ``size`` bytes still hash to what they did, and otherwise the whole file is
re-chunked as before.

The restart line is also where the parse's other state must be known: the code fences a
line scan finds (``fences.fenced_lines``, which decides what is no tag) may still be open
there when markdown-it says they are not (a fence inside an HTML comment or a list item).
A file is then re-chunked whole, as a parse from that line would read the fence's closing
line as an opening one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass

from memd.config import HIDDEN_TEXT
from memd.sources.chunker import Chunk, Restart, chunk_with_restart
from memd.sources.fences import fenced_lines
from memd.sources.markdown import Document, parse_lines, split_lines


@dataclass(frozen=True)
class Tail:
    """A file as last chunked (size, hash, tags) and where a re-chunk of it may start."""

    size: int
    hash: str
    line: int  # 0-based first line of the last chunk group
    offset: int  # byte offset of that line
    stack: tuple[tuple[int, str], ...]
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    date: str | None = None  # from the front matter


@dataclass(frozen=True)
class Regrown:
    """The end of a grown file, re-chunked: chunks from ``from_line`` (1-based) on."""

    hash: str
    lines: int
    tags: tuple[str, ...]
    from_line: int
    chunks: list[Chunk]  # with line numbers in the whole file
    tail: Tail | None


def tail_of(data: bytes, digest: str, doc: Document, restart: Restart | None) -> Tail | None:
    """The ``Tail`` of a file just chunked whole, if a later append can re-chunk from a
    point after its first chunk (else None: a re-chunk would be the whole file anyway)."""
    # An Obsidian comment may run across the restart line, and front matter not closed yet
    # may be closed by an append (its text then is no text): such files are chunked whole.
    if not _can_restart(data, restart) or b"%%" in data or _open_front_matter(data):
        return None
    if _in_fence(doc.shown[doc.body_start : restart.line]):
        return None
    offset = line_offset(data, restart.line)
    return Tail(
        len(data), digest, restart.line, offset, restart.stack, doc.tags, doc.aliases, doc.date
    )


def regrow(
    data: bytes, old: Tail, budget: int, overlap: int, hide: Collection[str] = HIDDEN_TEXT
) -> Regrown | None:
    """Chunks of ``data`` from ``old``'s restart line on, if ``data`` is ``old``'s file
    with text appended; None if it is not (then re-chunk it whole)."""
    if len(data) <= old.size or b"%%" in data[old.size :]:
        return None
    hasher = hashlib.sha256(memoryview(data)[: old.size])
    if hasher.hexdigest() != old.hash:
        return None
    hasher.update(memoryview(data)[old.size :])
    try:
        text = data[old.offset :].decode("utf-8")
    except UnicodeDecodeError:
        return None  # the whole file then, with its warning
    lines = split_lines(text)
    doc = parse_lines(lines, hide)
    chunks, restart = chunk_with_restart(doc, budget, overlap, old.stack)
    if not chunks or restart is None:
        return None
    digest = hasher.hexdigest()
    tags = (*old.tags, *(t for t in doc.tags if t not in old.tags))
    tail = None
    # Chunks before old.line: any restart in the tail will do, out of a fence (none is open
    # at old.line, so the tail's own lines say whether one is at its restart).
    if data.endswith(b"\n") and not _in_fence(doc.shown[: restart.line]):
        tail = Tail(
            len(data),
            digest,
            old.line + restart.line,
            old.offset + line_offset(data, restart.line, old.offset),
            restart.stack,
            tags,
            old.aliases,
            old.date,
        )
    shifted = [
        Chunk(c.start_line + old.line, c.end_line + old.line, c.heading, c.text, c.tokens)
        for c in chunks
    ]
    return Regrown(digest, old.line + len(lines), tags, old.line + 1, shifted, tail)


def _open_front_matter(data: bytes) -> bool:
    """Whether ``data`` opens front matter (a first line ``---``) that no line closes."""
    if not data.startswith(b"---"):
        return False  # most notes: no split
    lines = data.split(b"\n")
    if lines[0].rstrip() != b"---":
        return False
    return not any(line.rstrip() in (b"---", b"...") for line in lines[1:])


def _in_fence(lines: list[str]) -> bool:
    """Whether a code fence opened in ``lines`` is still open after them, as
    ``fenced_lines`` scans them (a blank line after them is code only inside one)."""
    text = "\n".join(lines)
    if "```" not in text and "~~~" not in text:
        return False  # most notes: no scan
    return len(lines) in fenced_lines([*lines, ""], text + "\n")


def _can_restart(data: bytes, restart: Restart | None) -> bool:
    """Whether a later append can re-chunk from ``restart``: chunks come before it, and the
    file ends its last line (else appended text would extend that line, which may be
    the restart heading's own: a setext underline)."""
    return (
        restart is not None
        and restart.line > 0
        and restart.chunks_before > 0
        and data.endswith(b"\n")
    )


def line_offset(data: bytes, line: int, base: int = 0) -> int:
    """How many bytes after ``base`` the 0-based ``line`` (counted from ``base``) starts."""
    if line == 0:
        return 0
    total = data.count(b"\n", base)
    pos = len(data)
    # Line k starts after the k-th newline: from the end, that is newline total - k + 1.
    for _ in range(total - line + 1):
        pos = data.rfind(b"\n", base, pos)
    return pos + 1 - base
