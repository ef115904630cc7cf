"""The library's face: one workspace's memory, to index, search, read and write.

``Memory`` is a thin facade over the stages (ARCHITECTURE.md): search is ``memd.search``,
the database ``memd.index``, the file layout ``memd.sources.layout``, writes ``memd.write``.
It prints nothing and holds no daemon state: a daemon hands in what it is doing
(``activity``), where writes run (``commit``), and what to do when the database is damaged
(``on_corrupt``) or new chunks wait for vectors (``on_written``).

    import memd
    with memd.open() as memory:
        for hit in memory.search("backup policy").results:
            print(hit.citation, hit.score)
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from zoneinfo import ZoneInfo

from memd import __version__
from memd.config import Config
from memd.embed.providers import Embedder, make_embedder
from memd.embed.rerank import make_reranker
from memd.errors import InvalidParams, PathRefused
from memd.index import backfill
from memd.index.index import Index, database_path
from memd.index.reconcile import Progress
from memd.index.sessions import Sessions
from memd.records import (
    Activity,
    FlushAnswer,
    FlushPrompt,
    ForgetAnswer,
    IndexReport,
    KeyList,
    Lines,
    SearchAnswer,
    Status,
    StoreAnswer,
    embedding_progress,
)
from memd.search.bounds import MAX_WAIT_FRESH, bound_request, join_warnings, not_caught_up
from memd.search.candidates import backlinks
from memd.search.request import SearchRequest
from memd.search.searcher import Searcher
from memd.sources.entries import shown_name
from memd.sources.layout import Workspace, is_session_path
from memd.sources.reading import read_lines
from memd.store.base import Store

if TYPE_CHECKING:
    from memd.index.prepare import Reader
    from memd.index.publish import PublishReport
    from memd.review.currency import Currency
    from memd.review.reviewer import Reviewer
    from memd.search.team import TeamSearch
    from memd.write.journal import Journal
    from memd.write.writer import Entry

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
        on_written: Callable[[], None] | None = None,
        catch_up: Callable[[float], bool] | None = None,
    ) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace(workspace), config.state_dir)
        zone = ZoneInfo(config.flush.timezone) if config.flush.timezone else None  # None: local
        self.sessions = Sessions(config.workspace(workspace).sessions, zone, config.chunking)
        self._own_embedder = embedder is None  # one passed in is the caller's to close
        self.embedder = embedder if embedder is not None else make_embedder(config.embeddings)
        self.db = Index(
            database_path(config, self.workspace.name),
            self.workspace,
            config.chunking,
            self.embedder,
            config.embeddings.cache_size,
            concurrent_reads=concurrent_reads,
            on_corrupt=on_corrupt,
            on_written=on_written,
            sessions=self.sessions,
        )
        self.workspace.remember(config.state_dir)  # the index made the state folder
        self.searcher = Searcher(
            config.search,
            self.embedder,
            lambda: self.db.vectors,
            lambda: config.flush.now().date(),
            config.embeddings.query_timeout_s,
            make_reranker(config.rerank),
            config.rerank.top_n,
            clock=config.flush.now,
            interim=lambda: self.db.interim,
        )
        self._activity = activity or Activity
        self._commit = commit or _inline
        self._catch_up = catch_up or self._index_now
        self._journal: Journal | None = None
        self._made_lock = threading.Lock()  # the journal and team search, made on first use
        self._team: TeamSearch | None = None
        self._reviewer: Reviewer | None = None
        self._currency: Currency | None = None

    @property
    def journal(self) -> Journal:
        """The write side, made on first use: a search or a read never imports it."""
        if self._journal is None:
            with self._made_lock:
                if self._journal is None:
                    from memd.write import journal

                    self._journal = journal.Journal(
                        self.config, self.workspace, self.db, self._commit
                    )
        return self._journal

    @property
    def reviewer(self) -> Reviewer:
        """Reviews of this workspace (``memd.review``): run, dismiss, apply."""
        with self._made_lock:
            if self._reviewer is None:
                from memd.review.reviewer import Reviewer

                journal = lambda: self.journal  # noqa: E731 (made on first write)
                self._reviewer = Reviewer(self.workspace, journal, self.config, self.embedder,
                                          self.db.serving, self.db.embed_cached)  # fmt: skip
        return self._reviewer

    def _team_search(self) -> TeamSearch:
        """The team side of searches (``scope: "team"``), made on first use."""
        with self._made_lock:
            if self._team is None:
                from memd.search.team import TeamSearch

                self._team = TeamSearch(self.config, self.embedder, self.db.vector_key)
        return self._team

    def close(self) -> None:
        """Close the index and stop this object's threads; the files are left as they are."""
        self.searcher.close()
        if self._team is not None:
            self._team.shutdown()
        for part in (self._reviewer, self._currency, self._journal):  # in this order
            if part is not None:
                part.close()
        self.db.close()
        if self._own_embedder:
            self.embedder.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- index ------------------------------------------------------------------------------

    def index(self, full: bool = False, progress: Progress | None = None,
              cancel: threading.Event | None = None, current: bool = False, regrow: bool = True,
              ) -> IndexReport:  # fmt: skip
        """Bring the index in line with the files; ``full`` re-reads and re-chunks all.
        ``current``: also find what later notes replaced, each note read once, by the
        pass's workers (``memd index`` with no daemon to keep it). ``regrow`` False: no later
        pass of this object re-chunks an append from a file's end: that is not worked out."""
        if not current:
            return self._commit(lambda: self.db.sync(full, progress, cancel, regrow=regrow))

        def sync(reader: Reader, read: dict) -> IndexReport:
            return self._commit(lambda: self.db.sync(full, progress, cancel, reader, read, regrow))

        return self.currency.index(sync)

    def index_paths(
        self, paths: Iterable[str], cancel: threading.Event | None = None
    ) -> IndexReport:
        """Re-index after a watcher reported changes at these absolute paths."""
        paths = list(paths)
        return self._commit(lambda: self.db.sync_paths(paths, cancel))

    def rebuild(self) -> IndexReport:
        """Move the database aside and index every file into a new one."""
        self._currency = None  # its first-seen times were the old database's
        return self._commit(self.db.rebuild)

    @property
    def currency(self) -> Currency:
        """What is current (``memd.review.currency``): the updates among the notes. The
        daemon refreshes it after its passes; alone, ``memd index(current=True)`` does."""
        with self._made_lock:
            if self._currency is None:
                from memd.review.currency import Currency

                now = self.config.flush.now
                self._currency = Currency(self.workspace, self.db, self._commit, now)
            return self._currency

    def embed_step(
        self, limit: int = 32, quiet_since: float | None = None, edited_since: float | None = None
    ) -> int:
        """Embed up to ``limit`` chunks with no vector, edits first (off the writer)."""
        rows = self.db.embed_prepare(limit, quiet_since, edited_since)
        if rows:
            self._commit(lambda: self.db.save_embeddings(rows))
        return len({row[0] for row in rows})

    def embed_all(self, progress: Progress | None = None, batch: int = 64) -> int:
        """Embed every chunk that has no vector yet (``memd index`` without a daemon)."""
        return backfill.embed_all(self.db, self.embed_step, progress, batch)

    def embed_missing(self, most: int = 200) -> int:
        """Load the local model and embed the chunks with no vector if at most ``most``: a
        one-shot search then ranks as the daemon would, however busy the machine."""
        budget = self.config.embeddings.query_timeout_s
        return backfill.embed_missing(self.db, self.embed_step, budget, most)

    # -- read -------------------------------------------------------------------------------

    def search(
        self, query: str | SearchRequest, *, wait_fresh: float = 0.0, **options: object
    ) -> SearchAnswer:
        """Search this workspace: ``options`` are ``SearchRequest`` fields; unset ones
        take the config's defaults. ``wait_fresh`` (seconds, at most 10): first let the
        index catch up with every edit made so far (read your writes)."""
        request = query if isinstance(query, SearchRequest) else SearchRequest(query, **options)  # type: ignore[arg-type]
        wait = min(wait_fresh, MAX_WAIT_FRESH)
        late = not_caught_up(wait) if wait > 0 and not self._catch_up(wait) else None
        request, cut = bound_request(request)
        if request.scope == "team" and not self.config.team.enabled:
            raise InvalidParams("scope", "'team' needs a team section with a dsn in the config")
        activity = self._activity()  # before the read: an older index is never called fresh
        ranked = self.db.read(lambda store: self.searcher.search(store, request))
        if request.scope == "team":
            most = self.searcher.resolve(request).max_results or len(ranked.results)
            results, team_warning = self._team_search().answer(
                request, ranked.results, self.workspace.name, most
            )
            ranked = dataclasses.replace(ranked, results=results)
            cut = join_warnings(cut, team_warning)
        # The vectors in memory were of a model that changed size: this was keyword search.
        stale = self.db.vectors.take_notice() if ranked.mode != "keyword" else None
        mode = "keyword" if stale else ranked.mode
        fresh = self.db.freshness(activity, ranked.meaning_paths())
        unready = backfill.meaning_not_ready(mode, fresh.pending_embeddings, self.db.interim)
        return SearchAnswer(
            results=ranked.results,
            mode=mode,
            provider=self.embedder.provider,
            model=self.embedder.model,
            index=fresh,
            warning=join_warnings(late, cut, stale, ranked.warning, unready),
            time=ranked.window(),
            below_floor=ranked.below_floor,
            best_score=ranked.best_score,
            team=activity.team if request.scope == "team" else None,
        )

    def _index_now(self, seconds: float) -> bool:
        """Without a daemon nothing watches: catching up is one index pass."""
        self.index()
        return True

    def get(
        self,
        path: str,
        start: int = 1,
        lines: int = 120,
        host: str | None = None,
        host_workspace: str | None = None,
    ) -> Lines:
        """Lines ``start``.. of an indexed file, read from disk (the files are the truth);
        a session transcript's lines come redacted; another ``host``'s, as it published
        them (its ``host_workspace``, default this one's name)."""
        if host is not None and host != self.config.team.host_name():
            if not self.config.team.enabled:
                raise InvalidParams("host", "another host's notes need a team section")
            theirs = host_workspace or self.workspace.name
            return self._team_search().get(host, theirs, path, start, lines)
        if self.sessions and isinstance(path, str) and is_session_path(path):
            return self.sessions.read(path, start, lines, self.workspace.name)
        full, inside = self.workspace.resolve(path)
        if not inside and self.db.read(lambda s: s.file_realpath(path)) != os.path.realpath(full):
            raise PathRefused(f"path {path!r} leads outside the workspace through a symlink")
        found = read_lines(full, path, start, lines, self.workspace.name)
        linking = self.db.read(lambda s: backlinks(s, path))
        return dataclasses.replace(found, backlinks=linking) if linking else found

    def status(self) -> Status:
        """Counts, freshness and where things live."""
        activity = self._activity()
        counts = self.db.read(lambda store: store.counts())
        # Done and waiting from one count: the runner's number may be a batch behind.
        embedded, waiting = self.db.vector_counts() if self.embedder.enabled else (0, 0)
        fresh = self.db.freshness(activity)
        return Status(
            version=__version__,
            workspace=self.workspace.name,
            path=str(self.workspace.path),
            roots=[str(r.path) for r in [*self.workspace.roots, *self.sessions.roots]],
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
            config=str(self.config.source) if self.config.source else None,
            socket=str(self.config.socket),
            team=activity.team,
            review=activity.review or self.reviewer.waiting(),
            embedding=embedding_progress(embedded, waiting, activity.embed_per_s, self.db),
            skipped_files=[f"{shown_name(p)} ({why})" for p, why in sorted(self.db.skipped.items())]
            or None,
        )

    def publish(self, remote: Store, progress: Callable[[], None] | None = None,
                refused: Mapping[str, tuple[str, str]] | None = None) -> PublishReport:  # fmt: skip
        """Bring this workspace's team scope in line with the local index (reads only: any
        thread may run it); ``progress`` is called after each file published; ``refused``:
        the last pass's ``report.refused`` (those files are not sent again unchanged)."""
        from memd.index.publish import publish  # the team side: never loaded by a search

        team, hide = self.config.team, self.config.chunking.hide
        return self.db.read(lambda local: publish(
            local, remote, self.db.vector_key, self.embedder.cache_key,
            transcripts=team.transcripts, progress=progress, hide=hide, refused=refused,
        ))  # fmt: skip

    # -- write: memd.write.journal ----------------------------------------------------------------

    def flush(
        self,
        entries: list[Entry],
        flush_id: str | None = None,
        date: str | None = None,
        transcript: str | list[dict] | None = None,
    ) -> FlushAnswer:
        """Append entries to today's note (or ``date``'s) or MEMORY.md, once per
        ``flush_id``; searchable when this returns. See ``Journal.flush``."""
        return self.journal.flush(entries, flush_id, date, transcript)

    def store(self, key: str, content: str, category: str = "core") -> StoreAnswer:
        """Keep one ``- **key**: content <!-- memd:key -->`` line in the category's file."""
        return self.journal.store(key, content, category)

    def forget(self, key: str, category: str | None = None) -> ForgetAnswer:
        """Remove the key's line (from one category's file, or from wherever it is)."""
        return self.journal.forget(key, category)

    def list(self, category: str | None = None) -> KeyList:
        """Every stored key with its file and line (one category, or all memory files)."""
        return self.journal.list(category)

    def flush_prompt(self, date: str | None = None) -> FlushPrompt:
        """The prompt an agent runs to decide what to flush before compacting."""
        return self.reviewer.mention(self.journal.flush_prompt(date))


def open(
    config: Config | str | Path | None = None, workspace: str | None = None, **options: object
) -> Memory:
    """Open a workspace's memory: ``config`` is a ``Config``, a config file path, or None
    for the usual places (``$MEMD_CONFIG``, ``~/.config/memd/config.yaml``, defaults)."""
    if not isinstance(config, Config):
        from memd.configfile import load_config  # here: a Config handed in needs no YAML

        config = load_config(config)
    return Memory(config, workspace, **options)  # type: ignore[arg-type]
