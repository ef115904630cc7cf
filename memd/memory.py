"""One workspace's memory: the library API that the CLI, the socket server and MCP call.

``Memory`` ties a workspace's files to its index database and offers index, search,
read and status. It is plain synchronous code; the daemon runs it in worker threads.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memd import __version__
from memd.config import Config
from memd.errors import NotFound, PathRefused
from memd.indexer import IndexReport, Progress, reconcile, reconcile_paths
from memd.markdown import split_lines
from memd.search import SearchRequest, keyword_search
from memd.store import IndexCorrupt, Store
from memd.workspace import Workspace

GET_MAX_LINES = 1000
GET_MAX_BYTES = 64 * 1024


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
        self, config: Config, workspace: str | None = None, concurrent_reads: bool = False
    ) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace(workspace))
        self.store = Store.open(database_path(config, self.workspace.name))
        self.activity = Activity()
        self._concurrent = concurrent_reads
        self._local = threading.local()
        self._readers: list[Store] = []
        self._readers_lock = threading.Lock()
        self._epoch = 0  # bumped when the database file is replaced

    def close(self) -> None:
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
        answer: dict = {"results": [], "mode": "keyword", "provider": "none", "model": None}
        if request.mode in ("vector", "hybrid"):
            answer["warning"] = (
                f"mode '{request.mode}' needs embeddings, which are not configured; "
                "ran keyword search"
            )
        answer["results"] = [r.as_dict() for r in keyword_search(self._read(), request)]
        answer["index"] = self.freshness()
        return answer

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
        return {
            "generation": int(store.get_meta("generation", "0")),
            "pending_files": self.activity.pending,
            "pending_embeddings": 0,
            "stale": self.activity.stale,
            "last_indexed_at": _iso(store.get_meta("last_indexed_at")),
        }

    def status(self) -> dict:
        """Counts, freshness and where things live, for people and monitoring."""
        counts = self._read().counts()
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
            "embedded_chunks": 0,
            "pending_files": fresh["pending_files"],
            "pending_embeddings": fresh["pending_embeddings"],
            "provider": "none",
            "model": None,
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


def _iso(epoch: str | None) -> str | None:
    if epoch is None:
        return None
    moment = dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
