"""What is current in one workspace: its notes' statements and the updates among them,
kept in step with the files as they change.

After each index pass the files that changed are read again (only those), their
statements taken, and the updates among all statements found anew
(``memd.review.updates``); what they supersede goes to the index, through the writer,
where search, context and recall read it. A statement's time is its daily note's date;
a statement of MEMORY.md or of an undated note has the time memd first saw it (kept in
the index across restarts), and those there before memd first looked count as oldest.
An edit that removes the newer statement brings the older one back at the next pass.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import MemdError
from memd.index.prepare import Reader
from memd.index.workers import collector_paused, in_workers
from memd.log import get_logger
from memd.records import IndexReport
from memd.review import changes, compounds, judge, judge_weights, latest, updates, values, words
from memd.review import statements as statements_module
from memd.review.latest import current
from memd.review.meaning import Meaning
from memd.review.statements import Statement
from memd.review.taken import (
    Taken,
    code_digest,
    load_kept,
    save_kept,
    stamp,
    take_apart,
    take_file,
)
from memd.review.updates import Update, pair
from memd.review.values import Said
from memd.sources.entries import holdable
from memd.sources.layout import FileEntry, Workspace, is_note
from memd.store.rows import Supersession

if TYPE_CHECKING:
    from memd.index.index import Index

log = get_logger()

_STARTED = "currency_started"  # meta: when memd first read this workspace's statements
# meta: the index generation (and meaning's model) a whole refresh last saw, with nothing
# left waiting for meaning: while the index stays at it, what was saved is still right.
_DONE = "currency_done"
# The modules whose code decides what updates are found.
_FINDS = (statements_module, values, words, changes, compounds, judge, judge_weights, updates,
          latest)  # fmt: skip
_NOW_CHARS = 300
_KEEP_SHARE = 20  # what was kept is kept anew once 1 note in this many differs from it


@dataclass
class _File:
    stamp: tuple[int, int]
    said: list[tuple[Statement, Said]]  # those that can state a fact, taken apart
    digests: dict[int, str]  # line -> lines_digest of the statement's lines
    times: dict[int, str]  # line -> when (undated notes: first seen)


class Currency:
    """The updates among one workspace's statements, kept current by ``refresh``."""

    def __init__(
        self,
        workspace: Workspace,
        index: Index,
        commit: Callable[[Callable[[], None]], None],
        now: Callable[[], dt.datetime],
    ) -> None:
        self.workspace, self._index, self._commit, self._now = workspace, index, commit, now
        self._lock = threading.Lock()
        self._files: dict[str, _File] = {}
        self._seen: dict[tuple[str, str], str] | None = None
        self._started: str | None = None
        self._loaded = False
        self._taken: dict[str, Taken] = {}  # notes an index pass read for us, by path
        self._command = False  # a command's one refresh (``catch_up``), not a daemon's
        self._kept = Path(f"{index.path}.statements")  # ``memd.review.taken``: between runs
        self.updates: list[Update] = []
        self.latest: dict[tuple[str, int], Update] = {}  # superseded -> what replaced it last
        self.closed = False  # set before the index closes: a refresh in flight reads no more
        self._meaning: Meaning | None = None
        if index.embedder.enabled and index.embedder.cosine_band is not None:
            self._meaning = Meaning(index, lambda kept: commit(lambda: index.save_cached(kept)))

    def close(self) -> None:
        """No refresh reads or writes the index from now on (it is about to close)."""
        self.closed = True

    def refresh(self, paths: Iterable[str] | None = None) -> bool:
        """Read the notes at these absolute paths again (all, with None or at the first
        call) and find the updates anew if any changed; whether anything did. A failure
        is logged: it costs the labels on superseded results, never the index."""
        return self._guarded(lambda: self._refresh(paths))

    def catch_up(self, taken: dict[str, Taken] | None = None) -> bool:
        """``refresh()`` of every note, unless the index is as the last whole refresh saw
        it (what it saved is then still right: a ``memd index`` that changed nothing
        reads no note). ``taken``: notes an index pass just took apart (``take_apart``),
        by path; those not changed since are not read again."""
        # A command's own refresh reads what it must in worker processes and keeps the notes
        # for the next run; a daemon's stays in-process and keeps none (a pool its stop cut
        # short left semaphores to its resource tracker; writing the file held the lock on
        # Python while its first searches waited).
        self._command = True
        # Loading the kept statements makes some 10^6 long-lived objects, none in a cycle:
        # the cyclic collector, walking them at each full collection, took half that time.
        with collector_paused():
            return self._guarded(lambda: self._refresh(None, taken or {}, skip_done=True))

    def index(self, sync: Callable[[Reader, dict[str, Any]], IndexReport]) -> IndexReport:
        """An index pass, ``sync(reader, read)``, whose workers also take apart each note
        they read, then ``catch_up`` with what they took: each note read once. Python's
        cyclic collector is paused meanwhile (``collector_paused``): what they took, some
        10^5 small objects for 5,000 notes and none in a cycle, lives until it is paired."""
        taken: dict[str, Any] = {}
        with collector_paused():
            report = sync(take_apart, taken)
            if not report.cancelled:
                self.catch_up(taken)
        return report

    def waiting(self) -> bool:
        """Whether ``catch_up`` has work: the index is not as the last whole refresh saw
        it (``memd index`` hands that work to a process of its own, ``memd.cli.finish``)."""
        saved = self._index.read(lambda store: store.get_meta(_DONE))
        return saved is None or saved != self._done()

    def _guarded(self, refresh: Callable[[], bool]) -> bool:
        try:
            return refresh()
        except (MemdError, OSError) as exc:
            log.warning("currency_failed", workspace=self.workspace.name, error=str(exc))
            return False

    def _done(self) -> str:
        """What ``_DONE`` holds after a whole refresh of the index as it is now."""
        generation = self._index.read(lambda store: store.get_meta("generation", "0"))
        key = self._index.vector_key if self._meaning else "words"
        return f"{generation} {key} {_finder()}"

    def _refresh(
        self, paths: Iterable[str] | None, taken: dict[str, Taken] | None = None,
        skip_done: bool = False,
    ) -> bool:  # fmt: skip
        with self._lock:
            if self.closed:
                return False
            started = time.perf_counter()
            whole = paths is None or not self._loaded
            done = self._done() if whole else None
            saved = self._index.read(lambda s: s.get_meta(_DONE)) if skip_done else None
            if not self._loaded and saved is not None and saved == done:
                return False  # the index is as the last whole refresh saw it
            # What an earlier run took apart (used where the notes are as they were then).
            before = load_kept(self._kept) if not self._loaded else {}
            self._taken = {**before, **(taken or {})}
            entries, gone = self._changed(paths)
            waiting = self._meaning is not None and self._meaning.pending
            if not entries and not gone and self._loaded and not waiting:
                return False
            first = self._loaded is False and self._begun() is None
            fresh_seen, read_now = self._read(entries, gone, first)
            if whole and self._command and _worth_keeping(before, self._files):  # next run
                files = {p: Taken(f.stamp, f.said, f.digests) for p, f in self._files.items()}
                save_kept(self._kept, files)
            self.updates = self._pair()
            self.latest = current(self.updates)
            rows = self._rows()
            self._loaded = True
            gone_paths, begun = sorted(gone), self._started if first else None
            if self.closed:  # the daemon reloaded meanwhile: this index is closed
                return False
            done = None if self.pending else done
            self._commit(
                lambda: self._index.save_currency(rows, fresh_seen, gone_paths, begun, done)
            )
            log.debug("currency_refreshed", workspace=self.workspace.name, files=len(entries),
                      read=read_now,
                      updates=len(self.updates), superseded=len(rows),
                      ms=round((time.perf_counter() - started) * 1000))  # fmt: skip
            return True

    def _pair(self) -> list[Update]:
        taken = [sd for f in self._files.values() for sd in f.said]
        updates = pair(taken, self._when, self._meaning)
        if self._meaning is not None and self._meaning.fill():
            # Pairs the words alone could not settle, asked again with their meaning (the
            # rest of a large first batch at the next refresh).
            updates = pair(taken, self._when, self._meaning)
        return updates

    @property
    def pending(self) -> bool:
        """Whether statements wait for their meaning: a refresh with no edit has work."""
        return self._meaning is not None and self._meaning.pending

    def statements(self) -> list[Statement]:
        """Every statement that can state a fact, as last read, in no particular order."""
        return [s for f in self._files.values() for s, _ in f.said]

    def _begun(self) -> str | None:
        """When memd first read this workspace's statements (None: never)."""
        if self._seen is None and not self.closed:
            self._seen = self._index.read(lambda store: store.statements_seen())
            self._started = self._index.read(lambda store: store.get_meta(_STARTED))
        return self._started

    def _changed(self, paths: Iterable[str] | None) -> tuple[list[FileEntry], set[str]]:
        if paths is None or not self._loaded:
            found = {e.path: e for e in self.workspace.scan() if e.source != "extra"}
            gone = set(self._files) - set(found)
        else:
            found, gone = {}, set()
            for path in paths:
                located = self.workspace.locate(path) if is_note(path) else None
                if located is None:
                    continue
                shown, entry = located
                if not holdable(shown):  # the index names it among the files it skipped
                    continue
                if entry is None:
                    gone |= {shown} & set(self._files)
                elif entry.source != "extra":
                    found[shown] = entry
        changed = [
            e
            for e in found.values()
            if (f := self._files.get(e.path)) is None or f.stamp != stamp(e)
        ]
        return changed, gone

    def _read(
        self, entries: Sequence[FileEntry], gone: set[str], first: bool
    ) -> tuple[list[tuple[str, str, str]], int]:
        """Take the statements of ``entries`` (and forget ``gone``); the first-seen rows to
        keep for undated notes' new statements (``first``: all predate memd, oldest), and
        how many notes were read from disk (the rest were taken apart already)."""
        self._begun()
        assert self._seen is not None
        for path in gone:
            self._files.pop(path, None)
        now = self._now().isoformat(timespec="seconds")
        if first:
            self._started = now
        fresh: list[tuple[str, str, str]] = []
        taken, self._taken = self._taken, {}
        unread = [e for e in entries if (t := taken.get(e.path)) is None or t.stamp != stamp(e)]
        # Many notes (every one, at the first run or a new statement reader): read in worker
        # processes, on both cores.
        read = in_workers(take_file, unread, None if self._command else 1)
        taken.update(zip([e.path for e in unread], read, strict=True))
        for e in entries:
            got = taken.get(e.path)
            if got is None:  # gone since the walk: the next pass has it right
                self._files.pop(e.path, None)
                continue
            times: dict[int, str] = {}
            if e.date is None:
                for line, digest in got.digests.items():
                    key = (e.path, digest)
                    if key not in self._seen:
                        self._seen[key] = "" if first else now
                        fresh.append((*key, self._seen[key]))
                    times[line] = self._seen[key]
            self._files[e.path] = _File(got.stamp, got.said, got.digests, times)
        return fresh, len(unread)

    def _when(self, s: Statement) -> str:
        if s.date is not None:
            return s.date
        f = self._files.get(s.path)
        # By day, as a daily note's date: a line first seen today is updated from tomorrow.
        return f.times.get(s.line, "")[:10] if f is not None else ""

    def _rows(self) -> list[Supersession]:
        rows = []
        for (path, line), u in self.latest.items():
            f = self._files.get(path)
            if f is None or line not in f.digests:
                continue
            rows.append(Supersession(path, line, u.older.last, f.digests[line], u.newer.citation,
                                     u.likely, u.newer.text[:_NOW_CHARS], u.confirmed))  # fmt: skip
        return rows


@functools.cache
def _finder() -> str:
    """The update finder's code, as ``_DONE`` records it: a memd that finds updates
    otherwise (an upgrade) finds them anew in an index an older one left, not only after
    an edit."""
    return code_digest(_FINDS)[:16]


def _worth_keeping(before: dict[str, Taken], now: dict[str, _File]) -> bool:
    """Whether the notes as now read differ enough from those kept before to keep them
    anew. Writing every note's statements costs about what reading a tenth of the notes
    does, so a few notes edited since (a one-shot search after an edit) are read again
    next time instead."""
    drift = sum(1 for p, f in now.items() if (b := before.get(p)) is None or b.stamp != f.stamp)
    drift += sum(1 for p in before if p not in now)
    return drift > 0 and (not before or drift * _KEEP_SHARE >= len(now))
