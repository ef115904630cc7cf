"""Answer method calls through the running daemon, or directly on the index without one.

The CLI and the MCP bridge both route through here, so they behave the same way: a daemon
on the socket is asked first (one warm index for every agent); without one, each workspace's
index is opened once and a search first brings it up to date, since nothing is watching.
"""

from __future__ import annotations

from typing import Any

from memd.client import connect
from memd.config import Config
from memd.memory import Memory
from memd.methods import call


class Router:
    """Routes ``call(method, params)`` to the daemon or to local ``Memory`` objects."""

    def __init__(self, config: Config, timeout: float | None = 60.0) -> None:
        self.config = config
        self.timeout = timeout
        self._open: dict[str, Memory] = {}

    def memory(self, name: str | None) -> Memory:
        """This process's own ``Memory`` for a workspace (opened on first use)."""
        key = self.config.workspace(name).name
        if key not in self._open:
            self._open[key] = Memory(self.config, key)
        return self._open[key]

    def daemon_running(self) -> bool:
        client = connect(self.config, timeout=5)
        if client is None:
            return False
        client.close()
        return True

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict:
        params = {k: v for k, v in (params or {}).items() if v is not None}
        client = connect(self.config, timeout=self.timeout)
        if client is not None:
            with client:
                return client.call(method, params)
        if method == "memory_search":
            self.memory(params.get("workspace")).index()
        return call(self.memory, method, params)

    def close(self) -> None:
        for memory in self._open.values():
            memory.close()
        self._open.clear()
