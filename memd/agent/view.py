"""What a session's start and a prompt's recall read memory through: a ``Memory`` (in the
daemon, or opened by this process), or the index on disk read directly.

A hook must answer within its budget whatever the daemon is doing, so ``memd context`` and
``memd recall`` read through one small view of the memory with two makers (when neither
answers in time, ``memd.agent.coretext`` gives MEMORY.md as written):

- ``LiveView``: a ``Memory`` that indexes and embeds (the daemon's own).
- ``DiskView``: the workspace's index database opened read-only: keyword search over what
  is already indexed; no model is loaded, nothing is re-indexed, nothing is written.

Context searches by keyword only (a project's name is a word of its notes, not a meaning),
so the daemon and the index on disk give the same context for the same index and time.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memd.records import SearchResult

if TYPE_CHECKING:
    from memd.config import Config
    from memd.memory import Memory
    from memd.store.base import Store
    from memd.store.rows import Supersession


class MemoryView(Protocol):
    """What context and recall need of one workspace's memory."""

    root: Path
    core_file: str
    folder_name: str  # the workspace's own folder name: not a project's

    def search(self, query: str, **options: object) -> list[SearchResult]:
        """The strong results for ``query`` (``SearchRequest`` fields as options)."""
        ...

    def waiting(self) -> int:
        """How many review proposals wait."""
        ...

    def superseded(self, paths: list[str]) -> list[Supersession]:
        """What later notes replaced in these files (``memd.review.currency``), as the
        index keeps it."""
        ...

    def clock(self) -> dt.datetime:
        """Now, in the user's time zone."""
        ...


@dataclass
class LiveView:
    """A ``Memory``: the daemon's, or one this process opened."""

    memory: Memory

    @property
    def root(self) -> Path:
        return self.memory.workspace.path

    @property
    def core_file(self) -> str:
        return self.memory.workspace.core_file()

    @property
    def folder_name(self) -> str:
        return self.memory.workspace.path.name

    def search(self, query: str, **options: object) -> list[SearchResult]:
        return self.memory.search(query, min_results=0, **options).results

    def waiting(self) -> int:
        return (self.memory.reviewer.waiting() or {}).get("waiting", 0)

    def superseded(self, paths: list[str]) -> list[Supersession]:
        return self.memory.db.read(lambda store: store.superseded_at(paths))

    def clock(self) -> dt.datetime:
        return self.memory.config.flush.now()


class DiskView:
    """The index on disk, opened read-only: keyword search over what is indexed already.

    Raises ``StoreError`` (or ``IndexCorrupt``) when there is no index to read."""

    def __init__(self, config: Config, workspace: str | None = None) -> None:
        from memd.embed.providers import NoEmbedder
        from memd.search.searcher import Searcher
        from memd.sources.layout import Workspace
        from memd.store.sqlite import SqliteStore
        from memd.store.vectors import VectorIndex

        self.config = config
        self._workspace = Workspace(config.workspace(workspace), config.state_dir)
        # ``memd.index.index.database_path``, without importing the indexer it lives with
        path = config.state_dir / f"index-{self._workspace.name}.sqlite"
        if not path.exists():
            from memd.errors import StoreError

            raise StoreError(f"no index at {path} yet")
        self._store: Store = SqliteStore.open(path, readonly=True)
        empty = VectorIndex("none")  # keyword search reads no vectors
        self._searcher = Searcher(
            config.search,
            NoEmbedder(),
            lambda: empty,
            lambda: config.flush.now().date(),
            config.embeddings.query_timeout_s,
            clock=config.flush.now,
        )

    @property
    def root(self) -> Path:
        return self._workspace.path

    @property
    def core_file(self) -> str:
        return self._workspace.core_file()

    @property
    def folder_name(self) -> str:
        return self._workspace.path.name

    def search(self, query: str, **options: object) -> list[SearchResult]:
        from memd.search.request import SearchRequest

        options = {**options, "mode": "keyword", "min_results": 0}
        request = SearchRequest(query, **options)  # type: ignore[arg-type]
        return self._searcher.search(self._store, request).results

    def waiting(self) -> int:
        return review_waiting(self.config, self._workspace.name)

    def superseded(self, paths: list[str]) -> list[Supersession]:
        return self._store.superseded_at(paths)

    def clock(self) -> dt.datetime:
        return self.config.flush.now()

    def close(self) -> None:
        self._store.close()


def review_waiting(config: Config, workspace: str) -> int:
    """The proposals the last review left waiting, read from its report file (0: none)."""
    from memd.store.private import load_json

    state = load_json(config.state_dir / f"review-{workspace}.json")
    report = state.get("report") if isinstance(state, dict) else None
    if not isinstance(report, dict):
        return 0
    closed = {*state.get("dismissed", ()), *state.get("applied", ())}
    return sum(1 for p in report.get("proposals", ()) if p.get("id") not in closed)
