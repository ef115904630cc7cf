"""What an agent host puts in front of the model: memory at a session's start, and the few
notes that answer a prompt, each line with its citation and within a token budget.

``context`` (Claude Code's ``SessionStart``) shares its budget among: the lines of
MEMORY.md that weigh most, its owner's own emphasis first (``CRITICAL``, ``ALWAYS``,
``NEVER``, a bold rule); what is coming up (a note that names a day ahead); open tasks; the
last days' notes, newest day first, where flushed session turns are summarised to their
requests and take at most a quarter; and what the notes say about the project the session
runs in, when its folder's name says more than the workspace's own. After a compaction
(``source: "compact"``) the last days' notes come first: what was flushed just before is
what the model just lost. Statements are shown as written (a bold name or key before the
colon kept), in reading order, each cited by its lines; a day's near-identical lines are
one, with their count; a nested bullet comes with its parent and a line that introduces a
code block or table with it; nothing is shown twice and nothing is cut.
``recall`` (``UserPromptSubmit``): a search with the prompt, above the relevance floor;
time words narrow its matches and admit no note for its date alone.
Nothing to say is an empty text: the host then adds nothing.

Both read through a ``memd.agent.view`` (the daemon's memory, the index on disk, or the
files alone), so a hook answers the same way whichever could be reached in time.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from memd.agent import CONTEXT_BUDGET, RECALL_BUDGET
from memd.agent.fit import Part, Said, Shown, fit
from memd.agent.items import Item, items
from memd.agent.replaced import Replaced, now_said, replaced_lines
from memd.agent.resultline import flat, result_line
from memd.agent.view import LiveView, MemoryView
from memd.review.durable import durability
from memd.review.statements import Statement, words
from memd.search.notedates import days_named
from memd.sources.layout import daily_date

if TYPE_CHECKING:  # a hook reading the index itself never loads the daemon's stack
    from memd.memory import Memory

_RECENT_DAYS = 3
# A prompt's recall waits at most this long for the query's vector (a model busy with a
# back-fill's batch): past it the daemon answers by keyword, within the hook's budget.
RECALL_EMBED_WAIT_S = 0.3
_TASK_DAYS = 14  # open tasks are looked for in this many days' notes
_AHEAD_DAYS = 60  # "coming up": a day named at most this far ahead
_AHEAD_FROM_DAYS = 21  # ... in notes written at most this long ago
_TURNS_SHARE = 0.25  # session turns take at most this share of "Recent notes"
_REQUESTS = 4  # a day's session requests shown at most
_UNDATED = 20  # undated notes read for what is coming up, the latest changed
_ALIKE = 0.8  # share of their words (numbers aside) two near-identical lines share


def context(
    memory: Memory | MemoryView,
    cwd: str | None = None,
    source: str | None = None,
    budget: int = CONTEXT_BUDGET,
    today: dt.date | None = None,
) -> Said:
    """Memory for a session's start: MEMORY.md, what is coming up, open tasks, recent
    notes and the project (``cwd``), read as of ``today`` (default: the config's clock)."""
    view = _view(memory)
    today = today or view.clock().date()
    root = view.root
    core = _note_items(root, view.core_file)
    dailies = _dailies(root, today)
    shown = {i.statement.path for _, found in dailies[:_RECENT_DAYS] for i in found}
    replaced = replaced_lines(view, sorted({view.core_file, *shown}))  # what shows as written
    parts = session_parts(view, core, dailies, today, cwd, source, replaced)
    return fit(parts, budget)


def session_parts(
    view: MemoryView,
    core: list[Item],
    dailies: list[tuple[str, list[Item]]],
    today: dt.date,
    cwd: str | None,
    source: str | None,
    replaced: Replaced | None = None,
) -> list[Part]:
    """The parts of a session's start in the order they are chosen (and shown); a line a
    later note replaced says what it says now (``replaced``)."""
    replaced = replaced or {}
    core_part = Part("From MEMORY.md", _core_lines(core, replaced), 0.4)
    latest = dailies[:_RECENT_DAYS] if dailies else []
    recent = Part("Recent notes", _recent_lines(latest, replaced), 0.3, _TURNS_SHARE)
    undated = _undated(view.root, today)  # read for what they name to come, nothing else
    coming = Part("Coming up", _coming_lines(core, [*dailies, *undated], today), 0.1)
    tasks = Part("Open tasks", _task_lines(core, dailies, today), 0.1)
    parts = [core_part, coming, tasks, recent]
    if source == "compact":  # what was flushed just before the compaction, first
        recent.share, core_part.share = 0.4, 0.3
        parts = [recent, core_part, coming, tasks]
    project = _project(view, cwd)
    if project is not None:
        parts.append(project)
    waiting = view.waiting()
    if waiting:  # the agent can settle them (memory_review) when the person asks
        word = "proposal waits" if waiting == 1 else "proposals wait"
        line = f"{waiting} memory review {word}: memory_review"
        parts.append(Part("Review", [Shown((0,), line)], 0.05))
    return parts


def recall(
    memory: Memory | MemoryView, prompt: str, budget: int = RECALL_BUDGET, now: str | None = None
) -> Said:
    """The notes above the relevance floor that answer ``prompt``, best first. Time words
    ("last week") narrow the matches to those days; a note is never let in for its date
    alone (``narrow_window``)."""
    if not prompt.strip():
        return Said("", 0, 0)
    view = _view(memory)
    found = view.search(prompt[:2000], max_results=5, narrow_window=True, now=now,
                        embed_wait_s=RECALL_EMBED_WAIT_S)  # fmt: skip
    lines = [Shown((n,), result_line(r)) for n, r in enumerate(found) if flat(r.snippet)]
    return fit([Part("Notes that may help", lines, 1.0)], budget)


def _view(memory: Memory | MemoryView) -> MemoryView:
    """A ``Memory`` seen through ``LiveView``; a view as it is."""
    return memory if hasattr(memory, "core_file") else LiveView(memory)  # type: ignore[arg-type]


def _note_items(root: Path, rel: str) -> list[Item]:
    """The items of one note worth a model's attention (a done task is not)."""
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = items(rel, text, daily_date(PurePath(rel).name))
    return [i for i in found if i.statement.task != "done"]


def _dailies(root: Path, today: dt.date) -> list[tuple[str, list[Item]]]:
    """The daily notes' items by day (a day may have several files: ``2026-11-26.md``,
    ``2026-11-26-standup.md``), newest day first, none after ``today``."""
    try:
        names = os.listdir(root / "memory")
    except OSError:
        return []
    by_day: dict[str, list[str]] = {}
    for name in names:
        # Grouped by the date the name starts with, as text: of a vault of years only the
        # days used below are read as dates (a name in other digits is read at once).
        key = name[:10] if name[:10].isascii() else daily_date(name)
        if key is not None and name.endswith(".md"):
            by_day.setdefault(key, []).append(name)
    # The newest few days for "Recent notes" however old, and for tasks and what is coming
    # up the days of the last weeks: a vault of years is not read at each session start.
    since = (today - dt.timedelta(days=max(_TASK_DAYS, _AHEAD_FROM_DAYS))).isoformat()
    last = today.isoformat()
    days: list[tuple[str, list[Item]]] = []
    for day in sorted(by_day, reverse=True):
        if len(days) >= _RECENT_DAYS and day < since:
            break
        dated = sorted(n for n in by_day[day] if daily_date(n) == day)
        if day > last or not dated:
            continue
        found: list[Item] = []
        for name in dated:
            found += _note_items(root, f"memory/{name}")
        days.append((day, found))
    return days


def _undated(root: Path, today: dt.date) -> list[tuple[str, list[Item]]]:
    """Notes in ``memory/`` and its folders without a date in their name (a brief, a
    project's page) changed in the last weeks, newest first, each with the day it last
    changed: what they name still to come is coming up too ("Deliverables due 11
    December" in a brief). Daily notes are passed over by name: a vault of years of them
    costs nothing more."""
    since = (today - dt.timedelta(days=_AHEAD_FROM_DAYS)).isoformat()
    found: list[tuple[str, str]] = []
    try:
        top = list(os.scandir(root / "memory"))
        for entry in top:
            if daily_date(entry.name) is not None:
                continue
            inner = list(os.scandir(entry.path)) if entry.is_dir() else [entry]
            for e in inner:
                if e.name.endswith(".md") and daily_date(e.name) is None and e.is_file():
                    day = dt.date.fromtimestamp(e.stat().st_mtime).isoformat()
                    if since <= day <= today.isoformat():
                        found.append((day, os.path.relpath(e.path, root)))
    except OSError:
        return []
    found.sort(reverse=True)
    return [(day, _note_items(root, rel)) for day, rel in found[:_UNDATED]]


def _core_lines(core: list[Item], replaced: Replaced) -> list[Shown]:
    """MEMORY.md's statements, its owner's emphasis first, then the weightiest; shown in
    reading order. Tasks go to "Open tasks"."""
    weight = {id(i): durability(i.statement.text, i.statement.heading)[0] for i in core}
    ranked = sorted(core, key=lambda i: (not i.emphasis, -weight[id(i)]))
    return [_shown(i, (i.statement.line,), replaced=replaced) for i in ranked
            if not i.statement.task]  # fmt: skip


def _recent_lines(dailies: list[tuple[str, list[Item]]], replaced: Replaced) -> list[Shown]:
    """The last days' statements: chosen newest day first and its latest lines first,
    shown newest day first and each day in reading order; near-identical lines of a day
    are one line with their count; a flushed session's turns are its requests."""
    out: list[Shown] = []
    for age, (_, found) in enumerate(dailies):
        notes = [i for i in found if not i.statement.task and not i.turn]
        alike = _alike_items(notes)
        out += [_shown(i, (age, i.statement.line), n, dated=True, replaced=replaced)
                for i, n in reversed(alike)]  # fmt: skip
        for path in dict.fromkeys(i.statement.path for i in found if i.turn):
            turns = [i for i in found if i.turn and i.statement.path == path]
            asked = [i for i in turns if _is_request(i)]
            decided = [i for i in turns if not _is_request(i) and _decides(i)]
            if asked or decided:
                out.append(_requests(asked, decided, age))
    return out


def _decides(item: Item) -> bool:
    """A turn that states a decision ("decided to", "we'll go with", "agreed")."""
    return "a decision" in durability(item.statement.text, item.statement.heading)[1]


def _requests(asked: list[Item], decided: list[Item], age: int) -> Shown:
    """One note's flushed session turns as one line: what was asked and what was decided,
    newest first, each whole."""
    newest = asked[::-1][:_REQUESTS]
    settled = decided[::-1][:_REQUESTS]
    said = []
    if newest:
        more = f" (+{len(asked) - len(newest)} more)" if len(asked) > len(newest) else ""
        said.append("asked: " + "; ".join(_request_text(i) for i in newest) + more)
    if settled:
        said.append("decided: " + "; ".join(_request_text(i) for i in settled))
    shown = newest + settled
    first = min(i.statement.line for i in shown)
    last = max(i.statement.last for i in shown)
    path, date = shown[0].statement.path, shown[0].statement.date
    cite = f"{path}#L{first}-L{last}" if last > first else f"{path}#L{first}"
    text = f"[{date}] in sessions, {'; '.join(said)} ({cite})"
    return Shown((age, last), text, (path, first, last), turn=True)


def _request_text(item: Item) -> str:
    s = item.statement
    text = s.text if s.speaker else s.text.split(":", 1)[-1]
    return text.strip().rstrip(".;")


def _is_request(item: Item) -> bool:
    """A turn that says what the person asked for (a flushed ``asked:`` line, a user's
    turn): the summary of a session; answers and transcript pointers are left out."""
    s = item.statement
    who = (s.speaker or s.text.split(":", 1)[0]).strip().lower()
    return who in ("asked", "user", "human", "me")


def _coming_lines(
    core: list[Item], dailies: list[tuple[str, list[Item]]], today: dt.date
) -> list[Shown]:
    """Statements that name a day ahead of ``today`` (within ``_AHEAD_DAYS``), read as
    written on their note's day; the soonest first. A time that has begun ("from March"
    on 9 March) is under way, not coming up."""
    last = today + dt.timedelta(days=_AHEAD_DAYS)
    written_after = (today - dt.timedelta(days=_AHEAD_FROM_DAYS)).isoformat()
    out: list[Shown] = []
    notes = [(today, i) for i in core]
    for day, found in dailies:
        if day >= written_after:
            notes += [(dt.date.fromisoformat(day), i) for i in found]
    for written, i in notes:
        if i.turn or i.statement.task == "done":
            continue
        ahead = [lo for lo, hi in days_named(i.statement.text, written)
                 if lo is not None and hi is not None and today < lo <= last]  # fmt: skip
        if ahead:
            when = min(ahead)
            shown = _shown(i, (when.isoformat(), i.statement.path, i.statement.line))
            shown.text = f"[{when.isoformat()}] {shown.text}"
            out.append(shown)
    return sorted(out, key=lambda s: s.place)


def _task_lines(
    core: list[Item], dailies: list[tuple[str, list[Item]]], today: dt.date
) -> list[Shown]:
    """Open tasks of MEMORY.md and of the last days' notes, newest first."""
    since = (today - dt.timedelta(days=_TASK_DAYS)).isoformat()
    out = [_shown(i, (0, i.statement.line)) for i in core if i.statement.task == "open"]
    for age, (day, found) in enumerate(dailies):
        if day < since:
            break
        out += [_shown(i, (age + 1, i.statement.line), dated=True) for i in found
                if i.statement.task == "open" and not i.turn]  # fmt: skip
    return out


def _shown(
    item: Item, place: tuple, alike: int = 1, dated: bool = False, replaced: Replaced | None = None
) -> Shown:
    """An item as a candidate line, with its parent (shown above it) and its block."""
    s = item.statement
    text = _line_as_written(item, alike) + now_said(s, replaced or {})
    if dated and s.date:
        text = f"[{s.date}] {text}"
    parent = None
    if item.parent is not None and not item.turn:  # a turn's parent: the transcript pointer
        p = item.parent
        parent = _shown(p, (*place[:-1], p.statement.line), dated=dated)
    return Shown(place, text, item.span, item.block, parent, item.turn, item.emphasis)


def _line_as_written(item: Item, alike: int = 1) -> str:
    """``_line``, with a bold label as its owner wrote it (``**Zero tolerance.** No
    secrets in logs.``, ``**Dev Patel:** owns billing``)."""
    s = item.statement
    if s.speaker and item.label:
        plain = Statement(s.path, s.line, s.date, s.heading, f"{item.label} {s.text}",
                          end_line=s.end_line, task=s.task)  # fmt: skip
        return _line(plain, alike)
    return _line(s, alike)


def _alike_items(found: list[Item]) -> list[tuple[Item, int]]:
    """``_alike`` over items."""
    by_statement = {id(i.statement): i for i in found}
    return [(by_statement[id(s)], n) for s, n in _alike([i.statement for i in found])]


def _project(view: MemoryView, cwd: str | None) -> Part | None:
    """What the notes say about the session's project, when its folder's name says more
    than the workspace's own (a session run in the workspace itself is about everything)."""
    if not cwd:
        return None
    where = Path(cwd)
    name = where.name
    if not name or cwd == "/" or where == Path.home() or _inside(where, view.root):
        return None
    if name.lower() == view.folder_name.lower():
        return None
    query = name.replace("-", " ").replace("_", " ")
    found = view.search(query, max_results=4, mode="keyword")  # what reaches the model
    # unasked: strong matches only; by keyword, so every route gives the same answer
    lines = [Shown((n,), result_line(r), (r.path, r.start_line, r.end_line))
             for n, r in enumerate(found)]  # fmt: skip
    return Part(f"About {name}", lines, 0.2) if lines else None


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


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
