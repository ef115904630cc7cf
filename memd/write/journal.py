"""What memd adds to a workspace's notes: flush entries and keyed memories.

Each write is prepared on the caller's thread (checks, and the LLM call that extracts
notes from a transcript) and committed through ``commit`` (the daemon's writer thread),
which appends or replaces lines with ``memd.write.writer`` and indexes the file at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from memd.config import Config
from memd.errors import MemdError, StoreError
from memd.index.index import Index
from memd.log import get_logger
from memd.records import (
    FlushAnswer,
    FlushPrompt,
    ForgetAnswer,
    KeyEntry,
    KeyList,
    StoreAnswer,
    Written,
)
from memd.sources.layout import Workspace
from memd.store.ledger import FlushLedger
from memd.write.extract import extract_notes, flush_prompt
from memd.write.groupcommit import GroupCommit
from memd.write.writer import (
    Entry,
    append_under,
    check_one_line,
    flush_entries,
    forget_key,
    list_keys,
    store_key,
    sync_files,
)

log = get_logger()
T = TypeVar("T")


@dataclass(frozen=True)
class _Flush:
    """A flush checked and prepared on its caller's thread, waiting for the writer."""

    root: Path
    entries: list[Entry]
    flush_id: str | None
    today: str
    clock: str
    core_clock: str  # MEMORY.md's name has no date, so its headings carry one


class Journal:
    """The write methods of one workspace."""

    def __init__(
        self,
        config: Config,
        workspace: Workspace,
        db: Index,
        commit: Callable[[Callable[[], T]], T],
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.db = db
        self._commit = commit
        self._ledger: FlushLedger | None = None
        self._ledger_lock = threading.Lock()
        self._flushes = GroupCommit(commit, self._write_flushes)

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()

    def flush(
        self,
        entries: list[Entry],
        flush_id: str | None = None,
        date: str | None = None,
        transcript: str | list[dict] | None = None,
    ) -> FlushAnswer:
        """Append entries to today's note (or ``date``'s) or the core file, once per
        ``flush_id``; searchable by keyword when this returns. With ``transcript`` and
        ``flush.llm``, the notes a model extracts from it are appended too."""
        for n, entry in enumerate(entries):
            if entry.title is not None:
                check_one_line(f"entries[{n}].title", entry.title)
        if flush_id is not None and (first := self._flushed(flush_id)):
            return first
        root = self._root()
        now = self.config.flush.now()
        today = date or now.date().isoformat()
        llm = self.config.flush.llm
        if transcript is not None and llm is not None:
            # A network call of up to a minute: made here, before taking the writer.
            prompt = self.flush_prompt(today)
            if notes := extract_notes(llm, prompt.system, prompt.user, transcript):
                entries = [*entries, Entry(notes, title="memory flush")]

        request = _Flush(
            root, entries, flush_id, today, now.strftime("%H:%M"), now.strftime("%Y-%m-%d %H:%M")
        )
        return self._flushes.submit(request)

    def _write_flushes(self, batch: list[_Flush]) -> list[FlushAnswer | Exception]:
        """On the writer: every waiting flush appended, all that was written indexed at
        once (group commit), then each ``flush_id`` recorded."""
        done: list[tuple[list[Written], list[dict]] | FlushAnswer | Exception | int] = []
        first_of: dict[str, int] = {}
        for n, request in enumerate(batch):
            if request.flush_id is not None:
                if request.flush_id in first_of:  # twice in one batch: the first answers
                    done.append(first_of[request.flush_id])
                    continue
                if first := self._flushed(request.flush_id):  # raced in while preparing
                    done.append(first)
                    continue
                first_of[request.flush_id] = n
            target = partial(self.workspace.target, today=request.today)
            try:
                done.append(
                    flush_entries(
                        request.root,
                        request.entries,
                        target,
                        request.clock,
                        request.core_clock,
                        sync=False,
                    )
                )
            except Exception as exc:  # this flush's failure, not its batch's
                done.append(exc)
        # One sync per file for the whole batch, before anyone is told it is written.
        paths = {w.path for d in done if isinstance(d, tuple) for w in d[0]}
        unsynced = sync_files(self.workspace.path, paths)
        done = [
            next((unsynced[w.path] for w in d[0] if w.path in unsynced), d)
            if isinstance(d, tuple)
            else d
            for d in done
        ]
        warning = self._reindex_written(
            {w.path for d in done if isinstance(d, tuple) for w in d[0]}
        )
        answers: list[FlushAnswer | Exception] = []
        for request, d in zip(batch, done, strict=True):
            if isinstance(d, tuple):
                written, skipped = d
                answer = FlushAnswer(written, skipped, False, warning if written else None)
                if request.flush_id is not None and (
                    problem := self._record(request.flush_id, answer)
                ):
                    # Written is written: an error now would make a retry write it twice.
                    answer = FlushAnswer(written, skipped, False, _join(answer.warning, problem))
                answers.append(answer)
            elif isinstance(d, int):
                first = answers[d]
                answers.append(
                    first
                    if isinstance(first, Exception)
                    else FlushAnswer(first.written, first.skipped, True, first.warning)
                )
            else:
                answers.append(d)
        return answers

    def store(self, key: str, content: str, category: str = "core") -> StoreAnswer:
        """Keep one ``- **key**: content`` line in the category's file."""
        _check_key(key, category)
        root = self._root()
        rel, header = self.workspace.target(category, self._today())

        def write() -> StoreAnswer:
            written, replaced = store_key(root, rel, header, key, content)
            warning = self._reindex_written({rel})
            return StoreAnswer(
                written.path, written.start_line, written.end_line, replaced, warning
            )

        return self._commit(write)

    def promote(self, line: str, heading: str) -> tuple[Written, bool]:
        """Append ``line`` to MEMORY.md under ``## heading``, once (a line already there
        is not written again: False)."""
        check_one_line("text", line)
        root = self._root()
        rel, header = self.workspace.target("core", self._today())

        def write() -> tuple[Written, bool]:
            written, new = append_under(root, rel, header, heading, line)
            if new:
                self._reindex_written({rel})
            return written, new

        return self._commit(write)

    def forget(self, key: str, category: str | None = None) -> ForgetAnswer:
        """Remove the key's line (from one category's file, or from wherever it is)."""
        _check_key(key, category)
        root = self._root()
        rels = (
            [self.workspace.target(category, self._today())[0]]
            if category
            else [entry.path for entry in self.list().entries if entry.key == key]
        )

        def write() -> ForgetAnswer:
            removed = [rel for rel in dict.fromkeys(rels) if forget_key(root, rel, key)]
            return ForgetAnswer(bool(removed), removed, self._reindex_written(set(removed)))

        return self._commit(write)

    def remember_vectors(self, entries: Sequence[tuple[bytes, bytes]]) -> None:
        """Keep vectors of texts no chunk holds (a review's statements) in the embedding
        cache, so the next review, even after a restart, does not embed them again."""
        self._commit(lambda: self.db.save_cached(entries))

    def list(self, category: str | None = None) -> KeyList:
        """Every stored key with its file and line (one category, or all memory files)."""
        root = self._root()
        if category:
            rels = [self.workspace.target(category, self._today())[0]]
        else:
            rels = [e.path for e in self.workspace.scan() if e.source != "extra"]
        entries = [
            KeyEntry(
                e["key"], e["path"], e["line"], self.workspace.category_of(e["path"]), e["value"]
            )
            for e in list_keys(root, rels)
        ]
        return KeyList(entries, len(entries))

    def flush_prompt(self, date: str | None = None) -> FlushPrompt:
        """The prompt an agent runs to decide what to flush before compacting."""
        day = date or self._today()
        return flush_prompt(day, self.workspace.daily_note(day))

    def _today(self) -> str:
        return self.config.flush.now().date().isoformat()

    def _root(self) -> Path:
        self.workspace.config.check_folder()
        return self.workspace.path

    def _reindex_written(self, rels: set[str]) -> str | None:
        """Index what was just written; a failure here must not turn a written entry into
        an error (a retry would write it twice), so it comes back as a warning."""
        if not rels:
            return None
        try:
            self.db.sync_paths([str(self.workspace.path / rel) for rel in rels])
        except MemdError as exc:
            log.warning("written_not_indexed", paths=sorted(rels), error=str(exc))
            return f"written, but not searchable until the index catches up: {exc}"
        return None

    def _flushed(self, flush_id: str) -> FlushAnswer | None:
        """The first answer for ``flush_id``; None if new, or if the ledger cannot be read
        (then a text already in its file is still skipped, so nothing is written twice)."""
        try:
            first = self._flush_ledger().get(self.workspace.name, flush_id)
        except StoreError as exc:
            log.warning("flush_ledger_unreadable", flush_id=flush_id, error=str(exc))
            return None
        return FlushAnswer.from_dict(first, duplicate=True) if first else None

    def _record(self, flush_id: str, answer: FlushAnswer) -> str | None:
        """Keep the answer for ``flush_id``; a warning if the ledger cannot take it."""
        try:
            self._flush_ledger().put(self.workspace.name, flush_id, answer.as_dict())
        except StoreError as exc:
            log.warning("flush_not_recorded", flush_id=flush_id, error=str(exc))
            return (
                f"written, but flush_id {flush_id!r} could not be recorded ({exc}); "
                "a retry with the same text is still skipped as already in the file"
            )
        return None

    def _flush_ledger(self) -> FlushLedger:
        with self._ledger_lock:
            if self._ledger is None:
                self._ledger = FlushLedger(self.config.state_dir)
            return self._ledger


def _join(*warnings: str | None) -> str | None:
    return "; ".join(w for w in warnings if w) or None


def _check_key(key: str, category: str | None) -> None:
    """Keys and categories become parts of lines and file names: one line each."""
    check_one_line("key", key)
    if category is not None:
        check_one_line("category", category)
