"""Agent session transcripts as a read-only source: which files, indexing them as they
grow, and retention.

Each ``sessions`` entry of a workspace is a folder of transcripts in one format
(``memd.sources.transcripts``). Its files are shown as ``sessions/<name>/<path in the folder>``
with ``source: "sessions"``. A transcript is read up to its last complete line, turned into
turns, redacted (``memd.sources.redact``) and chunked by turns under the notes' token budget
(``memd.index.turnchunks``); each chunk cites the transcript lines it came from. A transcript
that grew is read on from where the last pass stopped: only new lines are read and chunked.
One not modified for ``max_age_days`` leaves the index; memd never writes to, moves or
deletes a transcript.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memd.config import Chunking, SessionSource
from memd.errors import NotFound, PathRefused
from memd.log import get_logger
from memd.records import IndexReport, Lines
from memd.sources.entries import UNNAMED, holdable, shown_name
from memd.sources.layout import SESSIONS_DIR
from memd.sources.markdown import split_lines
from memd.sources.reading import read_lines
from memd.store.base import Store
from memd.store.rows import FileMeta, SessionState

log = get_logger()

HEAD_BYTES = 4096  # how much of a transcript's start tells it is still the same file
MAX_READ_BYTES = 256 * 1024 * 1024  # a transcript larger than this is read no further
# Bumped when turns are read or chunked differently: every transcript is read again.
SESSIONS_FORMAT = 1


@dataclass(frozen=True)
class SessionRoot:
    """A folder of transcripts shown under ``prefix`` (``sessions/<name>``)."""

    prefix: str
    source: SessionSource

    @property
    def path(self) -> Path:
        return self.source.path


@dataclass(frozen=True)
class SessionFile:
    """A transcript as found on disk."""

    path: str  # shown in results: sessions/<name>/<relative path>
    abspath: str
    size: int
    mtime_ns: int
    root: SessionRoot


class Sessions:
    """The session folders of one workspace and how they are indexed."""

    def __init__(
        self, sources: Sequence[SessionSource], tz: dt.tzinfo | None, chunking: Chunking
    ) -> None:
        self.tz = tz
        self.chunking = chunking
        self.roots: list[SessionRoot] = []
        taken: set[str] = set()
        for source in sources:
            base = name = source.name or source.format
            n = 2
            while name in taken:
                name, n = f"{base}-{n}", n + 1
            taken.add(name)
            self.roots.append(SessionRoot(f"{SESSIONS_DIR}/{name}", source))

    def __bool__(self) -> bool:
        return bool(self.roots)

    # -- files -------------------------------------------------------------------------------

    def scan(self, now: float | None = None) -> list[SessionFile]:
        """Every transcript young enough to be indexed (modified within max_age_days)."""
        now = time.time() if now is None else now
        found = []
        for root in self.roots:
            for abspath in _walk(root):
                entry = self._entry(root, abspath)
                if entry is not None and self._recent(entry, now):
                    found.append(entry)
        return found

    def _entry(self, root: SessionRoot, abspath: str) -> SessionFile | None:
        try:
            st = os.stat(abspath)
        except OSError:
            return None
        rel = os.path.relpath(abspath, root.path).replace(os.sep, "/")
        return SessionFile(f"{root.prefix}/{rel}", abspath, st.st_size, st.st_mtime_ns, root)

    @staticmethod
    def _recent(entry: SessionFile, now: float) -> bool:
        return entry.mtime_ns / 1e9 >= now - entry.root.source.max_age_days * 86400

    def owns(self, abspath: str) -> bool:
        """Whether a change at ``abspath`` may concern a transcript (the watcher's filter)."""
        for root in self.roots:
            base = str(root.path).rstrip("/") + "/"
            if abspath.startswith(base):
                rel = abspath[len(base) :]
                return not any(part.startswith(".") for part in rel.split("/"))
        return False

    def folders(self) -> list[Path]:
        """The session folders that exist (to watch, recursively)."""
        return [root.path for root in self.roots if root.path.is_dir()]

    def _locate(self, abspath: str) -> tuple[SessionRoot, str] | None:
        for root in self.roots:
            base = str(root.path).rstrip("/") + "/"
            if abspath.startswith(base) and _wanted(root, abspath[len(base) :]):
                return root, abspath
        return None

    def resolve(self, path: str) -> str:
        """The absolute path of a transcript named by its result path, refusing anything
        that is not one ('..', other files, unknown folders)."""
        parts = path.split("/")
        if any(p in ("", ".", "..") for p in parts) or "\x00" in path:
            raise PathRefused(f"path {path!r} may not contain '..', '.' or empty parts")
        for root in self.roots:
            if path.startswith(root.prefix + "/"):
                rel = path[len(root.prefix) + 1 :]
                if not _wanted(root, rel):
                    break
                full = root.path / rel
                real, base = os.path.realpath(full), os.path.realpath(root.path)
                if not real.startswith(base.rstrip("/") + "/"):
                    raise PathRefused(f"path {path!r} leads outside its session folder")
                if not full.is_file():
                    raise NotFound(f"no session transcript {path}")
                return str(full)
        raise PathRefused(f"path {path!r} is not a session transcript memd indexes")

    def read(self, path: str, start: int, lines: int, workspace: str) -> Lines:
        """Lines of a transcript as ``memory_get`` returns them: read-only, redacted."""
        from memd.sources.redact import redact_lines  # loaded by workspaces with sessions only

        got = read_lines(self.resolve(path), path, start, lines, workspace)
        return dataclasses.replace(got, text=redact_lines(got.text))

    # -- indexing ----------------------------------------------------------------------------

    def sync(
        self,
        store: Store,
        full: bool = False,
        paths: Iterable[str] | None = None,
        now: float | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Bring the index in line with the transcripts (all of them, or the absolute
        ``paths`` a watcher reported): new lines of grown files, new files, and files gone
        or older than their folder's ``max_age_days`` removed. One transaction a file;
        ``cancel`` stops between two."""
        started = time.perf_counter()
        now = time.time() if now is None else now
        report = IndexReport()
        settings = f"{self.chunking.tokens}/{SESSIONS_FORMAT}"
        if store.get_meta("sessions_format", settings) != settings:
            full = True
        known = store.session_files()
        if paths is None:
            found = self.scan(now)
            present = {f.path for f in found}
            gone = [p for p in known if p not in present]
        else:
            found, gone = [], []
            for abspath in dict.fromkeys(paths):
                located = self._locate(abspath)
                if located is None:
                    continue
                entry = self._entry(*located)
                if entry is not None and self._recent(entry, now):
                    found.append(entry)
                else:
                    shown = f"{located[0].prefix}/{os.path.relpath(abspath, located[0].path)}"
                    if shown in known:
                        gone.append(shown)
        if gone:
            with store.transaction():
                store.delete_files([known[p].file_id for p in gone])
            report.removed += len(gone)
        for entry in [e for e in found if not holdable(e.path)]:  # as reconcile does
            found.remove(entry)
            report.skipped += 1
            report.skipped_files[entry.path] = UNNAMED
            report.warnings.append(f"{shown_name(entry.path)}: {UNNAMED}")
        for entry in found:
            state = known.get(entry.path)
            if not full and state and _same_stat(state, entry):
                report.unchanged += 1
                continue
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            with store.transaction():
                self._index(store, entry, None if full else state, report)
        with store.transaction():
            if report.touched:
                store.set_meta("generation", str(int(store.get_meta("generation", "0")) + 1))
            if not report.cancelled:
                store.set_meta("sessions_format", settings)
        report.seconds = time.perf_counter() - started
        if report.touched or report.warnings:
            log.info("sessions_pass", added=report.added, changed=report.changed,
                     removed=report.removed, chunks=report.chunks,
                     ms=round(report.seconds * 1000))  # fmt: skip
        return report

    def _index(
        self, store: Store, entry: SessionFile, state: SessionState | None, report: IndexReport
    ) -> None:
        """Read a transcript from where the index stopped (or from the start), chunk the
        new turns, and record how far it got."""
        # Loaded by workspaces with session folders only: a notes-only search never pays.
        from memd.index.turnchunks import turn_rows
        from memd.sources.transcripts import read_transcript

        seen = state is not None
        try:
            with open(entry.abspath, "rb") as f:
                if state is not None and (entry.size < state.offset or not _same_start(f, state)):
                    state = None  # rewritten, not appended to: read it all again
                offset = state.offset if state else 0
                f.seek(offset)
                data = f.read(MAX_READ_BYTES)
        except OSError as exc:
            report.skipped += 1
            report.warnings.append(f"{entry.path}: cannot read: {exc.strerror}")
            return
        complete = data[: data.rfind(b"\n") + 1]  # a line being written waits for its end
        first = state.lines + 1 if state else 1
        text = complete.decode("utf-8", errors="replace")
        numbered = enumerate(split_lines(text), start=first)
        source = entry.root.source
        read = read_transcript(numbered, source.format, tools=source.tools == "summary")
        session_id = (state.session_id if state else None) or read.session_id
        session_id = session_id or PurePosixPath(entry.path).stem
        began = (state.started if state else None) or _iso(read.started)
        if began is None:
            began = _iso(dt.datetime.fromtimestamp(entry.mtime_ns / 1e9, dt.UTC))
        rows = turn_rows(read.turns, session_id, self._local(began), self.chunking.tokens,
                         self.tz)  # fmt: skip
        lines = first - 1 + complete.count(b"\n")
        with_head = _head(entry.abspath, offset + len(complete))
        if state is None:
            meta = FileMeta(
                path=entry.path, abspath=entry.abspath, realpath=os.path.realpath(entry.abspath),
                source="sessions", date=self._local(began).date().isoformat(), size=entry.size,
                mtime_ns=entry.mtime_ns, hash=with_head[0], lines=lines,
                modified=entry.mtime_ns / 1e9,
            )  # fmt: skip
            file_id = store.replace_file(meta, rows)
            if seen:
                report.changed += 1
            else:
                report.added += 1
        else:
            file_id = state.file_id
            store.append_chunks(file_id, rows)
            report.changed += 1
        store.save_session(
            SessionState(file_id, entry.size, entry.mtime_ns, offset + len(complete), lines,
                         with_head[0], with_head[1], session_id, began),
            skipped=read.skipped + read.broken,
        )  # fmt: skip
        report.chunks += len(rows)
        if read.skipped or read.broken:
            log.info("session_lines_skipped", path=entry.path, unknown=read.skipped,
                     broken=read.broken)  # fmt: skip

    def _local(self, iso: str) -> dt.datetime:
        return dt.datetime.fromisoformat(iso).astimezone(self.tz)


def combine(a: IndexReport, b: IndexReport) -> IndexReport:
    """Two passes' reports as one (the notes' and the transcripts')."""
    out = IndexReport()
    for f in dataclasses.fields(IndexReport):
        x, y = getattr(a, f.name), getattr(b, f.name)
        joined = x | y if isinstance(x, dict) else x + y
        setattr(out, f.name, x or y if isinstance(x, bool) else joined)
    return out


def _walk(root: SessionRoot) -> Iterator[str]:
    """The transcript files of a session folder, as its format lays them out."""
    base = str(root.path)
    if not os.path.isdir(base):
        return
    for folder, dirs, files in os.walk(base, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), base).replace(os.sep, "/")
            if _wanted(root, rel):
                yield os.path.join(folder, name)


def _wanted(root: SessionRoot, rel: str) -> bool:
    """Whether a folder-relative path is a transcript of the root's format."""
    parts = rel.split("/")
    if not rel.endswith(".jsonl") or any(p.startswith(".") or not p for p in parts):
        return False
    fmt = root.source.format
    if fmt == "claude-code":  # <project>/<session>.jsonl; subagents' files are deeper
        return len(parts) == 2
    if fmt == "codex":
        return parts[-1].startswith("rollout-")
    if fmt == "openclaw":
        return len(parts) == 1
    return True


def _same_stat(state: SessionState, entry: SessionFile) -> bool:
    return (state.size, state.mtime_ns) == (entry.size, entry.mtime_ns)


def _same_start(f, state: SessionState) -> bool:
    """Whether the file still starts as it did when the index last read it."""
    f.seek(0)
    return hashlib.sha256(f.read(state.head_bytes)).hexdigest() == state.head


def _head(abspath: str, read_to: int) -> tuple[str, int]:
    """(sha256, length) of a transcript's first bytes, up to what has been read."""
    n = min(HEAD_BYTES, read_to)
    try:
        with open(abspath, "rb") as f:
            return hashlib.sha256(f.read(n)).hexdigest(), n
    except OSError:
        return hashlib.sha256(b"").hexdigest(), 0


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment else None
