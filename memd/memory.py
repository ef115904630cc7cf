"""The library's face: one workspace's memory, to index, search, read and write.

``Memory`` is a thin facade: search is ``memd.search``, the database ``memd.index``, the
file layout ``memd.workspace``, safe writes ``memd.writer``. It prints nothing and holds
no daemon state: a daemon hands in what it is doing (``activity``), where writes run
(``commit``) and what to do when the database is damaged (``on_corrupt``).

    import memd
    with memd.open() as memory:
        for hit in memory.search("backup policy").results:
            print(hit.citation, hit.score)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from memd import __version__
from memd.config import Config, load_config
from memd.embeddings import Embedder, make_embedder
from memd.errors import MemdError, PathRefused, WorkspaceMissing
from memd.extract import extract_notes, flush_prompt
from memd.index import Index, database_path
from memd.indexer import IndexReport, Progress
from memd.ledger import FlushLedger
from memd.log import get_logger
from memd.records import (
    Activity,
    FlushAnswer,
    FlushPrompt,
    ForgetAnswer,
    KeyEntry,
    KeyList,
    Lines,
    SearchAnswer,
    Status,
    StoreAnswer,
)
from memd.search import Searcher, SearchRequest
from memd.workspace import Workspace, read_lines
from memd.writer import Entry, flush_entries, forget_key, list_keys, store_key

log = get_logger()
T = TypeVar("T")


def _inline(fn: Callable[[], T]) -> T:
    return fn()


class Memory:
    """The index, search and files of one configured workspace."""

    def __init__(
        self,
        config: Config,
        workspace: str | None = None,
        *,
        concurrent_reads: bool = False,
        embedder: Embedder | None = None,
        activity: Callable[[], Activity] | None = None,
        commit: Callable[[Callable[[], T]], T] | None = None,
        on_corrupt: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace(workspace))
        self.embedder = embedder if embedder is not None else make_embedder(config.embeddings)
        self.db = Index(
            database_path(config, self.workspace.name),
            self.workspace,
            config.chunking,
            self.embedder,
            config.embeddings.cache_size,
            concurrent_reads=concurrent_reads,
            on_corrupt=on_corrupt,
        )
        self.searcher = Searcher(
            config.search,
            self.embedder,
            lambda: self.db.vectors,
            lambda: config.flush.now().date(),
            config.embeddings.query_timeout_s,
        )
        self._activity = activity or Activity
        self._commit = commit or _inline
        self._ledger: FlushLedger | None = None
        self._ledger_lock = threading.Lock()

    def close(self) -> None:
        self.searcher.close()
        if self._ledger is not None:
            self._ledger.close()
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- index ------------------------------------------------------------------------------

    def index(
        self,
        full: bool = False,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Bring the index in line with the files; ``full`` re-reads and re-chunks all."""
        return self._commit(lambda: self.db.sync(full, progress, cancel))

    def index_paths(
        self, paths: Iterable[str], cancel: threading.Event | None = None
    ) -> IndexReport:
        """Re-index after a watcher reported changes at these absolute paths."""
        paths = list(paths)
        return self._commit(lambda: self.db.sync_paths(paths, cancel))

    def rebuild(self) -> IndexReport:
        """Move the database aside and index every file into a new one."""
        return self._commit(self.db.rebuild)

    def embed_step(self, limit: int = 32, quiet_since: float | None = None) -> int:
        """Embed up to ``limit`` chunks that have no vector (off the writer), save them (on
        it); returns how many were saved."""
        rows = self.db.embed_prepare(limit, quiet_since)
        if rows:
            self._commit(lambda: self.db.save_embeddings(rows))
        return len(rows)

    def embed_all(self, progress: Progress | None = None, batch: int = 64) -> int:
        """Embed every chunk that has no vector yet (``memd index`` without a daemon)."""
        if not self.embedder.enabled:
            return 0
        pending = self.db.vector_counts()[1]
        done = 0
        while saved := self.embed_step(batch):
            done += saved
            if progress:
                progress(done, pending)
        return done

    # -- read -------------------------------------------------------------------------------

    def search(self, query: str | SearchRequest, **options: object) -> SearchAnswer:
        """Search this workspace: ``options`` are ``SearchRequest`` fields; unset ones
        take the config's defaults."""
        request = query if isinstance(query, SearchRequest) else SearchRequest(query, **options)  # type: ignore[arg-type]
        ranked = self.db.read(lambda store: self.searcher.search(store, request))
        return SearchAnswer(
            results=ranked.results,
            mode=ranked.mode,
            provider=self.embedder.provider,
            model=self.embedder.model,
            index=self.db.freshness(self._activity()),
            warning=ranked.warning,
        )

    def get(self, path: str, start: int = 1, lines: int = 120) -> Lines:
        """Lines ``start``.. of an indexed file, read from disk (the files are the truth)."""
        full, inside = self.workspace.resolve(path)
        if not inside and self.db.read(lambda s: s.file_realpath(path)) != os.path.realpath(full):
            raise PathRefused(f"path {path!r} leads outside the workspace through a symlink")
        return read_lines(full, path, start, lines, self.workspace.name)

    def status(self) -> Status:
        """Counts, freshness and where things live."""
        activity = self._activity()
        counts = self.db.read(lambda store: store.counts())
        embedded = self.db.vector_counts()[0] if self.embedder.enabled else 0
        fresh = self.db.freshness(activity)
        return Status(
            version=__version__,
            workspace=self.workspace.name,
            path=str(self.workspace.path),
            roots=[str(r.path) for r in self.workspace.roots],
            files=counts["files"],
            chunks=counts["chunks"],
            embedded_chunks=embedded,
            pending_files=fresh.pending_files,
            pending_embeddings=fresh.pending_embeddings,
            provider=self.embedder.provider,
            model=self.embedder.model,
            embeddings=activity.embeddings,
            generation=fresh.generation,
            last_indexed_at=fresh.last_indexed_at,
            watcher=activity.watcher,
            indexing=(
                {"done": activity.scan_done, "total": activity.scan_total}
                if activity.scanning
                else None
            ),
            database=str(self.db.path),
            database_bytes=self.db.database_bytes(),
        )

    # -- write ------------------------------------------------------------------------------

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

        def write() -> FlushAnswer:
            if flush_id is not None and (first := self._flushed(flush_id)):
                return first  # the same id raced in while this one prepared
            target = lambda category: self.workspace.target(category, today)  # noqa: E731
            written, skipped = flush_entries(root, entries, target, now.strftime("%H:%M"))
            warning = self._reindex_written({w.path for w in written})
            answer = FlushAnswer(written, skipped, False, warning)
            if flush_id is not None:
                self._flush_ledger().put(self.workspace.name, flush_id, answer.as_dict())
            return answer

        return self._commit(write)

    def store(self, key: str, content: str, category: str = "core") -> StoreAnswer:
        """Keep one ``- **key**: content`` line in the category's file."""
        root = self._root()
        rel, header = self.workspace.target(category, self._today())

        def write() -> StoreAnswer:
            written, replaced = store_key(root, rel, header, key, content)
            warning = self._reindex_written({rel})
            return StoreAnswer(
                written.path, written.start_line, written.end_line, replaced, warning
            )

        return self._commit(write)

    def forget(self, key: str, category: str | None = None) -> ForgetAnswer:
        """Remove the key's line (from one category's file, or from wherever it is)."""
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

    def list(self, category: str | None = None) -> KeyList:
        """Every stored key with its file and line (one category, or all memory files)."""
        root = self._root()
        if category:
            rels = [self.workspace.target(category, self._today())[0]]
        else:
            rels = [e.path for e in self.workspace.scan() if e.source != "extra"]
        entries = [
            KeyEntry(e["key"], e["path"], e["line"], self.workspace.category_of(e["path"]))
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
        if not self.workspace.path.is_dir():
            raise WorkspaceMissing(f"workspace folder {self.workspace.path} does not exist")
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
        first = self._flush_ledger().get(self.workspace.name, flush_id)
        return FlushAnswer.from_dict(first, duplicate=True) if first else None

    def _flush_ledger(self) -> FlushLedger:
        with self._ledger_lock:
            if self._ledger is None:
                self._ledger = FlushLedger(self.config.state_dir)
            return self._ledger


def open(
    config: Config | str | Path | None = None, workspace: str | None = None, **options: object
) -> Memory:
    """Open a workspace's memory: ``config`` is a ``Config``, a config file path, or None
    for the usual places (``$MEMD_CONFIG``, ``~/.config/memd/config.yaml``, defaults)."""
    if not isinstance(config, Config):
        config = load_config(config)
    return Memory(config, workspace, **options)  # type: ignore[arg-type]
