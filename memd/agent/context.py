"""What an agent host puts in front of the model: memory at a session's start, and the few
notes that answer a prompt, each line with its citation and within a token budget.

``context`` (Claude Code's ``SessionStart``): the lines of MEMORY.md that weigh most, the
last days' notes newest first, and what the notes say about the project the session runs
in (its folder's name, searched). After a compaction (``source: "compact"``) the last
days' notes come first: what was flushed just before is what the model just lost.
``recall`` (``UserPromptSubmit``): a search with the prompt, above the relevance floor.
Nothing to say is an empty text: the host then adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath

from memd.agent import CONTEXT_BUDGET, RECALL_BUDGET
from memd.memory import Memory
from memd.records import SearchResult
from memd.review.durable import durability
from memd.review.statements import Statement, statements, unmarked
from memd.sources.chunker import count_tokens
from memd.sources.layout import daily_date

_RECENT_DAYS = 3


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
    core = _read(root, memory.workspace.core_file())
    recent = _recent(root)
    project = _project(memory, cwd)
    parts = [("From MEMORY.md", core, 0.5), ("Recent notes", recent, 0.3)]
    if source == "compact":  # what was flushed just before the compaction, first
        parts = [("Recent notes", recent, 0.5), ("From MEMORY.md", core, 0.3)]
    if project[1]:
        parts.append(project)
    waiting = (memory.reviewer.waiting() or {}).get("waiting", 0)
    if waiting:  # the agent can settle them (memory_review) when the person asks
        word = "proposal waits" if waiting == 1 else "proposals wait"
        parts.append(("Review", [f"{waiting} memory review {word}: memory_review"], 0.05))
    return _fit(parts, budget)


def recall(memory: Memory, prompt: str, budget: int = RECALL_BUDGET) -> Said:
    """The notes above the relevance floor that answer ``prompt``, best first."""
    if not prompt.strip():
        return Said("", 0, 0)
    answer = memory.search(prompt[:2000], max_results=5, min_results=0)  # strong only
    lines = [_said(r) for r in answer.results]
    return _fit([("Notes that may help", lines, 1.0)], budget)


def _read(root: Path, rel: str) -> list[str]:
    """The statements of one note, weightiest first when they must be chosen."""
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = statements(rel, text, daily_date(PurePath(rel).name))
    weight = {id(s): durability(s.text, s.heading)[0] for s in found}
    ranked = sorted(found, key=lambda s: -weight[id(s)])
    return [_line(s) for s in ranked]


def _recent(root: Path) -> list[str]:
    notes = sorted((root / "memory").glob("*.md"), reverse=True)
    days = [p for p in notes if daily_date(p.name)][:_RECENT_DAYS]
    out = []
    for path in days:  # newest day first, and its latest lines first
        text = path.read_text(encoding="utf-8", errors="replace")
        found = statements(f"memory/{path.name}", text, daily_date(path.name))
        out += [f"[{s.date}] {_line(s)}" for s in reversed(found)]
    return out


def _project(memory: Memory, cwd: str | None) -> tuple[str, list[str], float]:
    name = PurePath(cwd).name if cwd else ""
    if not name or cwd in ("/", str(Path.home())):
        return ("", [], 0.0)
    answer = memory.search(
        name.replace("-", " ").replace("_", " "), max_results=4, min_results=0
    )  # what reaches the model unasked: strong matches only
    lines = [_said(r) for r in answer.results]
    return (f"About {name}", lines, 0.2)


def _said(r: SearchResult) -> str:
    """A result on one line with its citation, and what replaced it if a later note did."""
    later = f"; superseded by {r.superseded_by}" if r.superseded_by else ""
    return f"{_flat(r.snippet)} ({r.citation}{later})"


def _flat(snippet: str) -> str:
    """A result's text on one line, its headings left out (the citation says where)."""
    kept = [
        unmarked(line).strip() for line in snippet.splitlines() if not line.lstrip().startswith("#")
    ]
    return " ".join(line for line in kept if line)


def _line(s: Statement) -> str:
    text = f"{s.key}: {s.text}" if s.key else s.text
    return f"{text} ({s.citation})"


def _fit(parts: list[tuple[str, list[str], float]], budget: int) -> Said:
    """Each part's lines up to its share of ``budget`` (a share one part leaves goes to
    the next), under its title; nothing at all when no part has a line."""
    header = "Memory (memd; cite the path#line when you use it):\n\n"
    budget -= count_tokens(header)
    blocks, used, lines, spare = [], 0, 0, 0.0
    for title, candidates, share in parts:
        room = int(budget * share + spare)
        kept, cost = [], count_tokens(title) + 2
        for line in dict.fromkeys(candidates):
            need = count_tokens(line) + 1
            if cost + need > room:
                continue
            kept.append(f"- {line}")
            cost += need
        if kept:
            blocks.append(f"{title}:\n" + "\n".join(kept))
            used += cost
            lines += len(kept)
        spare = max(room - (cost if kept else 0), 0)
    if not blocks:
        return Said("", 0, 0)
    text = header + "\n\n".join(blocks)
    return Said(text + "\n", lines, count_tokens(text))
