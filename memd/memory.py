"""One workspace's memory: the library API that the CLI, the socket server and MCP call.

``Memory`` ties a workspace's files to its index database and offers index, search,
read and status. It is plain synchronous code; the daemon runs it in worker threads.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from memd import __version__
from memd.config import Config
from memd.errors import NotFound, PathRefused
from memd.indexer import IndexReport, Progress, reconcile
from memd.markdown import split_lines
from memd.search import SearchRequest, keyword_search
from memd.store import IndexCorrupt, Store
from memd.workspace import Workspace

GET_MAX_LINES = 1000
GET_MAX_BYTES = 64 * 1024


def database_path(config: Config, workspace: str) -> Path:
    """Where a workspace's index lives under the state folder."""
    return config.state_dir / f"index-{workspace}.sqlite"


class Memory:
    """The index, search and files of one configured workspace."""

    def __init__(self, config: Config, workspace: str | None = None) -> None:
        self.config = config
        self.workspace = Workspace(config.workspace(workspace))
        self.store = Store.open(database_path(config, self.workspace.name))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index(self, full: bool = False, progress: Progress | None = None) -> IndexReport:
        """Bring the index in line with the files (everything re-chunked with ``full``)."""

        def run() -> IndexReport:
            if full:  # the one time a user asks for a rebuild, also look for damage
                self.store.check()
            return reconcile(self.store, self.workspace, self.config.chunking, full, progress)

        try:
            return run()
        except IndexCorrupt as exc:
            self._rebuild_store(exc)
            return run()

    def _rebuild_store(self, exc: IndexCorrupt) -> None:
        """Move a damaged database aside and start an empty one (the files are the truth)."""
        path = self.store.path
        self.store.close()
        Store.move_aside(path, str(exc))
        self.store = Store.open(path)

    def search(self, request: SearchRequest) -> dict:
        """Search the index; the answer says what ran and how fresh the index is."""
        try:
            return self._search(request)
        except IndexCorrupt as exc:
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
        answer["results"] = [r.as_dict() for r in keyword_search(self.store, request)]
        answer["index"] = self.freshness()
        return answer

    def get(self, path: str, start: int = 1, lines: int = 120) -> dict:
        """Lines ``start``.. of an indexed file, read from disk (the files are the truth)."""
        full, inside = self.workspace.resolve(path)
        if not inside and self.store.file_realpath(path) != os.path.realpath(full):
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
        return {
            "generation": int(self.store.get_meta("generation", "0")),
            "pending_files": 0,
            "pending_embeddings": 0,
            "stale": False,
            "last_indexed_at": _iso(self.store.get_meta("last_indexed_at")),
        }

    def status(self) -> dict:
        """Counts, freshness and where things live, for people and monitoring."""
        counts = self.store.counts()
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
            "watcher": "not running",
            "database": str(db),
            "database_bytes": size,
        }


def _iso(epoch: str | None) -> str | None:
    if epoch is None:
        return None
    moment = dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
