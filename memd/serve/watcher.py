"""Watch a workspace's folders with watchfiles, and keep watching whatever happens to them.

The workspace folder is watched without recursion (for ``MEMORY.md``), ``memory/`` and
extra folders recursively, so a workspace that also holds code does not spend the system's
inotify watches. A watcher that fails is restarted with back-off; one whose folder was
deleted or replaced (same path, new inode) is restarted when the folder is back. After
every (re)start the owner is told to reconcile, since events may have been missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, awatch
from watchfiles._rust_notify import WatchfilesRustInternalError

from memd.index.sessions import Sessions
from memd.log import get_logger
from memd.serve.tripwire import Tripwire, folders_below
from memd.sources.layout import MEMORY_DIR, Workspace

log = get_logger()

MAX_GROUP_MS = 2000  # a file written continuously is still indexed this often
# watchfiles hands changes on after this much quiet (or this long after the first): soon, so
# answers count them as pending at once; the owner waits for debounce_ms of quiet itself.
_EVENT_STEP_MS = 50
_EVENT_GROUP_MS = 500


class Watcher:
    """Reports changed paths of one workspace to ``on_changes``; never gives up."""

    def __init__(
        self,
        workspace: Workspace,
        debounce_ms: int,
        on_changes: Callable[[set[str]], None],
        on_started: Callable[[], None],
        on_state: Callable[[str], None],
        check_seconds: float = 2.0,
        links: Callable[[], dict[str, str]] | None = None,
        sessions: Sessions | None = None,
    ) -> None:
        self.workspace = workspace
        self.sessions = sessions  # transcript folders: watched, never written
        # {target realpath: link abspath} of symlinked files: their targets may live in a
        # folder no one watches, so those folders are watched too.
        self.links = links or dict
        self._linked: dict[str, str] = {}
        self._tripwire: Tripwire | None = None
        self._walked = False  # some tree is watched folder by folder
        self.debounce_ms = debounce_ms
        self.on_changes = on_changes
        self.on_started = on_started
        self.on_state = on_state
        self.check_seconds = check_seconds
        self._undecodable: set[str] = set()  # watchfiles' errors for names not UTF-8, logged

    def _targets(self) -> tuple[list[str], list[str]]:
        """(folders to watch alone, folders to watch with everything below them)."""
        flat = [str(self.workspace.path)]
        deep = []
        memory = self.workspace.path / MEMORY_DIR
        trees = [str(memory)] if memory.is_dir() else []
        if self.workspace.vault:  # every folder of a vault holds notes
            flat, trees = [], [str(self.workspace.path)]
        for root in self.workspace.roots[1:]:
            if root.is_file:
                flat.append(str(root.path.parent))
            elif root.path.is_dir():
                trees.append(str(root.path))
        if self.sessions:
            trees += [str(folder) for folder in self.sessions.folders()]
        for top in trees:
            # A recursive watch follows every link: one to / would watch the whole disk.
            # Such a tree is watched folder by folder, the links memd does not follow left out.
            folders = self._folders(top)
            if folders is None:
                deep.append(top)
            else:
                flat += folders
                self._walked = True
        for target in self._linked:
            folder = os.path.dirname(target)
            covered = any(folder == d or folder.startswith(d.rstrip("/") + "/") for d in deep)
            if not covered and folder not in flat and os.path.isdir(folder):
                flat.append(folder)
        return flat, deep

    def _folders(self, top: str) -> list[str] | None:
        """The folders of the tree at ``top`` memd follows, when a link in it leads where memd
        does not go (else None: the tree may be watched whole)."""
        folders, refused = folders_below(top, self.workspace.follows)
        return folders if refused else None

    def _identity(self) -> tuple:
        paths = [self.workspace.path, self.workspace.path / MEMORY_DIR]
        paths += [r.path for r in self.workspace.roots[1:]]
        paths += [Path(os.path.dirname(t)) for t in self._linked]
        if self.sessions:  # a session folder that appears is watched from then on
            paths += [r.path for r in self.sessions.roots]
        # Trees watched folder by folder: a new folder there needs a watch of its own.
        walked = tuple(self._targets()[0]) if self._walked else ()
        return (*(_inode(p) for p in paths), walked, frozenset(self.links()))

    def _keep(self, change: Change, path: str) -> bool:
        return path in self._linked or self._wanted(path)

    def _wanted(self, path: str) -> bool:
        return self.workspace.wants(path) or bool(self.sessions and self.sessions.owns(path))

    def _relevant(self, path: str) -> str | None:
        """The path to report for a change at ``path`` (a link target as its link)."""
        if path in self._linked:
            return self._linked[path]
        return path if self._wanted(path) else None

    def drain(self) -> tuple[set[str], bool] | None:
        """What changed up to this instant, read from the kernel without waiting (see
        ``memd.serve.tripwire``): ``(paths, events_lost)``, or None where that is not possible."""
        tripwire = self._tripwire
        if tripwire is None or not tripwire.active:
            return None
        return tripwire.drain()

    def _report(self, paths: set[str]) -> None:
        """Hand on changed paths, an edited link target as the link memd indexes.

        With a tripwire, watchfiles only rings the bell and the tripwire says what changed:
        an event a reader's catch-up already took from it is not handed on a second time
        (which would mark a fresh index stale again)."""
        drained = self.drain()
        if drained is None:
            changed = {self._linked.get(p, p) for p in paths}
        else:
            changed, lost = drained
            if lost:
                self.on_started()  # events were lost: only a whole pass is sure
        if changed:
            self.on_changes(changed)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set, restarting after failures."""
        backoff = 1.0
        while not stop.is_set():
            if not self.workspace.path.is_dir():
                self.on_state("waiting for folder")
                await wait_event(stop, self.check_seconds)
                continue
            self._linked = dict(self.links())
            flat, deep = self._targets()
            identity = self._identity()
            halt = asyncio.Event()
            tasks: list[asyncio.Task] = []
            try:
                self._tripwire = await _open_tripwire(
                    flat, deep, self._relevant, self.workspace.follows
                )
                tasks.append(asyncio.create_task(self._watch(flat, False, halt)))
                if deep:
                    tasks.append(asyncio.create_task(self._watch(deep, True, halt)))
                self.on_state("running")
                self.on_started()
                failed = await self._supervise(tasks, identity, stop)
            finally:
                # Also when this task is cancelled (a reload, a stop): a watch left running
                # keeps its inotify instance and thread for the life of the process.
                halt.set()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                if self._tripwire is not None:
                    self._tripwire.close()
                    self._tripwire = None
            if stop.is_set():
                break
            self.on_state("restarting")
            backoff = min(backoff * 2, 30.0) if failed else 1.0
            await wait_event(stop, backoff if failed else 0.1)
        self.on_state("not running")

    async def _supervise(
        self, tasks: list[asyncio.Task], identity: tuple, stop: asyncio.Event
    ) -> bool:
        """Wait until a watcher ends (True: it failed) or the folders change (False)."""
        stopper = asyncio.create_task(stop.wait())
        try:
            while True:
                done, _ = await asyncio.wait(
                    [*tasks, stopper],
                    timeout=self.check_seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if stop.is_set():
                    return False
                for task in done:
                    exc = task.exception()
                    log.warning("watcher_failed", workspace=self.workspace.name, error=repr(exc))
                    return True
                now = self._identity()
                if now[:-1] != identity[:-1]:
                    log.warning("watch_folders_replaced", workspace=self.workspace.name)
                    return False
                if now != identity:
                    log.info("watch_links_changed", workspace=self.workspace.name)
                    return False
        finally:
            stopper.cancel()

    async def _watch(self, paths: list[str], recursive: bool, halt: asyncio.Event) -> None:
        while not halt.is_set():
            try:
                async for changes in awatch(
                    *paths,
                    watch_filter=self._keep,
                    debounce=_EVENT_GROUP_MS,
                    step=_EVENT_STEP_MS,
                    stop_event=halt,
                    recursive=recursive,
                    ignore_permission_denied=True,
                ):
                    self._report({path for _, path in changes})
            except Exception as exc:
                # watchfiles gives up on the first changed file whose name is not UTF-8,
                # with the other changes of its batch: watch again at once, and have a
                # whole pass find what changed (one that skips that file, and names it).
                said = _undecodable(exc)
                if said is None:
                    raise
                if said not in self._undecodable:
                    self._undecodable.add(said)
                    log.warning("watch_name_not_utf8", workspace=self.workspace.name, error=said)
                self.on_started()
                await wait_event(halt, 0.2)  # never a busy loop, whatever fails
                continue
            if not halt.is_set():
                raise RuntimeError(f"watching {', '.join(paths)} stopped")


def _undecodable(exc: BaseException) -> str | None:
    """What watchfiles said of a name that is not UTF-8, when that is all ``exc`` is
    (anyio hands it on in an exception group); else None."""
    if isinstance(exc, BaseExceptionGroup):
        said = [_undecodable(e) for e in exc.exceptions]
        return None if None in said else "; ".join(said)  # type: ignore[arg-type]
    if isinstance(exc, WatchfilesRustInternalError) and "decode path" in str(exc):
        return str(exc)
    return None


async def _open_tripwire(
    flat: list[str], deep: list[str], keep: Callable, follow: Callable
) -> Tripwire:
    """A tripwire made off the loop; one a reload cancelled mid-way is closed once made
    (each reload during a start-up used to keep an inotify instance for good)."""
    made = asyncio.get_running_loop().run_in_executor(None, Tripwire, flat, deep, keep, follow)
    try:
        return await asyncio.shield(made)
    except asyncio.CancelledError:
        made.add_done_callback(_close_made)
        raise


def _close_made(made: asyncio.Future) -> None:
    if not made.cancelled() and made.exception() is None:
        made.result().close()


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


async def wait_event(event: asyncio.Event, seconds: float | None) -> None:
    """Wait until ``event`` is set or ``seconds`` pass (None: no time limit)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout=seconds)
