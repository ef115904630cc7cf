"""A session's start from MEMORY.md's text alone: what a hook says when neither the daemon
nor the index on disk answered within its budget.

Nothing here parses Markdown, counts tokens with the model's encoder or opens the index:
it must answer at once on a machine too busy for the rest. The owner's emphasis comes
first (``CRITICAL``, ``ALWAYS``, ``NEVER``, a bold rule), then the file in its order;
lines are whole, a nested bullet comes after the line it belongs to, a code block or
table is kept whole or left out, and the budget is kept by a generous estimate (a token
for every three bytes).
"""

from __future__ import annotations

import re
from pathlib import Path

HEADER = "Memory (memd; cite the path#line when you use it):\n\n"
_EMPHASIS = re.compile(
    r"\b(?:CRITICAL|IMPORTANT|ALWAYS|NEVER|MUST|DO NOT|DON'T)\b|^\s*(?:[-*+]\s+)?\*\*[^*]+[.!]\*\*"
)
_BYTES_PER_TOKEN = 3  # fewer than any text has on average: the estimate stays above


def core_name(root: Path) -> str:
    """``MEMORY.md``, or ``memory.md`` when only that one exists (as
    ``memd.sources.layout.Workspace.core_file``, without what that module loads)."""
    if not (root / "MEMORY.md").exists() and (root / "memory.md").exists():
        return "memory.md"
    return "MEMORY.md"


def core_text(root: Path, core_file: str, budget: int) -> dict:
    """MEMORY.md's lines within ``budget`` tokens (estimated), each cited; as the context
    answer's dict (``text``, ``lines``, ``tokens``); empty when there is nothing."""
    try:
        lines = (root / core_file).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {"text": "", "lines": 0, "tokens": 0}
    units = _units(lines)
    first = [u for u in units if _EMPHASIS.search(lines[u[0]])]
    room = budget * _BYTES_PER_TOKEN - len(HEADER) - 40
    kept: list[tuple[int, int]] = []
    for unit in [*first, *(u for u in units if u not in first)]:
        cost = sum(len(lines[n].encode()) + 12 for n in range(unit[0], unit[1] + 1))
        if cost > room:
            continue
        kept.append(unit)
        room -= cost
    if not kept:
        return {"text": "", "lines": 0, "tokens": 0}
    out = [f"From {core_file} (as written):"]
    for start, end in sorted(kept):
        cite = f"{core_file}#L{start + 1}" + (f"-L{end + 1}" if end > start else "")
        body = [lines[n] for n in range(start, end + 1)]
        out.append(f"{body[0].rstrip()} ({cite})")
        out.extend(line.rstrip() for line in body[1:])
    text = HEADER + "\n".join(out) + "\n"
    return {"text": text, "lines": len(kept), "tokens": len(text.encode()) // _BYTES_PER_TOKEN}


def _units(lines: list[str]) -> list[tuple[int, int]]:
    """Lines to keep or leave out together (0-based, inclusive): a code block or a table
    with the line before it; a line with the lines indented under it."""
    units: list[tuple[int, int]] = []
    n = 0
    while n < len(lines):
        line = lines[n].strip()
        if not line or line.startswith("#"):
            n += 1
            continue
        if line.startswith(("```", "~~~")) or line.startswith("|"):
            end = n
            if line.startswith("|"):
                while end + 1 < len(lines) and lines[end + 1].strip().startswith("|"):
                    end += 1
            else:
                end += 1
                while end < len(lines) and not lines[end].strip().startswith(line[:3]):
                    end += 1
            end = min(end, len(lines) - 1)
            if units and units[-1][1] >= n - 2:  # the line that introduces it comes along
                units[-1] = (units[-1][0], end)
            else:
                units.append((n, end))
            n = end + 1
            continue
        end = n  # a line with what is indented under it: its children, its continuation
        while end + 1 < len(lines) and lines[end + 1][:1] in (" ", "\t") and lines[end + 1].strip():
            end += 1
        units.append((n, end))
        n = end + 1
    return units
