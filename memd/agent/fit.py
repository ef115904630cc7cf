"""Lines for a model within a token budget: parts that share it, each line whole, shown
once, a child under its parent and a block under its line (``memd.agent.context`` chooses
what the lines are).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memd.review.statements import words
from memd.sources.chunker import count_tokens


@dataclass(frozen=True)
class Said:
    """A block of lines for the model, and what it cost."""

    text: str
    lines: int
    tokens: int
    current: str | None = None  # "pending": what later notes replaced was still being found

    def as_dict(self) -> dict:
        out = {"text": self.text, "lines": self.lines, "tokens": self.tokens}
        return out if self.current is None else {**out, "current": self.current}


@dataclass
class Shown:
    """One candidate line of a part: where it goes, what it says, what it covers."""

    place: tuple
    text: str
    span: tuple[str, int, int] | None = None  # file and lines: nothing is shown twice
    block: tuple[str, ...] = ()  # a code block or table shown under it, whole
    parent: Shown | None = None  # shown above it, once
    turn: bool = False  # a flushed session turn
    first: bool = False  # the owner's emphasis: chosen before any other line
    _tokens: int | None = field(default=None, repr=False)

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            rows = [self.text, *self.block]
            self._tokens = sum(count_tokens(row) + 1 for row in rows)
        return self._tokens


@dataclass
class Part:
    title: str
    lines: list[Shown]
    share: float
    turns_share: float = 1.0


def fit(parts: list[Part], budget: int) -> Said:
    """Each part's lines up to its share of ``budget`` (a share one part leaves goes to
    the next; the owner's emphasis may take more), chosen in the order given and shown in
    their own order, under its title; a line whose text or lines were shown already is
    left out, and so is one that does not fit whole; nothing at all when no part has a
    line."""
    header = "Memory (memd; cite the path#line when you use it):\n\n"
    budget -= count_tokens(header)
    blocks, used, lines, spare = [], 0, 0, 0.0
    texts: set[str] = set()
    spans: list[tuple[str, int, int]] = []

    def shown_before(line: Shown) -> bool:
        if _bare(line.text) in texts:
            return True
        return line.span is not None and any(
            path == line.span[0] and lo <= line.span[2] and line.span[1] <= hi
            for path, lo, hi in spans
        )

    for part in parts:
        room = min(int(budget * part.share + spare), budget - used)  # never past the whole
        kept: list[Shown] = []
        cost = count_tokens(part.title) + 2
        turns = 0
        for line in sorted(part.lines, key=lambda s: not s.first):
            if shown_before(line):
                continue
            above = _ancestors(line, kept)  # shown with it, once
            if any(shown_before(a) for a in above):
                continue  # its parent is in another part: alone here it would be an orphan
            need = line.tokens + sum(a.tokens for a in above)
            # The owner's emphasis is never left out while the whole budget has room.
            limit = budget - used if line.first else room
            if cost + need > limit:
                continue
            if line.turn and (turns + line.tokens > room * part.turns_share):
                continue  # a quarter of the part's room at most
            for taken in [*above, line]:
                kept.append(taken)
                texts.add(_bare(taken.text))
                if taken.span is not None:
                    spans.append(taken.span)
            turns += line.tokens if line.turn else 0
            cost += need
        kept = _fewer_turns(kept, part.turns_share)
        if kept:
            blocks.append(f"{part.title}:\n" + "\n".join(_render(kept)))
            used += cost
            lines += len(kept)
        spare = max(room - (cost if kept else 0), 0)
    if not blocks:
        return Said("", 0, 0)
    text = header + "\n\n".join(blocks)
    return Said(text + "\n", lines, count_tokens(text))


def _ancestors(line: Shown, kept: list[Shown]) -> list[Shown]:
    """The lines above ``line`` (its parent, theirs, ...) not kept yet, outermost first."""
    chain = []
    parent = line.parent
    while parent is not None and not any(_same(k, parent) for k in kept):
        chain.append(parent)
        parent = parent.parent
    return chain[::-1]


def _bare(text: str) -> str:
    """A line's words without its citation or date: what makes two lines the same."""
    text = text.rsplit(" (", 1)[0] if text.endswith(")") else text
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    return " ".join(words(text))


def _fewer_turns(kept: list[Shown], share: float) -> list[Shown]:
    """Session turns are at most ``share`` of a part's lines (one at least, when they are
    all it has): the oldest days' go first."""
    turns = sorted((k for k in kept if k.turn), key=lambda k: k.place)
    allowed = max(1, int(share * (len(kept) - len(turns)) / (1 - share))) if share < 1 else None
    if allowed is None or len(turns) <= allowed:
        return kept
    drop = {id(k) for k in turns[allowed:]}
    return [k for k in kept if id(k) not in drop]


def _render(kept: list[Shown]) -> list[str]:
    """The part's lines in their places, a child under its parent, a block under its
    line, each indented as Markdown nests them."""
    out: list[str] = []
    children: dict[int, list[Shown]] = {}
    tops = []
    for k in kept:
        parent = next((p for p in kept if k.parent is not None and _same(p, k.parent)), None)
        if parent is not None and parent is not k:
            children.setdefault(id(parent), []).append(k)
        else:
            tops.append(k)

    def emit(line: Shown, depth: int) -> None:
        pad = "  " * depth
        first, *more = line.text.split("\n")  # a result's table or code: rows of its own
        out.append(f"{pad}- {first}")
        out.extend(f"{pad}  {row}" for row in more)
        out.extend(f"{pad}  {row}" for row in line.block)
        for child in sorted(children.get(id(line), []), key=lambda s: s.place):
            emit(child, depth + 1)

    for line in sorted(tops, key=lambda s: s.place):
        emit(line, 0)
    return out


def _same(a: Shown, b: Shown) -> bool:
    return a is b or (a.span == b.span and a.text == b.text)
