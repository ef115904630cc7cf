"""The daemon's lifecycle: one process per state folder keeps every workspace fresh and
serves the socket.

Start: take the lock, open the indexes, listen, tell systemd READY, reconcile, watch.
Indexing runs on one writer thread (the only writer of each database); searches run on
other threads with their own read connections, so they never wait for indexing. SIGTERM
and SIGINT stop accepting, let the write transaction in flight finish, remove the socket
and exit 0; SIGHUP reloads the config (a bad one is logged and the old one kept).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from memd import __version__
from memd.config import Config
from memd.configfile import load_config
from memd.embed.providers import Embedder, make_embedder
from memd.errors import ConfigError, MemdError
from memd.log import configure_logging, get_logger
from memd.memory import Memory
from memd.search.bounds import join_warnings, not_caught_up
from memd.serve import heap
from memd.serve.configwatch import POLL_S, ConfigFile
from memd.serve.interimplan import hand_over
from memd.serve.methods import WRITES, call, is_heavy, wait_fresh
from memd.serve.notify import sd_notify, watchdog_interval
from memd.serve.page import serve_page
from memd.serve.pools import BACKGROUND, Pool
from memd.serve.runner import Runner
from memd.serve.server import SocketServer
from memd.serve.statelock import take_lock
from memd.serve.watcher import wait_event
from memd.socketcache import remember
from memd.sources.layout import MEMORY_DIR

log = get_logger()
T = TypeVar("T")

# A stop ends the process within 5 s whatever hangs: a clean close normally takes well under
# a second; work still running on a pool then (an embedding batch, a hung endpoint) is
# abandoned at once, any other thread that lingers _EXIT_GRACE after it, and a close that
# itself hangs is cut off at _STOP_DEADLINE.
_EXIT_GRACE = 0.5
_STOP_DEADLINE = 4.5


class Daemon:
    """``memd serve``: everything a running memd does, until a signal stops it."""

    def __init__(
        self,
        config: Config,
        config_arg: str | Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.config_arg = config_arg
        self.env = os.environ if env is None else env
        self.runners: dict[str, Runner] = {}
        self.cancel = threading.Event()
        self._writer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="memd-writer", initializer=self._is_writer
        )
        self._writer_thread: int | None = None
        # Writes prepare here (validation, LLM extraction) and wait for the writer here, so
        # a queue of writes never holds the threads that searches run on.
        self._prepare = Pool(max_workers=8, thread_name_prefix="memd-write")
        # Reads have lanes of their own, apart from the event loop's default executor (which
        # the index and embed loops use): long queries queue among themselves, so a few of
        # them cannot hold every thread a plain search could run on.
        self._reads = Pool(max_workers=6, thread_name_prefix="memd-read")
        self._heavy = Pool(max_workers=2, thread_name_prefix="memd-heavy")
        # The loop's default executor: the index, embedding and publishing loops' threads.
        self._background = Pool(thread_name_prefix="memd-background")
        self._stop: asyncio.Event | None = None
        # Requests in flight by reload epoch, and memories retired at an epoch: a reload
        # closes what it replaced as soon as the requests that might use it are done.
        self._epoch = 0
        self._active: collections.Counter[int] = collections.Counter()
        self._retired: list[tuple[int, list[Memory | Embedder]]] = []
        self._reloading = asyncio.Lock()
        self._lock_fd: int | None = None
        self._server: SocketServer | None = None
        # One model for every workspace, kept across reloads that keep ``embeddings``: a
        # reload that only changes a search setting no longer stops the back-fill.
        self._embedder: Embedder | None = None
        self.config_file = ConfigFile(config_arg or config.source, self.env)

    def run(self) -> int:
        """Serve until SIGTERM or SIGINT; returns the process exit code."""
        heap.limit_arenas()
        from memd.sources.chunker import keep_encoder_copy

        keep_encoder_copy(self.config.state_dir)  # hooks that read the index load it quickly
        return asyncio.run(self._main())

    def _is_writer(self) -> None:
        self._writer_thread = threading.get_ident()

    def commit(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the writer thread and wait for it: the one thread that writes to
        the indexes and the memory files, so writes never run two at a time."""
        if threading.get_ident() == self._writer_thread:
            return fn()
        return self._writer.submit(fn).result()

    def open_memory(self, name: str | None) -> Memory:
        return self.runners[self.config.workspace(name).name].memory

    async def dispatch(self, method: str, params: Any) -> dict:
        answer = await self._dispatch(method, params)
        if method in ("health", "status") and self.config_file.drift:
            answer["config_drift"] = self.config_file.drift
        return answer

    async def _dispatch(self, method: str, params: Any) -> dict:
        if method == "health":
            return call(self.open_memory, method, params)
        if method in WRITES:
            pool = self._prepare
        else:
            pool = self._heavy if is_heavy(method, params) else self._reads
        epoch = self._epoch
        self._active[epoch] += 1
        try:
            late = await self._wait_fresh(params) if method == "memory_search" else None
            answer = await asyncio.get_running_loop().run_in_executor(
                pool, call, self.open_memory, method, params
            )
            # A wait that ran out says so, unless the index caught up before the search ran.
            if late is not None and answer.get("index", {}).get("stale", True):
                answer["warning"] = join_warnings(late, answer.get("warning"))
            return answer
        finally:
            self._active[epoch] -= 1
            if not self._active[epoch]:
                del self._active[epoch]
            self._close_retired()

    async def _wait_fresh(self, params: Any) -> str | None:
        """A search with ``wait_fresh`` waits here, on the loop, holding no thread; returns
        the answer's warning when the index did not catch up in time."""
        if not isinstance(params, Mapping):
            return None
        try:
            seconds = wait_fresh(params.get("wait_fresh"))
            runner = self.runners[self.config.workspace(params.get("workspace")).name]
        except (MemdError, KeyError, TypeError):
            return None  # the method itself refuses the bad parameter
        if not runner.first_pass.is_set():
            # Just started: an answer from an index still being filled would be "nothing".
            await wait_event(runner.first_pass, self.config.search.first_pass_wait)
        if seconds <= 0:
            return None
        caught, waited = await runner.catch_up(seconds)
        return None if caught else not_caught_up(waited)

    def _close_retired(self) -> None:
        """Close the memories a reload replaced once no request that began before it runs
        (its searches may still read on their connections)."""
        oldest = min(self._active, default=self._epoch)
        for entry in [e for e in self._retired if e[0] < oldest]:
            self._retired.remove(entry)
            self._writer.submit(_release, entry[1])

    async def _open_runners(self, config: Config) -> dict[str, Runner]:
        loop = asyncio.get_running_loop()
        embedder = self._embedder

        def open_all() -> dict[str, Runner]:
            return {
                ws.name: Runner(config, ws.name, loop, self.commit, self.cancel, embedder)
                for ws in config.workspaces
            }

        return await asyncio.to_thread(open_all)

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(self._background)
        self._stop = asyncio.Event()
        try:
            self._lock_fd = take_lock(self.config.state_dir)
            _create_default_workspace(self.config)
            self._embedder = make_embedder(self.config.embeddings)
            self.runners = await self._open_runners(self.config)
            self._server = SocketServer(
                self.config.socket, self.dispatch, self.config.server.idle_timeout_s
            )
            await self._server.start()
            remember(self.config, self.config_arg, self.env)  # the thin client's way here
        except MemdError as exc:
            log.error("daemon_start_failed", error=str(exc))
            await self._close_runners()
            self._release()
            raise
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self._reload()))
        self._start_runners()
        background = [
            asyncio.create_task(self._periodic_reconcile()),
            asyncio.create_task(self._follow_config()),
            asyncio.create_task(heap.trim_periodically()),
            asyncio.create_task(serve_page(self.config, self.dispatch, self.open_memory)),
        ]
        if (interval := watchdog_interval(self.env)) is not None:
            background.append(asyncio.create_task(self._watchdog(interval)))
        sd_notify(f"READY=1\nSTATUS=serving {self.config.socket}\nMAINPID={os.getpid()}", self.env)
        log.info(
            "daemon_started",
            version=__version__,
            pid=os.getpid(),
            socket=str(self.config.socket),
            workspaces=[ws.name for ws in self.config.workspaces],
        )
        await self._stop.wait()
        started = time.perf_counter()
        sd_notify("STOPPING=1", self.env)
        log.info("daemon_stopping")
        _exit_after(_STOP_DEADLINE, 1, "daemon_stop_forced")
        self.cancel.set()  # an index pass in flight ends after its current transaction
        await self._server.close()
        for task in background:
            task.cancel()
        await self._close_runners()
        await asyncio.to_thread(self._writer.shutdown, wait=True)
        self._prepare.shutdown(wait=False, cancel_futures=True)
        self._reads.shutdown(wait=False, cancel_futures=True)
        self._heavy.shutdown(wait=False, cancel_futures=True)
        for runner in self.runners.values():
            runner.memory.close()
        for _, memories in self._retired:
            _close_all(memories)
        if self._embedder is not None:
            self._embedder.close()
        self._release()
        log.info("daemon_stopped", ms=round((time.perf_counter() - started) * 1000))
        # The writer has closed cleanly. Work still running on a pool (an embedding batch,
        # a call to a hung endpoint) has no one to take its result, yet asyncio (its default
        # executor) and the interpreter (at exit) would both wait for it: end here.
        pools = (self._background, BACKGROUND, self._prepare, self._reads, self._heavy)
        running = {pool.name: pool.running for pool in pools if pool.running}
        if running:
            _end(0, "daemon_work_abandoned", "info", running=running)
        _exit_after(_EXIT_GRACE, 0, "daemon_threads_abandoned")
        return 0

    async def _close_runners(self) -> None:
        await asyncio.gather(*(r.close() for r in self.runners.values()), return_exceptions=True)

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    async def _periodic_reconcile(self) -> None:
        while True:
            await asyncio.sleep(self.config.watch.reconcile_minutes * 60)
            self._rescan_all()

    def _rescan_all(self) -> None:
        for runner in self.runners.values():
            runner.rescan()

    def _start_runners(self) -> None:
        # Not inline in a long-lived coroutine: its loop variable would keep the last
        # runner, and all a reload replaced with it (the model, the vectors), alive.
        for runner in self.runners.values():
            runner.start()

    async def _watchdog(self, interval: float) -> None:
        while True:
            sd_notify("WATCHDOG=1", self.env)
            await asyncio.sleep(interval)

    async def _follow_config(self) -> None:
        """The config file changed on disk (an edit, ``memd hooks install --sessions``):
        load it as SIGHUP would."""
        while True:
            await asyncio.sleep(POLL_S)
            if self.config_file.changed():
                log.info("config_file_changed", path=str(self.config_file.path))
                await self._reload()

    async def _reload(self) -> None:
        """SIGHUP: read the config again; keep the old one if the new one is bad."""
        async with self._reloading:  # signals in a row: one reload after the other
            await self._reload_once()

    def _reload_failed(self, exc: ConfigError) -> None:
        log.error("config_reload_failed", error=str(exc), kept="previous config")
        self.config_file.failed(str(exc))

    async def _reload_once(self) -> None:
        self.config_file.read()
        try:
            new = await asyncio.to_thread(load_config, self.config_arg, self.env)
        except ConfigError as exc:
            return self._reload_failed(exc)
        self.config_file.loaded()
        kept = {key: getattr(self.config, key) for key in ("socket", "state_dir", "ui")}
        if any(getattr(new, key) != value for key, value in kept.items()):  # the page too
            log.warning("config_reload_partial", reason="socket, state_dir, ui change on restart")
            self.config_file.needs_restart("socket, state_dir and ui")
            new = dataclasses.replace(new, **kept)
        remember(new, self.config_arg, self.env)
        if new == self.config:
            log.info("config_reloaded", changed=False)
            return
        keep = new.embeddings == self.config.embeddings
        try:
            embedder = self._embedder if keep else make_embedder(new.embeddings)
        except ConfigError as exc:  # e.g. provider local without memd[local]
            return self._reload_failed(exc)
        configure_logging(new.log.level, new.log.format)
        old = self.runners
        handed = hand_over(old, self.config, new) if keep else {}
        await self._close_runners()
        retired: list[Memory | Embedder] = [r.memory for r in old.values()]
        if not keep and self._embedder is not None:
            retired.append(self._embedder)  # closed once the requests using it are done
        self._embedder = embedder
        self.config = new
        self.runners = await self._open_runners(new)
        for name, state in handed.items():
            self.runners[name].interim.take_over(state)
        self._start_runners()
        self._retired.append((self._epoch, retired))
        self._epoch += 1
        self._close_retired()
        log.info("config_reloaded", changed=True, workspaces=list(self.runners),
                 model="kept" if keep else "replaced")  # fmt: skip


def _exit_after(seconds: float, code: int, event: str) -> None:
    """End the process ``seconds`` from now unless it has ended by then (a daemon thread,
    so a normal exit does not wait for it)."""

    def fire() -> None:
        time.sleep(seconds)
        blocked = sorted(t.name for t in threading.enumerate() if t.is_alive() and not t.daemon)
        _end(code, event, "warning", threads=blocked)

    threading.Thread(target=fire, name=f"memd-{event}", daemon=True).start()


def _end(code: int, event: str, level: str, **fields: Any) -> NoReturn:
    """Log ``event`` and end the process now, without waiting for any thread."""
    getattr(log, level)(event, exit_code=code, **fields)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        sys.stdout.flush()
    os._exit(code)


def _create_default_workspace(config: Config) -> None:
    """With no config file at all, make ``~/clawd/memory`` so a first start has a home.

    A configured folder is never created: it may be a drive that is not mounted yet.
    """
    if config.source is not None:
        return
    folder = config.workspace().path / MEMORY_DIR
    if not folder.exists():
        folder.mkdir(parents=True)
        log.info("workspace_created", path=str(folder.parent))


def _close_all(memories: list[Memory | Embedder]) -> None:
    for memory in memories:
        with contextlib.suppress(Exception):
            memory.close()


def _release(memories: list[Memory | Embedder]) -> None:
    """Close what a reload replaced and free it now: its runners, tasks and memories hold
    one another in cycles that only a full collection frees, and an idle daemon may not
    run one for hours (eight reloads kept 35 MB each with the local model)."""
    _close_all(memories)
    memories.clear()
    gc.collect()
    heap.trim()
