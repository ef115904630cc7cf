"""What the page reads from one workspace's index, beyond the protocol's methods: the days
and their notes (the timeline), and the updates memd found among the notes (what is
current). Plain blocking reads: the page runs them on a worker thread.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memd.errors import MemdError
from memd.sources.layout import is_session_path

if TYPE_CHECKING:
    from memd.memory import Memory
    from memd.store.rows import Supersession

WEEK = 7
PER_DAY = 25  # of a day's notes, its sessions and its flushes, each: the timeline lists these
# The heading a flush puts over each entry it appends (memd.write.writer): "## HH:MM — title".
_FLUSHED = re.compile(r"^## (\d{2}:\d{2}) — (.*)$")
_MOST_LINES = 20_000
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[.\]\s+)?")  # a list item's bullet or box


@dataclass
class Day:
    """One day of the timeline: its daily note, the other notes changed that day, the
    session transcripts of that day, and the flushes written into it."""

    date: str
    daily: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    flushes: list[tuple[str, str]] = field(default_factory=list)  # (citation, "HH:MM title")
    unlisted: int = 0  # notes, sessions and flushes past the most a day lists


@dataclass
class Update:
    """A statement a later one replaced: both cited, what each says, and whether it was
    found by subject and value alone (``likely``)."""

    old: str  # citation
    old_text: str
    new: str  # citation
    new_text: str
    likely: bool
    day: str  # the newer statement's day


def _day_of(date: str | None, modified: float | None, zone: dt.tzinfo | None) -> str | None:
    if date:
        return date
    if modified is None:
        return None
    return dt.datetime.fromtimestamp(modified, zone).date().isoformat()


def timeline(
    memory: Memory, before: str | None = None, days: int = 14, day: str | None = None
) -> tuple[list[Day], str | None]:
    """The ``days`` newest days that have notes, before ``before`` (YYYY-MM-DD, None:
    from today), newest first, each listing at most ``PER_DAY`` of each kind; and the day
    to continue from (None: no older days). With ``day``: that day alone, all of it."""
    times = memory.db.read(lambda store: store.file_times())
    zone = memory.config.flush.now().tzinfo
    by_day: dict[str, list[tuple[str, str | None, str | None]]] = {}
    for path, (source, date, modified) in times.items():
        when = _day_of(date, modified, zone)
        if when is not None and (before is None or when < before) and day in (None, when):
            by_day.setdefault(when, []).append((path, source, date))
    ordered = sorted(by_day, reverse=True)
    most = None if day else PER_DAY
    shown = []
    for when in ordered[:days]:  # a vault of years has thousands of days: only these are built
        entry = Day(when)
        for path, source, date in sorted(by_day[when]):
            if is_session_path(path):
                entry.sessions.append(path)
            elif source == "daily" and date:
                entry.daily.append(path)
            else:
                entry.notes.append(path)
        entry.flushes = [f for path in entry.daily for f in _flushes(memory, path)]
        # A vault copied or synced today has thousands of notes changed today: a day lists
        # a few of each kind (the newest of its flushes) and says how many more it has.
        if most is not None:
            entry.flushes.reverse()
            for kind in ("notes", "sessions", "flushes"):
                items = getattr(entry, kind)
                entry.unlisted += len(items[most:])
                setattr(entry, kind, items[:most])
            entry.flushes.reverse()
        shown.append(entry)
    more = shown[-1].date if len(ordered) > days else None
    return shown, more


def _flushes(memory: Memory, path: str) -> list[tuple[str, str]]:
    """The entries flushes appended to a daily note, each cited at its heading."""
    try:
        lines = memory.get(path, 1, _MOST_LINES).text.splitlines()
    except (MemdError, OSError):
        return []
    found = []
    for n, line in enumerate(lines, 1):
        if m := _FLUSHED.match(line):
            found.append((f"{path}#L{n}-L{n}", f"{m.group(1)} {m.group(2)}"))
    return found


def _text(memory: Memory, citation: str) -> str:
    """The lines a citation names, as the file says them now ("" when gone)."""
    path, _, lines = citation.partition("#L")
    start, _, end = lines.partition("-L")
    try:
        first = int(start)
        count = int(end or start) - first + 1
        text = memory.get(path, first, max(count, 1)).text.strip()
    except (MemdError, ValueError, OSError):
        return ""
    return _MARKER.sub("", text)


def _citation(row: Supersession) -> str:
    return f"{row.path}#L{row.start_line}-L{row.end_line}"


def updates(memory: Memory, week_only: bool = True) -> list[Update]:
    """The updates among the notes as the index keeps them, newest first; with
    ``week_only``, those whose newer statement is of the last seven days."""
    rows = memory.db.read(lambda store: store.superseded_at(None))
    times = memory.db.read(lambda store: store.file_times())
    now = memory.config.flush.now()
    since = (now.date() - dt.timedelta(days=WEEK - 1)).isoformat()
    out = []
    for row in rows:
        newer_path = row.by.partition("#L")[0]
        _, date, modified = times.get(newer_path, (None, None, None))
        day = _day_of(date, modified, now.tzinfo) or ""
        if week_only and day < since:
            continue
        old = _citation(row)
        out.append(Update(old, _text(memory, old), row.by, row.now or _text(memory, row.by),
                          row.likely, day))  # fmt: skip
    out.sort(key=lambda u: (u.day, u.new), reverse=True)
    return out


def paths(memory: Memory) -> list[str]:
    """Every indexed file's path (the notes a wikilink may name)."""
    return list(memory.db.read(lambda store: store.file_times()))


def relations(memory: Memory, path: str) -> tuple[list[Supersession], list[Supersession]]:
    """Of one note: its statements later ones replaced, and the statements elsewhere its
    own replaced."""
    rows = memory.db.read(lambda store: store.superseded_at(None))
    replaced = sorted((r for r in rows if r.path == path), key=lambda r: r.start_line)
    replacing = [r for r in rows if r.by.partition("#L")[0] == path]
    return replaced, replacing
