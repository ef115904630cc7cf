"""A search across the team: every published workspace ranked by the same stages as a
local search, with this host's own results taken fresh from its local index.

The team view is a read-only ``PostgresStore`` over every scope the role may read; its
vectors stay in the database and are searched there (pgvector, HNSW).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace

import memd.embed.numpy_lazy as np
from memd.config import Config
from memd.embed.providers import Embedder
from memd.embed.rerank import Reranker
from memd.errors import MemdError, NotFound
from memd.records import Lines, SearchResult
from memd.search.request import SearchRequest
from memd.search.searcher import Ranked, Searcher
from memd.sources.reading import lines_of
from memd.store.postgres import PostgresStore
from memd.store.vectors import Nearness, to_blob

# Team searches one daemon runs at once, each on a connection of its own (one at a time
# served about 10 a second whatever the clients; PostgreSQL answers several in parallel).
CONNECTIONS = 4


class _TeamVectors:
    """The vector side of a team search, in the database (pgvector): what ``Searcher``
    asks of a ``VectorIndex``, answered by the team view of the calling thread."""

    def __init__(self, model: str, store: Callable[[], PostgresStore]) -> None:
        self.model = model
        self._store = store

    def refresh(self, store: object) -> None:
        """Nothing to load: the vectors stay in the database."""

    def __len__(self) -> int:
        return int(self._store().has_vectors(self.model))

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        return self._store().nearest(self.model, to_blob(query), k)

    def nearest_parts(self, chunk_ids: list[int], query: np.ndarray) -> dict[int, Nearness]:
        return self._store().nearest_parts(self.model, chunk_ids, to_blob(query))


class TeamSearch:
    """Searches the team store for one workspace's process; opened on first use."""

    def __init__(self, config: Config, embedder: Embedder, vector_key: str) -> None:
        self._config = config
        self._mine = threading.local()  # the connection the calling thread searches on
        self._vectors = _TeamVectors(vector_key, lambda: self._mine.store)
        self._searcher = Searcher(
            config.search,
            embedder,
            lambda: self._vectors,  # type: ignore[arg-type,return-value]
            lambda: config.flush.now().date(),
            config.embeddings.query_timeout_s,
            Reranker(),  # a team answer is merged with local results: no second opinion
            clock=config.flush.now,
        )
        self._idle: list[PostgresStore] = []  # open connections no search is using
        self._lock = threading.Lock()  # guards _idle and _closed
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=CONNECTIONS, thread_name_prefix="memd-team")

    def answer(
        self, request: SearchRequest, local: list[SearchResult], workspace: str, most: int
    ) -> tuple[list[SearchResult], str | None]:
        """``local`` merged with the team's results, and a warning when the team database
        did not answer in time (then the local results alone)."""
        team = self._config.team
        host = team.host_name()
        try:
            ranked = self._pool.submit(self.search, request).result(timeout=team.timeout_s)
        except FutureTimeout:
            late = f"the team database did not answer within {team.timeout_s:g} s"
            return merged(local, [], host, workspace, most), f"{late}; local results only"
        except MemdError as exc:
            return merged(local, [], host, workspace, most), f"{exc}; local results only"
        return merged(local, ranked.results, host, workspace, most), ranked.warning

    def search(self, request: SearchRequest) -> Ranked:
        """Rank every published chunk for ``request``; raises ``StoreError`` when the team
        database fails (that connection is then closed, and another opened next time)."""
        with self._connection() as store:
            return self._searcher.search(store, request)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[PostgresStore]:
        """An idle connection of the team view (or a new one), this thread's until done."""
        with self._lock:
            store = self._idle.pop() if self._idle else None
        if store is None:
            assert self._config.team.dsn is not None  # only asked for with a team configured
            store = PostgresStore.open(self._config.team.dsn, None, None)
        self._mine.store = store
        try:
            yield store
        except Exception:
            store.close()
            raise
        finally:
            self._mine.store = None
        with self._lock:
            if self._closed:
                store.close()
            else:
                self._idle.append(store)

    def get(self, host: str, workspace: str, path: str, start: int, lines: int) -> Lines:
        """Lines of another host's note as it published them; ``NotFound`` when it did not
        (or this host's role may not read it)."""
        with self._connection() as store:  # on the team view's connections, as searches are
            found = store.published(host, workspace, path)
        if found is None:
            raise NotFound(f"no published file {path} of host {host} workspace {workspace}")
        total, chunks, at = found
        text = [""] * total
        for _, chunk in chunks:  # chunks overlap; each line reads the same in each
            text[chunk.start_line - 1 : chunk.end_line] = chunk.text.split("\n")[
                : chunk.end_line - chunk.start_line + 1
            ]
        when = dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="seconds")
        return replace(lines_of(text, path, start, lines), host=host, published_at=when)

    def shutdown(self) -> None:
        """Close every idle connection now, and each busy one when its search ends."""
        self._pool.shutdown(wait=False)
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for store in idle:
            store.close()


def merged(
    local: list[SearchResult], team: list[SearchResult], host: str, workspace: str, most: int
) -> list[SearchResult]:
    """This host's fresh results with the team's (less this host's own published copy of
    the same workspace), best first, ``most`` of them."""
    mine = [_whose(r, host, workspace) for r in local]
    others = [r for r in team if (r.host, r.workspace) != (host, workspace)]
    return sorted([*mine, *others], key=lambda r: (r.match != "strong", -r.score))[:most]


def _whose(result: SearchResult, host: str, workspace: str) -> SearchResult:
    return replace(result, host=host, workspace=workspace)
