"""The file layout of a workspace: which files are memory, what kind each is, where reads
may go and where writes land.

A workspace has its own folder (``MEMORY.md``, ``memory.md`` and ``memory/**/*.md``) and
any number of extra roots (folders or single files). A workspace folder that is a vault of
notes (it holds Obsidian's ``.obsidian/``, or Markdown but neither ``MEMORY.md`` nor
``memory/``; or the config says ``vault: true``) is read whole, every note by the rules of
an extra root, its MEMORY.md and memory/ as an agent's. Hidden folders and files,
``node_modules`` and excluded globs are skipped; symlinks are followed once, with
real paths de-duplicated so a loop or a second link to the same note is read once. A link
is never followed into ``/proc``, ``/sys`` or ``/dev``, nor to a folder that holds the
workspace or the root being walked (a link to ``/`` or to ``..``).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from stat import S_ISREG
from typing import Any

from memd.config import WorkspaceConfig
from memd.errors import InvalidParams, NotFound, PathRefused
from memd.log import get_logger
from memd.sources.entries import FileEntry, Known, Scan, named, stat_stamp
from memd.sources.globs import GlobSet
from memd.sources.roots import Root, extra_roots
from memd.sources.vault import is_vault, remember

log = get_logger()

CORE_NAMES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
SESSIONS_DIR = "sessions"  # result paths of session transcripts (memd.index.sessions) start here
_IGNORED_NAMES = frozenset({"node_modules"})
# Kernel and device files: never notes, and reading them can leak (/proc/self/environ) or
# never end (/dev/zero, /proc/kcore).
_SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
_CATEGORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
# memory/2026-01-20.md, and the session notes agents write as memory/2026-01-20-topic.md
_DAILY = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[-_ ][^/]*)?\.md")
# Files read in extra roots: Markdown notes, and Obsidian canvases (their text nodes).
NOTE_SUFFIXES = (".md", ".canvas")


def is_note(path: str) -> bool:
    """Whether a file name is of a kind memd reads (in an extra root)."""
    return path.endswith(NOTE_SUFFIXES)


def daily_date(name: str) -> str | None:
    """The ISO date of a daily note file name such as ``2026-01-20.md``, else None."""
    m = _DAILY.fullmatch(name)
    if not m:
        return None
    iso = m[1]
    try:
        if iso.isascii():  # the usual name: checked without taking it apart (a walk's many)
            dt.date.fromisoformat(iso)  # a real day: not 2026-02-30
            return iso
        return dt.date(int(iso[:4]), int(iso[5:7]), int(iso[8:])).isoformat()  # other digits
    except ValueError:
        return None


class Workspace:
    """The files of one configured workspace and the rules that decide them."""

    def __init__(self, config: WorkspaceConfig, state_dir: Path | None = None) -> None:
        self.config = config
        self.name = config.name
        self.path = config.path
        self.exclude = GlobSet(config.exclude)
        self.vault = is_vault(config, state_dir, (*CORE_NAMES, MEMORY_DIR))
        self.roots = [
            Root("", config.path),
            *extra_roots(config.extra_paths, {*CORE_NAMES, MEMORY_DIR, SESSIONS_DIR}),
        ]

    def remember(self, state_dir: Path) -> None:
        """Keep a vault found by looking (``vault: auto``) one from now on."""
        if self.config.vault is None and self.vault:
            remember(self.path, state_dir, self.name)

    def classify(self, root: Root, rel: str, walked: bool = False) -> tuple[str, str | None] | None:
        """``(source, date)`` for a root-relative path memd indexes, else None; ``walked``
        when a walk reached it, so no part of it is a hidden or ignored name."""
        parts = rel.split("/")
        if not is_note(rel) or (not walked and any(_ignored(p) for p in parts)):
            return None
        if self.exclude and self.exclude.match(rel):
            return None
        if not root.is_workspace:
            if root.exclude and root.exclude.match(rel):
                return None
            if root.include and not root.include.match(rel):
                return None
            # Obsidian's Daily Notes name a day's note by its date, in any folder.
            return ("extra", daily_date(parts[-1]))
        if len(parts) == 1 and rel in CORE_NAMES:
            return ("core", None)
        if len(parts) > 1 and parts[0] == MEMORY_DIR and rel.endswith(".md"):
            date = daily_date(parts[-1])
            return ("daily", date) if date else ("memory", None)
        if not self.vault:
            return None
        return ("extra", daily_date(parts[-1]))  # a vault's note, read as an extra root's

    def wants(self, abspath: str) -> bool:
        """Whether a change at ``abspath`` can matter to the index: a memory file, or a
        folder that may hold some (the watcher's filter)."""
        name = os.path.basename(abspath)
        if _ignored(name) or name.endswith(("~", "#")):  # editor swap, backup, lock files
            return False
        for root, rel in self._split(abspath):
            if root.is_file:
                return True
            if rel.endswith(".md"):
                return self.classify(root, rel) is not None
            parts = rel.split("/")
            if any(_ignored(p) for p in parts):
                return False
            # A folder of memory files may appear or vanish; at the top of the workspace
            # only memory/ can hold any (any folder of a vault).
            return not root.is_workspace or self.vault or parts[0] == MEMORY_DIR
        return False

    def core_file(self) -> str:
        """``MEMORY.md``, or ``memory.md`` when only that one exists."""
        upper, lower = self.path / CORE_NAMES[0], self.path / CORE_NAMES[1]
        return CORE_NAMES[1] if not upper.exists() and lower.exists() else CORE_NAMES[0]

    def daily_note(self, date: str) -> str:
        """The workspace-relative daily note of ``date`` (YYYY-MM-DD)."""
        return f"{MEMORY_DIR}/{date}.md"

    def target(self, category: str, today: str) -> tuple[str, str]:
        """``(workspace-relative file, first line of a new file)`` where a category's
        writes land: core is MEMORY.md, daily is today's note, any other name memory/NAME.md."""
        if category == "core":
            return self.core_file(), "# Memory\n"
        if category == "daily":
            return self.daily_note(today), f"# {today}\n"
        if not _CATEGORY.fullmatch(category):
            raise InvalidParams(
                "category", "must be core, daily, or a name of letters, digits, '-' and '_'"
            )
        return f"{MEMORY_DIR}/{category}.md", f"# {category}\n"

    @staticmethod
    def category_of(rel: str) -> str:
        """The category a workspace-relative memory file stands for (inverse of ``target``)."""
        if rel in CORE_NAMES:
            return "core"
        name = PurePosixPath(rel).name
        return "daily" if daily_date(name) else PurePosixPath(rel).stem

    def scan(self) -> list[FileEntry]:
        """Every indexable file, each real file once; raises if the workspace is gone."""
        return self.scan_against(None).changed

    def scan_against(self, known: Known) -> Scan:
        """``scan``, but a plain file whose entry matches its row in ``known`` (``Store.files``,
        kept under the same rules) costs a stat and a lookup and is only named."""
        self.config.check_folder()
        seen_files: set[str] = set()
        seen_dirs: set[str] = set()
        found: list[FileEntry] = []
        same: list[str] = []
        unnamed: list[FileEntry] = []  # names the index cannot hold: reconcile says so
        for root in self.roots:
            for entry in self._walk_root(root, seen_dirs, known):
                if entry.realpath in seen_files:
                    continue
                seen_files.add(entry.realpath)
                if type(entry) is not FileEntry:
                    same.append(entry.path)
                else:
                    (found if named(entry) else unnamed).append(entry)
        return Scan(found, same, tuple(e.path for e in unnamed))

    def _walk_root(self, root: Root, seen_dirs: set[str], known: Known) -> Iterator[Any]:
        if root.is_file:
            if not is_note(root.path.name):
                log.warning("extra_path_not_markdown", path=str(root.path))
            elif entry := self._entry(root, root.prefix, str(root.path)):
                yield entry
            return
        if not root.path.is_dir():
            log.warning("root_missing", root=str(root.path))
            return
        if root.is_workspace and not self.vault:
            for name in CORE_NAMES:
                if entry := self._entry(root, name, str(root.path / name)):
                    yield entry
            start = root.path / MEMORY_DIR
            if start.is_dir():
                yield from self._walk_dir(root, start, MEMORY_DIR, seen_dirs, known)
        else:
            yield from self._walk_dir(root, root.path, "", seen_dirs, known)

    def _walk_dir(
        self, root: Root, folder: Path, rel: str, seen: set[str], known: Known
    ) -> Iterator[Any]:  # a FileEntry to look at, or the row of a file held as it is
        real = os.path.realpath(folder)
        if real in seen:  # a symlink loop, or a second link to a folder already walked
            return
        seen.add(real)
        if rel and (reason := self._not_followed(root, real)):
            log.warning("folder_not_followed", folder=str(folder), resolves_to=real, reason=reason)
            return
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            log.warning("folder_unreadable", folder=str(folder), error=exc.strerror)
            return
        # A file straight in a folder that is no system folder is none either: its own
        # check (three prefix tests a file) is left to files reached through a link.
        plain_ok = not _system(real)
        inside = real.rstrip("/") + "/"
        shown = f"{root.prefix}/" if root.prefix else ""
        for e in entries:
            if _ignored(e.name):
                continue
            child = f"{rel}/{e.name}" if rel else e.name
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                pruned = (self.exclude and self.exclude.match(child)) or (
                    root.exclude and root.exclude.match(child)
                )
                if not pruned:
                    yield from self._walk_dir(root, Path(e.path), child, seen, known)
            elif is_note(e.name):
                # A plain file in a folder whose real path is known needs no realpath():
                # that walk of every path component was most of a no-change pass.
                plain = None if e.is_symlink() or not plain_ok else inside + e.name
                row = known.get(shown + child) if known is not None and plain else None
                if row is not None and row.realpath == plain:  # held as it is: no more work
                    st = _stat(e)
                    if st is not None and (row.size, row.mtime_ns) == (st.st_size, stat_stamp(st)):
                        yield row
                        continue
                if entry := self._entry(root, child, e.path, plain, walked=True):
                    yield entry

    def follows(self, folder: str) -> bool:
        """Whether a folder met while watching (perhaps through a link) is entered: never a
        system folder, nor one that holds the workspace (a link to ``/`` or ``..``)."""
        real = os.path.realpath(folder)
        return not _system(real) and not _under(os.path.realpath(self.path), real)

    def _not_followed(self, root: Root, real: str) -> str | None:
        """Why a folder below a root, reached as ``real``, is not walked (else None)."""
        if _system(real):
            return "system folder"
        holds = (os.path.realpath(self.path), os.path.realpath(root.path))
        if any(_under(path, real) for path in holds):
            return "holds the workspace or the root being walked"
        return None

    def _entry(
        self, root: Root, rel: str, abspath: str, realpath: str | None = None, walked: bool = False
    ) -> FileEntry | None:
        """The entry of a file memd indexes, as it is on disk now; ``realpath`` when the
        walk knows it (a plain file in a checked folder)."""
        kind = (
            self.classify(root, rel, walked)
            if not root.is_file
            else ("extra", daily_date(root.path.name))
        )
        if kind is None:
            return None
        try:
            st = os.stat(abspath)
        except OSError:  # vanished, or a dangling symlink
            return None
        if not S_ISREG(st.st_mode):
            return None
        real = realpath
        if real is None:
            real = os.path.realpath(abspath)
            if _system(real):
                log.warning(
                    "file_not_followed", path=abspath, resolves_to=real, reason="system file"
                )
                return None
        return FileEntry(
            path=_shown(root, rel),
            abspath=abspath,
            realpath=real,
            source=kind[0],
            date=kind[1],
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            stamp=stat_stamp(st),
        )

    def locate(self, abspath: str) -> tuple[str, FileEntry | None] | None:
        """For an absolute path a watcher reported: ``(result path, entry)`` if memd
        indexes it (``entry`` None when the file is gone), else None."""
        for root, rel in self._split(abspath):
            if not root.is_file and self.classify(root, rel) is None:
                continue
            return _shown(root, rel), self._entry(root, rel, abspath)
        return None

    def shown(self, abspath: str) -> str | None:
        """The result-path form of any absolute path under a root, indexed or not."""
        for root, rel in self._split(abspath):
            return _shown(root, rel)
        return None

    def _split(self, abspath: str) -> Iterator[tuple[Root, str]]:
        for root in self.roots:
            if root.is_file:
                if abspath == str(root.path):
                    yield root, root.prefix
                continue
            base = str(root.path).rstrip("/") + "/"
            if abspath.startswith(base):
                yield root, abspath[len(base) :]

    def resolve(self, path: str) -> tuple[str, bool]:
        """Map a result path to ``(absolute path, inside its root)``, refusing what memd
        does not index.

        The flag is False when symlinks lead outside the root; the caller then allows the
        read only if the index holds that same file.
        """
        if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
            raise PathRefused(f"path {path!r} is not a workspace-relative path")
        pure = PurePosixPath(path)
        if pure.is_absolute() or path.startswith("~"):
            raise PathRefused(f"path {path!r} is absolute; give it relative to the workspace")
        parts = path.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise PathRefused(f"path {path!r} may not contain '..', '.' or empty parts")
        root, rel = self._root_for(parts)
        if root.is_file:
            if rel != "":
                raise PathRefused(f"path {path!r} is not a file memd indexes")
        elif self.classify(root, rel) is None:
            raise PathRefused(f"path {path!r} is not a file memd indexes")
        full = root.path if root.is_file else root.path / rel
        if not full.is_file():
            raise NotFound(f"no file {path} in workspace '{self.name}'")
        real = os.path.realpath(full)
        base = os.path.realpath(root.path)
        inside = real == base if root.is_file else real.startswith(base.rstrip("/") + "/")
        return str(full), inside

    def _root_for(self, parts: list[str]) -> tuple[Root, str]:
        for root in self.roots[1:]:
            if parts[0] == root.prefix:
                return root, "/".join(parts[1:])
        return self.roots[0], "/".join(parts)


def _shown(root: Root, rel: str) -> str:
    return f"{root.prefix}/{rel}" if root.prefix and not root.is_file else rel


def _under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _system(real: str) -> bool:
    return any(_under(real, folder) for folder in _SYSTEM_FOLDERS)


def _stat(e: os.DirEntry) -> os.stat_result | None:
    try:
        return e.stat()
    except OSError:
        return None


def _ignored(name: str) -> bool:
    return name.startswith(".") or name in _IGNORED_NAMES


def is_session_path(path: str) -> bool:
    """Whether a result path names a session transcript."""
    return path.startswith(SESSIONS_DIR + "/")
