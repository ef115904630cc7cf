"""Answer method calls through the running daemon, or directly on the index without one.

The CLI and the MCP bridge both route through here, so they behave the same way: a daemon
on the socket is asked first (one warm index for every agent), provided it serves this
config; without one, each workspace's index is opened once and a search first brings it up
to date, since nothing is watching. The index modules are imported only then, so a command
answered by the daemon costs little more than the socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memd.client import Client, WrongDaemon, connect
from memd.errors import ConfigError
from memd.log import get_logger

if TYPE_CHECKING:
    from memd.config import Config
    from memd.index.finishlock import Finishing
    from memd.memory import Memory
    from memd.records import IndexReport

log = get_logger()


# Methods that answer from the index: without a daemon it is brought up to date first (a
# hook's recall on a never-indexed workspace used to find nothing).
_SEARCHING = ("memory_search", "memory_recall", "memory_context")
# After a pass that read at most this many notes, or 1 in this share of them, what is
# current is found in the answering process (the notes kept from the last run, and these).
_FEW_NOTES, _FEW_SHARE = 50, 20


class Router:
    """Routes ``call(method, params)`` to the daemon or to local ``Memory`` objects.

    ``on_local`` runs once, before this process first opens an index itself (the CLI sets
    up logging there); ``notices`` collects what a user should know about the routing,
    such as a daemon that was found but serves another config."""

    def __init__(
        self,
        config: Config,
        timeout: float | None = 60.0,
        on_local: Callable[[], None] | None = None,
        waits: Mapping[str, float] | None = None,
        finish: Callable[[Memory], object] | None = None,
        regrow: bool = True,
    ) -> None:
        self.config = config
        self.regrow = regrow  # False: one command, whose passes need not prepare the next
        # Hands finding what later notes replaced to a process of its own (the CLI's
        # ``memd.cli.finish.start``, as ``memd index`` does), for a method that may not
        # wait; None: always found here, before answering.
        self.finish = finish
        # How long each method answered here waits for what is current being found
        # (``memd.index.finishlock``; None: its ``WAITS``).
        self.waits = waits
        self.timeout = timeout
        self.on_local = on_local
        self.notices: list[str] = []
        self.daemon: dict | None = None  # the health answer of the daemon that answered
        self._told: set[str] = set()  # each notice once per process, even when collected
        self._open: dict[str, Memory] = {}

    def memory(self, name: str | None) -> Memory:
        """This process's own ``Memory`` for a workspace (opened on first use)."""
        key = self.config.workspace(name).name
        if key not in self._open:
            if self.on_local is not None:
                self.on_local()
                self.on_local = None
            from memd.index.index import database_path

            if not database_path(self.config, key).exists():
                # A first index parses every note: the workers' fork server loads while
                # this process opens the index and walks the folder.
                from memd.index.prepare import warm_workers

                warm_workers()
            from memd.memory import Memory

            self._open[key] = Memory(self.config, key)
        return self._open[key]

    def connect(self, timeout: float | None = None) -> Client | None:
        """A client for the daemon serving this config, or None to work here.

        A daemon with another state folder is someone else's: work here and say so once.
        One that shares this state folder but serves other workspaces raises: its indexes
        must not be opened by a second process for different folders."""
        try:
            client = connect(self.config, self.timeout if timeout is None else timeout)
        except WrongDaemon as exc:
            if exc.shares_state:
                raise WrongDaemon(
                    f"{exc}; both use that state folder, so memd cannot answer for this config "
                    "beside it: stop that daemon, reload it with this config (SIGHUP), or give "
                    "this config its own state_dir",
                    True,
                    exc.health,
                ) from None
            notice = f"{exc}; answering without it"
            if notice not in self.notices and notice not in self._told:
                self.notices.append(notice)
                self._told.add(notice)
            return None
        if client is not None:
            self.daemon = client.health
        return client

    def check_folder(self, workspace: str | None) -> None:
        """Raise ``WorkspaceMissing`` if the workspace's folder is gone: the first thing to
        say, before a daemon of another config is described or an empty index answers."""
        try:
            config = self.config.workspace(workspace)
        except ConfigError:
            return  # an unknown name: the method says so, naming its parameter
        config.check_folder()

    def daemon_running(self) -> bool:
        client = self.connect(timeout=5)
        if client is None:
            return False
        client.close()
        return True

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict:
        params = {k: v for k, v in (params or {}).items() if v is not None}
        self.check_folder(params.get("workspace"))
        client = self.connect()
        if client is not None:
            with client:
                return client.call(method, params)
        from memd.serve.methods import call

        started = time.monotonic()
        flight = self._wait_current(method, params.get("workspace"))
        if method in _SEARCHING:
            # Nothing watches or embeds without a daemon: bring the index up to date, and
            # embed what is missing when that takes a few seconds at most.
            memory = self.memory(params.get("workspace"))
            report = memory.index(regrow=self.regrow)
            if report.touched and flight is None:
                # A note changed: what it said may replace an older line, or no longer.
                flight = self._find_current(method, memory, report, started)
            params.pop("wait_fresh", None)  # that was the catching up
            if method == "memory_search" and params.get("mode") != "keyword":
                memory.embed_missing()
        result = call(self.memory, method, params)
        if flight is not None:  # never an old fact silently: the answer says so
            result["current"] = "pending"
            if method == "status":
                result["finishing"] = flight.as_dict()
        return result

    def _find_current(
        self, method: str, memory: Memory, report: IndexReport, started: float
    ) -> Finishing | None:
        """Find what is current after this process changed the index; the finish still in
        flight when the method's wait ends (None: found). A few notes changed: found here.
        Many (a first index), or a method that may not wait: handed to a process of its
        own, waited for only what is left of the method's bound, as ``memd index``'s."""
        bound = self._bound(method) or 0.0
        read = report.added + report.changed
        few = read <= max(_FEW_NOTES, (read + report.unchanged) // _FEW_SHARE)
        if self.finish is None or (bound > 0 and few):
            memory.currency.catch_up()
            return None
        self.finish(memory)
        left = bound - (time.monotonic() - started)
        return self._wait_current(method, memory.workspace.name, left)

    def _bound(self, method: str) -> float | None:
        """How long ``method`` waits for what is current (None: it never asks)."""
        from memd.index.finishlock import WAITS

        return (self.waits if self.waits is not None else WAITS).get(method)

    def _wait_current(
        self, method: str, workspace: str | None, bound: float | None = None
    ) -> Finishing | None:
        """Wait (up to ``bound``, else the method's) while what is current is being found
        after a ``memd index`` (``memd.cli.finish``); the finish still in flight then."""
        from memd.index.finishlock import FinishLock

        bound = self._bound(method) if bound is None else bound
        if bound is None:
            return None
        try:
            name = self.config.workspace(workspace).name
        except ConfigError:
            return None  # an unknown name: the method says so, naming its parameter
        lock = FinishLock(self.config.state_dir, name)
        flight = lock.in_flight()
        if flight is None or bound <= 0:  # status says what is in flight; it never waits
            return flight
        self.memory(name)  # opened here as it would be next, with logging set up (on_local)
        log.debug("current_wait", method=method, pid=flight.pid, bound_s=bound)
        return lock.wait(bound)

    def close(self) -> None:
        for memory in self._open.values():
            memory.close()
        self._open.clear()
