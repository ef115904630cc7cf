"""What an agent host puts in front of the model: memory at a session's start, and the few
notes that answer a prompt, each line with its citation and within a token budget.

``context`` (Claude Code's ``SessionStart``): the lines of MEMORY.md that weigh most, the
last days' notes newest first, and what the notes say about the project the session runs
in (its folder's name, searched). After a compaction (``source: "compact"``) the last
days' notes come first: what was flushed just before is what the model just lost.
Statements are shown as written (a bold name or key before the colon kept), in reading
order, each cited by its lines; a day's near-identical lines are one, with their count.
``recall`` (``UserPromptSubmit``): a search with the prompt, above the relevance floor;
time words narrow its matches and admit no note for its date alone.
Nothing to say is an empty text: the host then adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath

from memd.agent import CONTEXT_BUDGET, RECALL_BUDGET
from memd.memory import Memory
from memd.records import SearchResult
from memd.review.durable import durability
from memd.review.statements import Statement, statements, unmarked, words
from memd.sources.chunker import count_tokens
from memd.sources.layout import daily_date
from memd.store.rows import Supersession, lines_digest

_RECENT_DAYS = 3
_ALIKE = 0.8  # share of their words (numbers aside) two near-identical lines share
# A candidate line: where it is shown among its part's lines, and the line.
Line = tuple[tuple, str]
Replaced = dict[tuple[str, int], Supersession]


@dataclass(frozen=True)
class Said:
    """A block of lines for the model, and what it cost."""

    text: str
    lines: int
    tokens: int

    def as_dict(self) -> dict:
        return {"text": self.text, "lines": self.lines, "tokens": self.tokens}


def context(
    memory: Memory, cwd: str | None = None, source: str | None = None, budget: int = CONTEXT_BUDGET
) -> Said:
    """Memory for a session's start: MEMORY.md, recent notes, the project (``cwd``)."""
    root = memory.workspace.path
    replaced = _replaced(memory)
    core = _read(root, memory.workspace.core_file(), replaced)
    recent = _recent(root, replaced)
    project = _project(memory, cwd)
    parts: list[tuple[str, list[Line], float]]
    parts = [("From MEMORY.md", core, 0.5), ("Recent notes", recent, 0.3)]
    if source == "compact":  # what was flushed just before the compaction, first
        parts = [("Recent notes", recent, 0.5), ("From MEMORY.md", core, 0.3)]
    if project[1]:
        parts.append(project)
    waiting = (memory.reviewer.waiting() or {}).get("waiting", 0)
    if waiting:  # the agent can settle them (memory_review) when the person asks
        word = "proposal waits" if waiting == 1 else "proposals wait"
        parts.append(("Review", _ranked([f"{waiting} memory review {word}: memory_review"]), 0.05))
    return _fit(parts, budget)


def recall(memory: Memory, prompt: str, budget: int = RECALL_BUDGET) -> Said:
    """The notes above the relevance floor that answer ``prompt``, best first. Time words
    ("last week") narrow the matches to those days; a note is never let in for its date
    alone (``narrow_window``)."""
    if not prompt.strip():
        return Said("", 0, 0)
    answer = memory.search(prompt[:2000], max_results=5, min_results=0, narrow_window=True)
    lines = [_result_line(r) for r in answer.results]  # min_results=0: strong only
    return _fit([("Notes that may help", _ranked(lines), 1.0)], budget)


def _ranked(lines: list[str]) -> list[Line]:
    """Lines shown in the order they are given (best first)."""
    return [((n,), line) for n, line in enumerate(lines)]


def _replaced(memory: Memory) -> dict[tuple[str, int], Supersession]:
    """What later notes replaced, by (path, first line) of the older statement."""
    rows = memory.db.read(lambda store: store.superseded_at())
    return {(r.path, r.start_line): r for r in rows}


def _read(root: Path, rel: str, replaced: Replaced) -> list[Line]:
    """The statements of one note, weightiest first when they must be chosen, shown in
    reading order."""
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = _worth(statements(rel, text, daily_date(PurePath(rel).name)))
    weight = {id(s): durability(s.text, s.heading)[0] for s in found}
    ranked = sorted(found, key=lambda s: -weight[id(s)])
    lines = text.splitlines()
    return [((s.line,), _line(s) + _now(s, lines, replaced)) for s in ranked]


def _now(s: Statement, lines: list[str], replaced: Replaced) -> str:
    """`` → now: …`` when a later note replaced ``s`` (and its lines still say what was
    read): the agent is never told an old value as current."""
    r = replaced.get((s.path, s.line))
    if r is None or r.end_line != s.last or lines_digest(lines[s.line - 1 : s.last]) != r.digest:
        return ""
    how = ", likely" if r.likely else ""
    return f" → now: {r.now} ({r.by}{how})"


def _recent(root: Path, replaced: Replaced) -> list[Line]:
    """The last days' statements: chosen newest day first and its latest lines first,
    shown newest day first and each day in reading order; near-identical lines of a day
    are one line with their count."""
    notes = sorted((root / "memory").glob("*.md"), reverse=True)
    days = [p for p in notes if daily_date(p.name)][:_RECENT_DAYS]
    out: list[Line] = []
    for age, path in enumerate(days):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = _worth(statements(f"memory/{path.name}", text, daily_date(path.name)))
        alike = _alike(found)
        lines = text.splitlines()
        out += [((age, s.line), f"[{s.date}] {_line(s, n)}{_now(s, lines, replaced)}")
                for s, n in reversed(alike)]  # fmt: skip
    return out


def _project(memory: Memory, cwd: str | None) -> tuple[str, list[Line], float]:
    name = PurePath(cwd).name if cwd else ""
    if not name or cwd in ("/", str(Path.home())):
        return ("", [], 0.0)
    answer = memory.search(
        name.replace("-", " ").replace("_", " "), max_results=4, min_results=0
    )  # what reaches the model unasked: strong matches only
    lines = [_result_line(r) for r in answer.results]  # min_results=0: strong only
    return (f"About {name}", _ranked(lines), 0.2)


def _result_line(r: SearchResult) -> str:
    """A result on one line with its citation, and what replaced it if a later note did."""
    if r.superseded_by:
        how = ", likely" if r.superseded == "likely" else ""
        return f"{_flat(r.snippet)} ({r.citation}) → now: {r.now or ''} ({r.superseded_by}{how})"
    return f"{_flat(r.snippet)} ({r.citation})"


def _flat(snippet: str) -> str:
    """A result's text on one line, its headings left out (the citation says where); a
    snippet cut short loses its last, partial line rather than end mid-item."""
    rows = snippet.splitlines()
    if snippet.endswith("…") and len(rows) > 1:
        rows = rows[:-1]
    kept = [unmarked(line).strip() for line in rows if not line.lstrip().startswith("#")]
    return " ".join(line for line in kept if line)


def _worth(found: list[Statement]) -> list[Statement]:
    """What is worth a model's attention: a task done (``- [x]``) is not."""
    return [s for s in found if s.task != "done"]


def _line(s: Statement, alike: int = 1) -> str:
    """A statement as written: its key or its bold label (``**Priya Raman**:``) kept."""
    if s.key:
        text = f"{s.key}: {s.text}"
    elif s.speaker:
        text = f"**{s.speaker}**: {s.text}"
    else:
        text = s.text
    if s.task == "open" and not text[:5].upper().startswith(("TODO", "FIXME", "TBD")):
        text = f"open task: {text}"  # "- [ ] set up Unleash" is not a fact
    cite = s.citation  # a statement of several lines: their range
    return f"{text} (×{alike}, latest {cite})" if alike > 1 else f"{text} ({cite})"


def _alike(found: list[Statement]) -> list[tuple[Statement, int]]:
    """A day's statements in reading order, near-identical ones (one shape, other
    numbers: "checked the retry queue, 17 items left") as one: the latest, and how many."""
    groups: list[tuple[set[str], list[Statement]]] = []
    for s in found:
        shape = _shape(s)
        for seen, members in groups:
            if len(shape) >= 3 and len(seen & shape) >= _ALIKE * len(seen | shape):
                members.append(s)
                break
        else:
            groups.append((shape, [s]))
    kept = [(members[-1], len(members)) for _, members in groups]
    return sorted(kept, key=lambda pair: pair[0].line)


def _shape(s: Statement) -> set[str]:
    """The words of a statement, every number one word."""
    said = f"{s.key or s.speaker or ''} {s.text}"
    return {"#" if any(ch.isdigit() for ch in w) else w for w in words(said)}


def _fit(parts: list[tuple[str, list[Line], float]], budget: int) -> Said:
    """Each part's lines up to its share of ``budget`` (a share one part leaves goes to
    the next), chosen in the order given and shown in their own order, under its title;
    nothing at all when no part has a line."""
    header = "Memory (memd; cite the path#line when you use it):\n\n"
    budget -= count_tokens(header)
    blocks, used, lines, spare = [], 0, 0, 0.0
    for title, candidates, share in parts:
        room = int(budget * share + spare)
        kept, cost, seen = [], count_tokens(title) + 2, set()
        for place, line in candidates:
            need = count_tokens(line) + 1
            if line in seen or cost + need > room:
                continue
            seen.add(line)
            kept.append((place, f"- {line}"))
            cost += need
        if kept:
            blocks.append(f"{title}:\n" + "\n".join(line for _, line in sorted(kept)))
            used += cost
            lines += len(kept)
        spare = max(room - (cost if kept else 0), 0)
    if not blocks:
        return Said("", 0, 0)
    text = header + "\n\n".join(blocks)
    return Said(text + "\n", lines, count_tokens(text))
