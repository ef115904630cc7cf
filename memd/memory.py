"""One workspace's memory: the library API that the CLI, the socket server and MCP call.

``Memory`` ties a workspace's files to its index database and offers index, search,
read and status. It is plain synchronous code; the daemon runs it in worker threads.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import structlog

from memd import __version__
from memd.config import Config
from memd.embeddings import Embedder, make_embedder
from memd.errors import MemdError, NotFound, PathRefused
from memd.extract import extract_notes
from memd.indexer import IndexReport, Progress, reconcile, reconcile_paths
from memd.ledger import FlushLedger
from memd.markdown import readable, split_lines
from memd.search import (
    SearchRequest,
    attach_vectors,
    file_filter,
    keyword_candidates,
    merge,
    normalise_cosines,
    rank,
    vector_candidates,
)
from memd.store import IndexCorrupt, Store
from memd.vectors import VectorIndex, to_blob
from memd.workspace import Workspace, WorkspaceMissing, daily_date
from memd.writer import (
    Entry,
    category_file,
    flush_entries,
    forget_key,
    list_keys,
    store_key,
)

log = structlog.get_logger()

GET_MAX_LINES = 1000
GET_MAX_BYTES = 64 * 1024
_QUERY_CACHE = 256  # query vectors kept: agents repeat questions
_EMBED_MAX_CHARS = 8000  # an over-long single line is cut; endpoints cap input length


def database_path(config: Config, workspace: str) -> Path:
    """Where a workspace's index lives under the state folder."""
    return config.state_dir / f"index-{workspace}.sqlite"


@dataclass
class Activity:
    """What a running daemon is doing for a workspace; without a daemon it stays at rest."""

    pending_files: int = 0  # changed files waiting for (or in) a targeted pass
    watcher: str = "not running"  # running | restarting | waiting for folder | not running
    daemon: bool = False
    scanning: bool = False  # a full pass is queued or running
    embeddings: str = "idle"  # idle | embedding | cooling down ... after: <error>
    pending_embeddings: int = 0  # kept by the daemon; counted on demand without one
    scan_done: int = 0
    scan_total: int = 0

    def scan_progress(self, done: int, total: int) -> None:
        self.scan_done, self.scan_total = done, total

    @property
    def pending(self) -> int:
        remaining = self.scan_total - self.scan_done if self.scanning else 0
        return self.pending_files + remaining

    @property
    def stale(self) -> bool:
        """The index may be behind the files: edits wait, a full pass runs, or nothing is
        watching."""
        unwatched = self.daemon and self.watcher != "running"
        return self.pending > 0 or self.scanning or unwatched


class Memory:
    """The index, search and files of one configured workspace.

    ``index`` writes through one connection and must be called from one thread at a time.
    With ``concurrent_reads`` every other thread searches on a connection of its own, so
    searches never wait for indexing (SQLite WAL).
    """

    def __init__(
        self,
        config: Config,
        workspace: str | None = None,
        concurrent_reads: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace(workspace))
        self.store = Store.open(database_path(config, self.workspace.name))
        self.activity = Activity()
        self.embedder = embedder if embedder is not None else make_embedder(config.embeddings)
        self.vectors = VectorIndex(self.embedder.key)
        self._query_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memd-query")
        self._query_vectors: dict[str, np.ndarray] = {}  # recent queries, oldest first
        self._concurrent = concurrent_reads
        self._local = threading.local()
        self._readers: list[Store] = []
        self._readers_lock = threading.Lock()
        self._epoch = 0  # bumped when the database file is replaced
        self._flush_ledger: FlushLedger | None = None

    def today(self) -> dt.date:
        """Today in the configured time zone (daily notes and their ages follow it)."""
        return self.now().date()

    def close(self) -> None:
        self._query_pool.shutdown(wait=False)
        if self._flush_ledger is not None:
            self._flush_ledger.close()
        with self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
        self.store.close()

    def _read(self) -> Store:
        """The connection this thread reads through."""
        if not self._concurrent:
            return self.store
        cached = getattr(self._local, "reader", None)
        if cached is not None and cached[0] == self._epoch:
            return cached[1]
        reader = Store.open(self.store.path, readonly=True)
        with self._readers_lock:
            self._readers.append(reader)
        self._local.reader = (self._epoch, reader)
        return reader

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index(
        self,
        full: bool = False,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Bring the index in line with the files (everything re-chunked with ``full``)."""

        def run() -> IndexReport:
            if full:  # the one time a user asks for a rebuild, also look for damage
                self.store.check()
            chunking = self.config.chunking
            return reconcile(self.store, self.workspace, chunking, full, progress, cancel=cancel)

        return self._write(run)

    def index_paths(
        self, paths: Iterable[str], cancel: threading.Event | None = None
    ) -> IndexReport:
        """Re-index just these absolute paths (as a file watcher reports them)."""
        paths = list(paths)
        return self._write(
            lambda: reconcile_paths(
                self.store, self.workspace, self.config.chunking, paths, cancel=cancel
            )
        )

    def index_changes(
        self, paths: Iterable[str], cancel: threading.Event | None = None
    ) -> IndexReport:
        """Re-index after a watcher reported ``paths``: the .md files among them, or
        everything when a folder appeared, moved or vanished."""
        paths = set(paths)
        for path in paths:
            if path.endswith(".md"):
                continue
            shown = self.workspace.shown(path)
            # Editors also create and delete stray files (vim's '4913'): only a folder,
            # or a path that held indexed files, calls for a full pass.
            if os.path.isdir(path) or (shown and self.store.has_files_under(shown)):
                return self.index(cancel=cancel)
        return self.index_paths([p for p in paths if p.endswith(".md")], cancel)

    def embed_prepare(self, limit: int, quiet_since: float | None = None) -> list[tuple]:
        """Vectors for up to ``limit`` chunks that have none (cache first): rows for
        ``save_embeddings``. Slow (it embeds); reads only, so any thread may run it."""
        store = self._read()
        pending = store.pending_chunks(self.embedder.key, limit, quiet_since)
        if not pending:
            return []
        texts = [_embedding_text(heading, text) for _, heading, text in pending]
        keys = [self.embedder.cache_key(t) for t in texts]
        cached = store.cached_vectors(keys)
        missing = [i for i, key in enumerate(keys) if key not in cached]
        fresh = self.embedder.embed([texts[i] for i in missing]) if missing else []
        blobs = dict(cached)
        for i, vector in zip(missing, fresh, strict=True):
            blobs[keys[i]] = to_blob(vector)
        return [
            (chunk_id, key, blobs[key]) for (chunk_id, _, _), key in zip(pending, keys, strict=True)
        ]

    def store_counts_vectors(self) -> tuple[int, int]:
        """``(chunks with a vector, chunks without)`` for the current embedder."""
        return self._read().count_vectors(self.embedder.key)

    def save_embeddings(self, rows: list[tuple]) -> None:
        """Write what ``embed_prepare`` made (the writer's job)."""
        with self.store.transaction():
            self.store.save_vectors(self.embedder.key, rows, self.config.embeddings.cache_size)

    def embed_all(self, progress: Progress | None = None, batch: int = 64) -> int:
        """Embed every chunk that has no vector yet (``memd index`` without a daemon)."""
        if not self.embedder.enabled:
            return 0
        _, pending = self.store.count_vectors(self.embedder.key)
        done = 0
        while rows := self.embed_prepare(batch):
            self.save_embeddings(rows)
            done += len(rows)
            if progress:
                progress(done, pending)
        return done

    # -- writing memory ---------------------------------------------------------------------

    def flush(
        self,
        entries: list[Entry],
        flush_id: str | None = None,
        date: str | None = None,
        transcript: str | list[dict] | None = None,
    ) -> dict:
        """Append entries to today's note (or ``date``'s) or the core file, once per
        ``flush_id``; searchable by keyword when this returns. With ``transcript`` and
        ``flush.llm``, the notes a model extracts from it are appended too."""
        if flush_id is not None and (first := self._ledger().get(self.workspace.name, flush_id)):
            return {**first, "duplicate": True}
        root = self._root()
        now = self.now()
        today = date or now.date().isoformat()
        llm = self.config.flush.llm
        if transcript is not None and llm is not None:
            prompt = self.flush_prompt(today)
            if notes := extract_notes(llm, prompt["system"], prompt["user"], transcript):
                entries = [*entries, Entry(notes, title="memory flush")]
        written, skipped = flush_entries(root, entries, today, now.strftime("%H:%M"))
        answer = {
            "written": [w.as_dict() for w in written],
            "skipped": skipped,
            "duplicate": False,
        }
        if warning := self._reindex_written({w.path for w in written}):
            answer["warning"] = warning
        if flush_id is not None:
            self._ledger().put(self.workspace.name, flush_id, answer)
        return answer

    def store_memory(self, key: str, content: str, category: str = "core") -> dict:
        """Keep one ``- **key**: content`` line in the category's file."""
        root = self._root()
        rel, header = category_file(root, category, self.today().isoformat())
        written, replaced = store_key(root, rel, header, key, content)
        answer = {**written.as_dict(), "replaced": replaced}
        if warning := self._reindex_written({rel}):
            answer["warning"] = warning
        return answer

    def forget(self, key: str, category: str | None = None) -> dict:
        """Remove the key's line (from one category's file, or from wherever it is)."""
        root = self._root()
        rels = (
            [category_file(root, category, self.today().isoformat())[0]]
            if category
            else [entry["path"] for entry in self.list_memories()["entries"] if entry["key"] == key]
        )
        removed = [rel for rel in dict.fromkeys(rels) if forget_key(root, rel, key)]
        answer = {"removed": bool(removed), "paths": removed}
        if warning := self._reindex_written(set(removed)):
            answer["warning"] = warning
        return answer

    def list_memories(self, category: str | None = None) -> dict:
        """Every stored key with its file and line (one category, or all memory files)."""
        root = self._root()
        if category:
            rels = [category_file(root, category, self.today().isoformat())[0]]
        else:
            rels = [e.path for e in self.workspace.scan() if e.source != "extra"]
        entries = list_keys(root, rels)
        for entry in entries:
            entry["category"] = _category_of(entry["path"])
        return {"entries": entries, "count": len(entries)}

    def flush_prompt(self, date: str | None = None) -> dict:
        """The prompt an agent runs to decide what to flush before compacting."""
        day = date or self.today().isoformat()
        target = f"memory/{day}.md"
        return {
            "system": FLUSH_SYSTEM,
            "user": FLUSH_USER.format(date=day, target=target),
            "target": target,
        }

    def now(self) -> dt.datetime:
        tz = self.config.flush.timezone
        return dt.datetime.now(ZoneInfo(tz)) if tz else dt.datetime.now().astimezone()

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
            self.index_paths([str(self.workspace.path / rel) for rel in rels])
        except MemdError as exc:
            log.warning("written_not_indexed", paths=sorted(rels), error=str(exc))
            return f"written, but not searchable until the index catches up: {exc}"
        return None

    def _ledger(self) -> FlushLedger:
        if self._flush_ledger is None:
            self._flush_ledger = FlushLedger(self.config.state_dir)
        return self._flush_ledger

    def _write(self, run: Callable[[], IndexReport]) -> IndexReport:
        try:
            return run()
        except IndexCorrupt as exc:
            self._rebuild_store(exc)
            return self.index()

    def _rebuild_store(self, exc: IndexCorrupt) -> None:
        """Move a damaged database aside and start an empty one (the files are the truth)."""
        path = self.store.path
        self.store.close()
        Store.move_aside(path, str(exc))
        self.store = Store.open(path)
        self._epoch += 1
        self.vectors = VectorIndex(self.embedder.key)

    def search(self, request: SearchRequest) -> dict:
        """Search the index; the answer says what ran and how fresh the index is."""
        try:
            return self._search(request)
        except IndexCorrupt as exc:
            if self._concurrent:  # only the writer thread may replace the database
                raise
            self._rebuild_store(exc)
            self.index()
            return self._search(request)

    def _search(self, request: SearchRequest) -> dict:
        store = self._read()
        embedder = self.embedder
        answer: dict = {
            "results": [],
            "mode": "keyword",
            "provider": embedder.provider,
            "model": embedder.model,
        }
        query_vector, warning = None, None
        if request.mode != "keyword":
            query_vector, warning = self._query_vector(request, store)
        mode = "keyword"
        if query_vector is not None:
            mode = "vector" if request.mode == "vector" else "hybrid"
        settings = self.config.search
        limit = request.max_results * settings.candidate_multiplier
        allowed = file_filter(store, request.paths, request.tags)
        sides = []
        if mode != "vector":
            sides.append(keyword_candidates(store, request, limit, allowed))
        if query_vector is not None:
            sides.append(
                vector_candidates(store, self.vectors, query_vector, request, limit, allowed)
            )
        cands = merge(*sides)
        if query_vector is not None:
            attach_vectors(cands, self.vectors, query_vector)
            normalise_cosines(cands)
        weights = {
            "hybrid": {},
            "keyword": {"vector_weight": 0.0, "text_weight": 1.0},
            "vector": {"vector_weight": 1.0, "text_weight": 0.0},
        }[mode]
        ranked = rank(
            cands,
            request,
            dataclasses.replace(settings, **weights),
            self.today(),
            settings.fusion if mode == "hybrid" else "weighted",
        )
        answer["results"] = [r.as_dict() for r in ranked]
        answer["mode"] = mode
        if warning:
            answer["warning"] = warning
        answer["index"] = self.freshness()
        return answer

    def _query_vector(self, request: SearchRequest, store: Store) -> tuple:
        """The query's vector, or None and the reason (never a silent downgrade)."""
        if not self.embedder.enabled:
            if request.mode in ("vector", "hybrid"):
                return None, (
                    f"mode '{request.mode}' needs embeddings, which are not configured "
                    "(embeddings.provider is none); ran keyword search"
                )
            return None, None
        self.vectors.refresh(store)
        if len(self.vectors) == 0:
            return None, "no chunk has a vector yet (embedding in progress); ran keyword search"
        cached = self._query_vectors.get(request.query)
        if cached is not None:
            return cached, None
        budget = self.config.embeddings.query_timeout_s
        future = self._query_pool.submit(self.embedder.embed, [request.query], "query")
        try:
            vector = future.result(timeout=budget)[0]
        except TimeoutError:
            return None, f"query embedding took over {budget:g} s; ran keyword search"
        except MemdError as exc:
            return None, f"query embedding failed ({exc}); ran keyword search"
        with self._readers_lock:  # searches run on many threads
            self._query_vectors[request.query] = vector
            while len(self._query_vectors) > _QUERY_CACHE:
                self._query_vectors.pop(next(iter(self._query_vectors)))
        return vector, None

    def get(self, path: str, start: int = 1, lines: int = 120) -> dict:
        """Lines ``start``.. of an indexed file, read from disk (the files are the truth)."""
        full, inside = self.workspace.resolve(path)
        if not inside and self._read().file_realpath(path) != os.path.realpath(full):
            raise PathRefused(f"path {path!r} leads outside the workspace through a symlink")
        try:
            with open(full, "rb") as f:
                data = f.read()
        except FileNotFoundError as exc:
            raise NotFound(f"no file {path} in workspace '{self.workspace.name}'") from exc
        text = data.decode("utf-8", errors="replace")
        if text.startswith("\ufeff"):
            text = text[1:]
        all_lines = split_lines(text)
        count = min(lines, GET_MAX_LINES)
        out: list[str] = []
        size = 0
        truncated = False
        for line in all_lines[start - 1 : start - 1 + count]:
            encoded = len(line.encode("utf-8")) + 1
            if size + encoded > GET_MAX_BYTES:
                truncated = True
                if not out:  # one line larger than the cap: give its start
                    out.append(line.encode("utf-8")[:GET_MAX_BYTES].decode("utf-8", "ignore"))
                break
            out.append(line)
            size += encoded
        end = start - 1 + len(out)
        truncated = truncated or (lines > GET_MAX_LINES and end < len(all_lines))
        return {
            "path": path,
            "from": start,
            "lines": len(out),
            "text": "\n".join(out) + ("\n" if out else ""),
            "total_lines": len(all_lines),
            "truncated": truncated,
            "next_from": end + 1 if end < len(all_lines) else None,
        }

    def freshness(self) -> dict:
        """How current the index is, as every search answer reports it."""
        store = self._read()
        pending_embeddings = 0
        if self.activity.daemon:
            pending_embeddings = self.activity.pending_embeddings
        elif self.embedder.enabled:
            pending_embeddings = store.count_vectors(self.embedder.key)[1]
        return {
            "generation": int(store.get_meta("generation", "0")),
            "pending_files": self.activity.pending,
            "pending_embeddings": pending_embeddings,
            "stale": self.activity.stale,
            "last_indexed_at": _iso(store.get_meta("last_indexed_at")),
        }

    def status(self) -> dict:
        """Counts, freshness and where things live, for people and monitoring."""
        store = self._read()
        counts = store.counts()
        embedded, _ = store.count_vectors(self.embedder.key) if self.embedder.enabled else (0, 0)
        db = self.store.path
        size = sum(os.path.getsize(f"{db}{s}") for s in ("", "-wal") if os.path.exists(f"{db}{s}"))
        fresh = self.freshness()
        return {
            "version": __version__,
            "workspace": self.workspace.name,
            "path": str(self.workspace.path),
            "roots": [str(r.path) for r in self.workspace.roots],
            "files": counts["files"],
            "chunks": counts["chunks"],
            "embedded_chunks": embedded,
            "pending_files": fresh["pending_files"],
            "pending_embeddings": fresh["pending_embeddings"],
            "provider": self.embedder.provider,
            "model": self.embedder.model,
            "embeddings": self.activity.embeddings,
            "generation": fresh["generation"],
            "last_indexed_at": fresh["last_indexed_at"],
            "watcher": self.activity.watcher,
            "indexing": (
                {"done": self.activity.scan_done, "total": self.activity.scan_total}
                if self.activity.scanning
                else None
            ),
            "database": str(db),
            "database_bytes": size,
        }


FLUSH_SYSTEM = """\
You keep an AI agent's long-term memory, stored as Markdown notes. The conversation is about \
to be compacted: whatever is not written down now is lost.

Write down what must survive:
- durable facts (names, numbers, paths, versions, links) and how things work;
- decisions, with their reasons and what was rejected;
- the user's preferences and corrections;
- commitments, open threads and next steps, with who owns them.

Skip greetings, chit-chat, thinking out loud, and anything already in memory. Each note must \
make sense on its own to someone who never saw this conversation. Be brief and exact.
If nothing is worth keeping, reply with nothing at all."""

FLUSH_USER = """\
Today is {date}. What you reply will be appended to {target}.
Review the conversation above and reply with the notes to keep, as Markdown bullet points \
(optionally under short ### headings), or reply with nothing."""


def _category_of(rel: str) -> str:
    if rel.lower() == "memory.md":
        return "core"
    name = Path(rel).stem
    return "daily" if daily_date(Path(rel).name) else name


def _embedding_text(heading: str, text: str) -> str:
    """What is embedded: the chunk as a reader sees it, led by its heading path when it does
    not start with it."""
    text = readable(text[:_EMBED_MAX_CHARS])
    if heading and not text.lstrip().startswith("#"):
        return f"{heading.replace('#', '').strip()}\n\n{text}"
    return text


def _iso(epoch: str | None) -> str | None:
    if epoch is None:
        return None
    moment = dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
