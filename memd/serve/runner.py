"""One workspace inside the daemon: its watcher, its index loop and its embedding loop,
and what it is doing right now (the ``Activity`` every answer reports).

The daemon (``memd.serve.daemon``) owns the process, the socket and the writer thread; a
runner owns one workspace's work and hands its writes to the daemon's writer (``commit``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

from memd.config import Config
from memd.embed.providers import Embedder
from memd.errors import BackendUnavailable, MemdError, WorkspaceMissing
from memd.log import get_logger
from memd.memory import Memory
from memd.records import Activity, IndexReport
from memd.serve.currency import CurrencyLoop
from memd.serve.interimplan import InterimPlan
from memd.serve.pools import in_niced
from memd.serve.publisher import Publisher
from memd.serve.reviews import ReviewSchedule
from memd.serve.supervise import supervise
from memd.serve.watcher import MAX_GROUP_MS, Watcher, wait_event

log = get_logger()
T = TypeVar("T")

_RETRY_SECONDS = 5.0
_EMBED_BATCH = 32
_COOLDOWN_MIN, _COOLDOWN_MAX = 5.0, 300.0
_SETTLED_CHECK = 32  # up to this many waiting files are checked against the index
_RATE_WINDOW = 60.0  # seconds of embedding steps the rate is measured over


class Runner:
    """One workspace inside the daemon: its memory, its watcher, its indexing and embedding
    loops, and what they are doing (handed to answers as an ``Activity``)."""

    def __init__(
        self,
        config: Config,
        name: str,
        loop: asyncio.AbstractEventLoop,
        commit: Callable[[Callable[[], T]], T],
        cancel: threading.Event,
        embedder: Embedder | None = None,
    ) -> None:
        self.config = config
        self.cancel = cancel  # set when the daemon stops: an index pass ends early
        self.loop = loop
        # What waits to be indexed, shared with answers on other threads: a tripwire event
        # is drained and counted under this lock, so no answer can take an event from the
        # kernel and leave it, uncounted, where another answer (or a catch-up) misses it.
        self._lock = threading.Lock()
        self.pending: set[str] = set()
        self.in_flight = 0
        self.sweep = True  # what the index missed while memd was not running
        self.rebuild = False
        self.scanning = True  # a whole-workspace pass is queued or running
        # Changes taken in so far (files or a whole pass), and how many of them an ended
        # pass has indexed: a catch-up waits for the count it saw when it began.
        self._seen = 1
        self._indexed = 0
        self._passed = asyncio.Event()  # set (and replaced) when a pass ends
        self.scan_done = self.scan_total = 0
        self.first_pass = asyncio.Event()  # set once the first whole pass has ended
        self.edited_since: float | None = None  # files indexed after it are edits: embed first
        self.watcher_state = "not running"
        self.embeddings = "idle"
        self.pending_embeddings: int | None = None  # None: counted when asked
        # (started, ended, chunks) of the embedding steps of the last _RATE_WINDOW seconds.
        self._steps: deque[tuple[float, float, int]] = deque()
        self.kick = asyncio.Event()
        self.embed_kick = asyncio.Event()
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task] = []
        self.links: dict[str, str] = {}  # symlinked files' targets, for the watcher
        self.watcher: Watcher | None = None
        self.last_event = 0.0  # loop time of the latest file event
        self.urgent = asyncio.Event()  # a reader waits for the index: index at once
        self.memory = Memory(
            config,
            name,
            concurrent_reads=True,
            activity=self.activity,
            commit=commit,
            on_corrupt=lambda: self.rescan(True),
            on_written=lambda: self.loop.call_soon_threadsafe(self._chunks_written),
            catch_up=lambda _seconds: True,  # waited in dispatch, which tells if it was late
            embedder=embedder,  # the daemon's: kept across reloads that keep ``embeddings``
        )
        self.interim = InterimPlan(self.memory.db, config.embeddings)
        self.publisher = (
            Publisher(self.memory, config.team, self.stop, self.first_pass)
            if config.team.publishes(name)
            else None
        )
        self.currency = CurrencyLoop(self.memory, self.stop, self.first_pass)
        self.reviews = (
            ReviewSchedule(
                self.memory,
                config,
                self.stop,
                self.first_pass,
                lambda: bool(self.pending_embeddings),
            )
            if config.review.enabled
            else None
        )

    def activity(self) -> Activity:
        """What this workspace's loops are doing right now, counting every file event the
        kernel has queued up to this instant (not only those the watcher handed on)."""
        with self._lock:
            lost = self._take_in_locked()[1]
            waiting, in_flight, scanning = set(self.pending), self.in_flight, self.scanning
        if 0 < len(waiting) <= _SETTLED_CHECK:
            # A flush's own append is already indexed when it answers; its file event is
            # still queued for the watcher, but no edit waits there.
            waiting -= self.memory.db.settled(waiting)
        return Activity(
            daemon=True,
            watcher=self.watcher_state,
            pending_files=len(waiting) + in_flight,
            scanning=scanning or lost,
            scan_done=self.scan_done,
            scan_total=self.scan_total,
            embeddings=self.embeddings,
            pending_embeddings=self.pending_embeddings,
            embed_per_s=self._embed_rate(),
            team=self.publisher.info() if self.publisher is not None else None,
            review=self.reviews.info() if self.reviews is not None else None,
        )

    def _embed_rate(self) -> float | None:
        """Chunks embedded a second over the recent window (not since start: a machine
        that got busy shows it); None before a step ended, or when embedding stopped."""
        steps = list(self._steps)
        if not steps or time.monotonic() - steps[-1][1] > _RATE_WINDOW:
            return None
        took = steps[-1][1] - steps[0][0]
        return sum(n for _, _, n in steps) / took if took > 0 else None

    def _embedded(self, started: float, saved: int) -> None:
        now = time.monotonic()
        self._steps.append((started, now, saved))
        while self._steps and self._steps[0][1] < now - _RATE_WINDOW:
            self._steps.popleft()

    def start(self) -> None:
        self.watcher = watcher = Watcher(
            self.memory.workspace,
            self.config.watch.debounce_ms,
            on_changes=self.changed,
            on_started=self.rescan,
            on_state=self._watcher_state,
            sessions=self.memory.sessions,
            links=lambda: self.links,
        )
        # The first pass starts when the watcher does (its on_started), so edits made during
        # the pass are seen and one pass is enough; without a watcher it starts anyway.
        self.loop.call_later(_RETRY_SECONDS, self.kick.set)
        name = self.memory.workspace.name
        loops: dict[str, Callable[[], Awaitable[None]]] = {"index": self._index_loop}
        loops |= {"watch": lambda: watcher.run(self.stop), "currency": self.currency.run}
        if self.memory.embedder.enabled:
            loops["embed"] = self._embed_loop
        if self.publisher is not None:
            loops["publish"] = self.publisher.run
        if self.reviews is not None:
            loops["review"] = self.reviews.run
        records = {"publish": self.publisher.task} if self.publisher is not None else {}
        for kind, run in loops.items():
            job = supervise(f"{kind}-{name}", run, self.stop, records.get(kind))
            self.tasks.append(asyncio.create_task(job, name=f"{kind}-{name}"))

    async def close(self) -> None:
        self.stop.set()
        self.interim.stop.set()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def changed(self, paths: set[str]) -> None:
        """Files changed (any thread): index them after the debounce."""
        if paths:
            with self._lock:
                self._add_locked(paths)
            self._wake()

    def rescan(self, rebuild: bool = False) -> None:
        """Queue a whole-workspace pass (any thread); ``rebuild`` makes a new database."""
        with self._lock:
            self._rescan_locked(rebuild)
        self._wake()

    def _take_in(self) -> bool:
        """Count what the tripwire saw (any thread); False when there is no tripwire."""
        with self._lock:
            active, _lost = self._take_in_locked()
        return active

    def _take_in_locked(self) -> tuple[bool, bool]:
        """(the tripwire is active, events were lost); call with the lock held."""
        drained = self.watcher.drain() if self.watcher is not None else None
        if drained is None:
            return False, False
        paths, lost = drained
        if paths:
            self._add_locked(paths)
        if lost:
            self._rescan_locked(False)
        if paths or lost:
            self._wake()
        return True, lost

    def _add_locked(self, paths: set[str]) -> None:
        self.pending |= paths
        self.last_event = self.loop.time()  # monotonic: the same clock on any thread
        self._seen += 1

    def _rescan_locked(self, rebuild: bool) -> None:
        self.sweep = self.scanning = True
        self.rebuild = self.rebuild or rebuild
        self._seen += 1

    def _wake(self) -> None:
        """Start the index loop, from any thread."""
        self.loop.call_soon_threadsafe(self.kick.set)

    async def catch_up(self, seconds: float) -> tuple[bool, float]:
        """Wait (up to ``seconds``) until the index holds every change known now: what the
        kernel reported so far (or, without a tripwire, what the files' stat says differs),
        indexed first, without the usual debounce. Returns (caught up, seconds waited)."""
        started = self.loop.time()
        deadline = started + seconds
        if not self._take_in():
            paths, gone = await asyncio.to_thread(self.memory.db.stale_paths)
            self.changed(paths)
            if gone:
                self.rescan()
        target = self._seen
        while self._indexed < target:
            left = deadline - self.loop.time()
            if left <= 0:
                return False, self.loop.time() - started
            self.urgent.set()
            await wait_event(self._passed, left)
        return True, self.loop.time() - started

    async def _settle(self) -> None:
        """Let a burst of writes end before indexing it: ``watch.debounce_ms`` of quiet, at
        most ``MAX_GROUP_MS`` after the pass was asked for; a waiting reader cuts it short."""
        quiet = self.config.watch.debounce_ms / 1000
        latest = self.loop.time() + MAX_GROUP_MS / 1000
        while not self.urgent.is_set():
            left = min(self.last_event + quiet, latest) - self.loop.time()
            if left <= 0:
                break
            await wait_event(self.urgent, left)
        self.urgent.clear()

    def _chunks_written(self) -> None:
        """An index pass or a flush/store wrote chunks: they wait for vectors from now on,
        and for the team store (a flush must not wait for the minute's publish pass)."""
        self.pending_embeddings = None  # unknown until the embed loop counts: answers count
        self.embed_kick.set()
        if self.publisher is not None:
            self.publisher.kick.set()

    def _watcher_state(self, state: str) -> None:
        if state != self.watcher_state:
            log.info("watcher_state", workspace=self.memory.workspace.name, state=state)
        self.watcher_state = state

    def _progress(self, done: int, total: int) -> None:
        self.scan_done, self.scan_total = done, total

    async def _index_loop(self) -> None:
        while True:
            await self.kick.wait()
            self.kick.clear()
            self._take_in()
            if self.pending and not (self.sweep or self.rebuild):
                await self._settle()
            with self._lock:
                sweep, rebuild, paths, taken = self.sweep, self.rebuild, self.pending, self._seen
                self.sweep, self.rebuild, self.pending = False, False, set()
                self.in_flight = len(paths)
            try:
                await self._pass(sweep, rebuild, paths)
                self._indexed = taken
            except WorkspaceMissing as exc:
                # Nothing to index until the folder is back; the watcher reports that.
                self._indexed = taken
                log.warning(
                    "workspace_missing", workspace=self.memory.workspace.name, error=str(exc)
                )
            except MemdError as exc:
                log.error("index_failed", workspace=self.memory.workspace.name, error=str(exc))
                with self._lock:
                    self.sweep |= sweep
                    self.rebuild |= rebuild
                    self.pending |= paths
                self.loop.call_later(_RETRY_SECONDS, self.kick.set)
            finally:
                with self._lock:
                    self.in_flight = 0
                    self.scanning = self.sweep or self.rebuild
                if sweep or rebuild:
                    self.first_pass.set()  # ended, even in failure: nobody waits for a retry
                    self.edited_since = self.edited_since or time.time()
                self._passed.set()
                self._passed = asyncio.Event()

    async def _pass(self, sweep: bool, rebuild: bool, paths: set[str]) -> IndexReport | None:
        memory, cancel = self.memory, self.cancel
        if rebuild:
            report = await asyncio.to_thread(memory.rebuild)
        elif sweep:
            self._progress(0, 0)
            report = await asyncio.to_thread(memory.index, False, self._progress, cancel)
        elif paths:
            report = await asyncio.to_thread(memory.index_paths, paths, cancel)
        else:
            return None
        if sweep or rebuild or report.touched:
            self.links = await asyncio.to_thread(memory.db.link_targets)
            if self.publisher is not None:
                self.publisher.kick.set()
        self.currency.note(None if sweep or rebuild else paths)  # what is current, after
        return report

    async def _embed_loop(self) -> None:
        """Back-fill vectors: files quiet for ``embeddings.debounce_ms``, in batches, with a
        growing cool-down while the provider fails. Keyword search never waits for this."""
        memory = self.memory
        settings = self.config.embeddings
        cooldown = 0.0
        await self.first_pass.wait()  # the queue's order needs every file (MEMORY.md first)
        while True:
            try:
                await asyncio.to_thread(memory.db.learn_dimensions)  # once: stale sizes
                pending = (await asyncio.to_thread(memory.db.vector_counts))[1]
                self.pending_embeddings = pending
                if self.interim.due(pending):  # minutes: the full model waits for it
                    self.embeddings = "making interim vectors"
                    await in_niced(memory.db.build_interim, self.interim.stop)
                    continue
                quiet_since = time.time() - settings.debounce_ms / 1000
                saved = 0
                if pending:
                    self.embeddings = "embedding"
                    started = time.monotonic()
                    saved = await in_niced(  # requests first (memd.serve.pools)
                        memory.embed_step, _EMBED_BATCH, quiet_since, self.edited_since
                    )
                if saved:
                    self._embedded(started, saved)
                    cooldown = 0.0
                    if self.publisher is not None:
                        self.publisher.kick.set()
                    continue
                self.embeddings = "idle"
            except BackendUnavailable as exc:
                cooldown = min(max(cooldown * 2, _COOLDOWN_MIN), _COOLDOWN_MAX)
                self.embeddings = f"cooling down {cooldown:g} s after: {exc}"
                log.warning("embeddings_unavailable", workspace=memory.workspace.name,
                            error=str(exc), retry_in_s=cooldown)  # fmt: skip
                await wait_event(self.stop, cooldown)
                continue
            except MemdError as exc:
                log.error("embedding_failed", workspace=memory.workspace.name, error=str(exc))
                await wait_event(self.stop, _RETRY_SECONDS)
                continue
            # Nothing ready: sleep until an index pass writes chunks, or until the files
            # that are still settling have been quiet long enough.
            self.embed_kick.clear()
            await wait_event(
                self.embed_kick, settings.debounce_ms / 1000 + 0.05 if pending else None
            )
