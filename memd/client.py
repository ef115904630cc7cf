"""A small synchronous client for the memd socket; any agent can import it.

    from memd.client import Client
    with Client("/run/user/1000/memd/memd.sock") as memd:
        hits = memd.call("memory_search", query="what did we decide about the API")

Errors come back as the same ``MemdError`` subclasses the library raises.
"""

from __future__ import annotations

import itertools
import json
import socket
from pathlib import Path
from typing import Any

from memd.config import Config
from memd.errors import DaemonUnavailable
from memd.rpc import exception_from


class Client:
    """One connection to a running daemon; requests are answered in order."""

    def __init__(self, path: str | Path, timeout: float | None = 60.0) -> None:
        self.path = Path(path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
        except OSError as exc:
            self._sock.close()
            raise DaemonUnavailable(f"no memd daemon at {self.path}: {exc.strerror}") from exc
        self._file = self._sock.makefile("rwb")
        self._ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict:
        """Run ``method`` with ``params`` (or keyword arguments); returns its result."""
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        merged = {**(params or {}), **kwargs}
        if merged:  # an unset option is left out, so the daemon's default applies
            request["params"] = {k: v for k, v in merged.items() if v is not None}
        try:
            self._file.write(json.dumps(request).encode() + b"\n")
            self._file.flush()
            line = self._file.readline()
        except OSError as exc:
            raise DaemonUnavailable(f"lost the connection to memd at {self.path}: {exc}") from exc
        if not line:
            raise DaemonUnavailable(f"memd at {self.path} closed the connection")
        response = json.loads(line)
        if "error" in response:
            raise exception_from(response["error"])
        return response["result"]

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(config: Config, timeout: float | None = 60.0) -> Client | None:
    """A client for the daemon serving ``config``'s socket, or None if none is running."""
    if not config.socket.exists():
        return None
    try:
        return Client(config.socket, timeout)
    except DaemonUnavailable:
        return None
