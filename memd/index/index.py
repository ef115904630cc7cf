"""One workspace's index: its database (one writer, a read connection per thread), its
vectors in memory, keeping both in line with the files, and recovery from damage.

Indexing methods write and must run on one thread at a time (the daemon's writer thread).
Reads go through ``read``; with ``concurrent_reads`` each thread has its own read-only
connection, so searches never wait for indexing (SQLite WAL). Corruption is handled here
and only here: the damaged database is moved aside and this workspace alone is rebuilt.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import memd.embed.numpy_lazy as np
from memd.config import Chunking, Config
from memd.embed.providers import Embedder, Kind
from memd.errors import IndexCorrupt
from memd.index.readers import ReadPool
from memd.index.reconcile import Progress, Tails, reconcile, reconcile_paths, same_stat
from memd.index.sessions import Sessions, combine
from memd.log import get_logger
from memd.records import Activity, Freshness, IndexReport
from memd.sources.entries import holdable
from memd.sources.layout import Workspace, is_note
from memd.sources.passages import FORMAT as PASSAGES
from memd.sources.passages import passages
from memd.store.base import Store
from memd.store.fts import term_strings
from memd.store.rows import Supersession
from memd.store.sqlite import SqliteStore
from memd.store.vectors import VectorIndex, from_blob, to_blob

if TYPE_CHECKING:
    from memd.index.interim import InterimTier
    from memd.index.prepare import Reader

log = get_logger()
T = TypeVar("T")
RECENT_DAYS = 7.0  # the newest notes, embedded first and shown apart in status


def database_path(config: Config, workspace: str) -> Path:
    """Where a workspace's index lives under the state folder."""
    return config.state_dir / f"index-{workspace}.sqlite"


class Index:
    """The database, vectors and indexing of one workspace."""

    def __init__(
        self,
        path: Path,
        workspace: Workspace,
        chunking: Chunking,
        embedder: Embedder,
        cache_size: int,
        concurrent_reads: bool = False,
        on_corrupt: Callable[[], None] | None = None,
        on_written: Callable[[], None] | None = None,
        sessions: Sessions | None = None,
    ) -> None:
        self.path = path
        self.sessions = sessions  # session transcripts beside the notes (memd.index.sessions)
        self.workspace = workspace
        self.chunking = chunking
        self.embedder = embedder
        self.cache_size = cache_size
        self.store: Store = SqliteStore.open(path)  # the one place a backend is chosen
        self._concurrent = concurrent_reads
        self._on_corrupt = on_corrupt
        self._on_written = on_written
        self.vectors = self._vector_index()
        self.interim: InterimTier | None = None  # while a large back-fill runs
        self._readers = ReadPool(lambda: self.store.reader())
        self.tails: Tails = {}  # where a grown file may be re-chunked from (writer only)
        self.skipped: dict[str, str] = {}  # path -> why: files the index could not take
        self.checked_at: float | None = None  # when this object's last whole pass ended

    @property
    def serving(self) -> bool:
        """Inside the daemon: many threads read at once."""
        return self._concurrent

    @property
    def vector_key(self) -> str:
        """Which vectors are this index's: the embedder's, over passages cut this way."""
        return f"{self.embedder.key}passages-{PASSAGES}"

    def _vector_index(self) -> VectorIndex:
        return VectorIndex(self.vector_key, lambda: self.embedder.dimensions, self._on_written)

    def _vector_bytes(self) -> int | None:
        """The size of a current vector; one of another size is stale (None: not known yet)."""
        dims = self.embedder.dimensions
        return dims * 4 if dims else None

    def close(self) -> None:
        self._readers.close()
        self.store.close()
        self.vectors = self._vector_index()  # the matrix is freed now, not at a later GC
        self.interim = None

    # -- reading ----------------------------------------------------------------------------

    def read(self, fn: Callable[[Store], T]) -> T:
        """Run ``fn`` on a read connection (in the daemon, one lent from its pool).

        On damage: alone (CLI, library), rebuild and try once more; in the daemon, ask it to
        rebuild this workspace on its writer thread and report the error meanwhile.
        """
        if not self._concurrent:
            try:
                return fn(self.store)
            except IndexCorrupt as exc:
                self.recover(exc)
                return fn(self.store)
        epoch, reader = self._readers.take()
        try:
            return fn(reader)
        except IndexCorrupt:
            if self._on_corrupt is not None:
                self._on_corrupt()
            raise
        finally:
            self._readers.give(epoch, reader)

    def freshness(self, activity: Activity, paths: Sequence[str] = ()) -> Freshness:
        """How current the index is, given what the daemon (if any) is doing; with a
        search's result ``paths``, what share of them had vectors to search by meaning."""
        return self.read(lambda store: self._freshness(store, activity, paths))

    def _freshness(self, store: Store, activity: Activity, paths: Sequence[str] = ()) -> Freshness:
        pending_embeddings = activity.pending_embeddings
        if pending_embeddings is None:
            pending_embeddings = 0
            if self.embedder.enabled:
                pending_embeddings = store.count_vectors(self.vector_key, self._vector_bytes())[1]
        share = None
        if paths and pending_embeddings and self.embedder.enabled:
            files = set(paths)
            missing = store.paths_without_vectors(self.vector_key, sorted(files))
            share = round(1 - len(missing) / len(files), 2) if missing else None
        stored = store.get_meta("last_indexed_at")
        return Freshness(
            generation=int(store.get_meta("generation", "0") or 0),
            pending_files=activity.pending,
            pending_embeddings=pending_embeddings,
            stale=activity.stale,
            # A pass of this process's that changed nothing wrote no time: the later one.
            last_indexed_at=_iso(max(float(stored or 0), self.checked_at or 0)),
            indexing=(
                {"done": activity.scan_done, "total": activity.scan_total}
                if activity.scanning and activity.scan_total
                else None
            ),
            meaning_share=share,
        )

    def stale_paths(self) -> tuple[set[str], bool]:
        """Files whose stat differs from what the index holds (absolute paths), and whether
        any indexed file is gone: a read-only stat pass, no file is opened."""
        known = self.read(lambda store: store.files())
        entries, unchanged, _ = self.workspace.scan_against(known)
        changed = {e.abspath for e in entries if not same_stat(known.get(e.path), e)}
        return changed, bool(set(known) - {e.path for e in entries}.union(unchanged))

    def settled(self, paths: Iterable[str]) -> set[str]:
        """Those of these absolute paths whose note the index holds exactly as it is on
        disk (memd's own flush, a save that changed nothing): no edit waits there."""
        located = {}
        for path in paths:
            found = self.workspace.locate(path) if is_note(path) else None
            if found is not None and found[1] is not None and holdable(found[0]):
                located[found[0]] = (path, found[1])
        if not located:
            return set()
        known = self.read(lambda store: store.files_at(list(located)))
        return {path for shown, (path, e) in located.items() if same_stat(known.get(shown), e)}

    def link_targets(self) -> dict[str, str]:
        """``{target realpath: link abspath}`` for indexed files that are symlinks
        themselves: a watcher of the workspace does not see edits to their targets."""
        rows = self.read(lambda store: store.linked_files())
        return {real: link for link, real in rows if os.path.islink(link)}

    def vector_counts(self) -> tuple[int, int]:
        """``(chunks with a vector, chunks without)`` for the current embedder."""
        return self.read(lambda store: store.count_vectors(self.vector_key, self._vector_bytes()))

    def recent_coverage(self, days: float = RECENT_DAYS) -> dict:
        """How the newest ``days`` of notes (back from the newest) are searchable by
        meaning: ``{days, chunks, full, interim}``, chunks with the full model's vectors
        and those with only the interim tier's."""
        rows = self.read(lambda store: store.recent_chunks(self.vector_key, days))
        missing = [chunk_id for chunk_id, full in rows if not full]
        tier = self.interim
        interim = len(tier.vectors.holds(missing)) if tier is not None and missing else 0
        return {"days": days, "chunks": len(rows), "full": len(rows) - len(missing),
                "interim": interim}  # fmt: skip

    def database_bytes(self) -> int:
        return self.store.size_bytes()

    # -- writing (one thread) ---------------------------------------------------------------

    def sync(
        self,
        full: bool = False,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        reader: Reader | None = None,
        read: dict[str, Any] | None = None,
        regrow: bool = True,
    ) -> IndexReport:
        """Bring the index in line with the files; ``full`` re-reads and re-chunks every
        file (and checks the database for damage first). ``reader`` also reads the text of
        each file the pass reads, its answers put in ``read`` (``reconcile``). ``regrow``
        False: the files read get no ``tails`` (no later pass of this object will use them)."""

        def run() -> IndexReport:
            if full:
                self.store.check()
            report = reconcile(self.store, self.workspace, self.chunking, full, progress,
                               cancel=cancel, tails=self.tails if regrow else None,
                               skipped=self.skipped, reader=reader, read=read)  # fmt: skip
            if self.sessions and not report.cancelled:
                report = combine(report, self.sessions.sync(self.store, full, cancel=cancel))
            if not report.cancelled:
                self.checked_at = time.time()  # a pass that changed nothing wrote no time
            return report

        return self._write(run, cancel)

    def sync_paths(
        self, paths: Iterable[str], cancel: threading.Event | None = None
    ) -> IndexReport:
        """Re-index after changes at these absolute paths: the Markdown files among them,
        or the whole workspace when a folder appeared, moved or vanished."""
        paths = set(paths)
        if self.sessions and (transcripts := {p for p in paths if self.sessions.owns(p)}):
            report = self._write(
                lambda: self.sessions.sync(self.store, paths=transcripts, cancel=cancel), cancel
            )
            rest = paths - transcripts
            return combine(report, self.sync_paths(rest, cancel)) if rest else report
        for path in paths:
            if is_note(path):
                continue
            shown = self.workspace.shown(path)
            # Editors also create and delete stray files (vim's '4913'): only a folder,
            # or a path that held indexed files, calls for a whole pass.
            held = shown and holdable(shown) and self.store.has_files_under(shown)
            if os.path.isdir(path) or held:
                return self.sync(cancel=cancel)
        md = [p for p in paths if is_note(p)]
        kept = {"tails": self.tails, "skipped": self.skipped}
        return self._write(
            lambda: reconcile_paths(self.store, self.workspace, self.chunking, md, cancel, **kept),
            cancel,
        )

    def rebuild(self, reason: str = "rebuild requested") -> IndexReport:
        """Move the database aside and index every file into a new one."""
        self.recover(IndexCorrupt(reason))
        return self.sync()

    def recover(self, exc: IndexCorrupt) -> None:
        """Move a damaged database aside and start an empty one (the files are the truth)."""
        self.store = self.store.replace_damaged(str(exc))
        self._readers.renew()
        self.vectors = self._vector_index()
        self.interim = None  # its chunk ids were the old database's
        self.tails = {}

    def _write(self, run: Callable[[], IndexReport], cancel: threading.Event | None) -> IndexReport:
        try:
            report = run()
        except IndexCorrupt as exc:
            self.recover(exc)
            report = reconcile(
                self.store, self.workspace, self.chunking, cancel=cancel, tails=self.tails
            )
        if report.chunks and self._on_written is not None:
            self._on_written()  # new chunks have no vectors yet: whoever embeds, wake up
        return report

    # -- embeddings -------------------------------------------------------------------------

    def learn_dimensions(self) -> None:
        """Embed one text if vectors are stored and this process does not know the size of
        the model's vectors yet: vectors of another size (a model swapped under the same
        name) are stale, and only a fresh answer tells. Network; may raise
        ``BackendUnavailable``."""
        if not self.embedder.enabled or self.embedder.dimensions is not None:
            return
        if self.read(lambda store: store.count_vectors(self.vector_key))[0]:
            self.embedder.embed(["memd"])

    def embed_prepare(
        self, limit: int, quiet_since: float | None = None, edited_since: float | None = None
    ) -> list[tuple]:
        """Vectors for the passages of up to ``limit`` chunks that have none (cache first),
        people's first (``Store.pending_chunks``): rows for ``save_embeddings``. Slow (it
        embeds); only reads, so any thread may run it."""
        pending = self.read(
            lambda store: store.pending_chunks(
                self.vector_key, limit, quiet_since, self._vector_bytes(), edited_since
            )
        )
        if not pending:
            return []
        parts = [
            (chunk_id, n, text)
            for chunk_id, heading, body, date, path in pending
            for n, text in enumerate(passages(heading, body, date, path, self.chunking.hide))
        ]
        keys = [self.embedder.cache_key(text) for _, _, text in parts]
        # Overlapping chunks share passages: embed and tokenize each text once.
        texts = {key: text for key, (_, _, text) in zip(keys, parts, strict=True)}
        blobs = self._embedded(texts, "passage")
        terms = dict(zip(texts, term_strings(texts.values()), strict=True))
        return [
            (chunk_id, n, key, blobs[key], terms[key])
            for (chunk_id, n, _), key in zip(parts, keys, strict=True)
        ]

    def embed_cached(
        self, texts: Sequence[str], kind: Kind = "query"
    ) -> tuple[np.ndarray, list[tuple[bytes, bytes]]]:
        """Vectors for ``texts`` no chunk holds (a review's statements) through the
        embedding cache, and the ``(key, vector)`` pairs to keep there (``save_cached``):
        a statement is embedded once, not at every review. Slow; only reads."""
        keys = [self.embedder.cache_key(f"\0{kind}\0{text}") for text in texts]
        blobs = self._embedded(dict(zip(keys, texts, strict=True)), kind)
        vectors = np.vstack([from_blob(blobs[key]) for key in keys])
        return vectors, list(blobs.items())

    def _embedded(self, texts: dict[bytes, str], kind: Kind) -> dict[bytes, bytes]:
        """Vectors by cache key of ``texts`` (cache key: text): the cache's where it holds
        them, the rest embedded now."""
        cached = self.read(lambda store: store.cached_vectors(list(texts)))
        if cached and self.embedder.dimensions is None:
            # Learn the size before the cache puts vectors of a swapped model back.
            self.embedder.embed([next(iter(texts.values()))], kind)
        size = self._vector_bytes()
        blobs = {key: blob for key, blob in cached.items() if len(blob) == size}
        missing = {key: text for key, text in texts.items() if key not in blobs}
        if missing:
            fresh = self.embedder.embed(list(missing.values()), kind)
            blobs.update(zip(missing, (to_blob(v) for v in fresh), strict=True))
        return blobs

    def build_interim(self, cancel: threading.Event) -> None:
        """Interim vectors for every chunk the full model has not reached, newest notes
        first (``memd.index.interim``). Slow (it embeds each new word); only reads."""
        from memd.index.interim import InterimTier, reading_order  # a large back-fill's

        key, nbytes = self.vector_key, self._vector_bytes()
        chunks, files = self.read(
            lambda store: (store.pending_chunks(key, 1 << 40, None, nbytes), store.file_times())
        )
        self.interim = InterimTier(self.embedder, self.chunking.hide, self.workspace.name)
        self.interim.build(reading_order(chunks, files), cancel)

    def save_embeddings(self, rows: list[tuple]) -> None:
        """Write what ``embed_prepare`` made (the writer's job)."""
        with self.store.transaction():
            self.store.save_vectors(self.vector_key, rows, self.cache_size)

    def save_cached(self, entries: Sequence[tuple[bytes, bytes]]) -> None:
        """Keep what ``embed_cached`` made in the embedding cache (the writer's job)."""
        with self.store.transaction():
            self.store.cache_vectors(entries, self.cache_size)

    def save_currency(self, rows: Sequence[Supersession], seen: Sequence[tuple[str, str, str]],
                      gone: Sequence[str], started: str | None, done: str | None = None,
                      ) -> None:  # fmt: skip
        """What later notes superseded, in place of what was kept, with when undated
        notes' new statements were first seen, and (``done``) what a whole refresh saw
        (the writer's job; memd.review.currency)."""
        with self.store.transaction():
            self.store.replace_superseded(rows)
            self.store.save_seen(seen, gone)
            if started is not None:
                self.store.set_meta("currency_started", started)
            if done is not None:
                self.store.set_meta("currency_done", done)


def _iso(epoch: str | float | None) -> str | None:
    if not epoch:
        return None
    moment = dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
