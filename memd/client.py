"""The memd socket for any agent: a small synchronous client, and the one table of
JSON-RPC error codes both ends share (the server turns an exception into an error object
with ``error_object``; the client turns it back into the same class with ``exception_from``).

    from memd.client import Client
    with Client("/run/user/1000/memd/memd.sock") as memd:
        hits = memd.call("memory_search", query="what did we decide about the API")

Errors come back as the same ``MemdError`` subclasses the library raises.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import (
    BackendUnavailable,
    ConfigError,
    DaemonError,
    DaemonUnavailable,
    IndexCorrupt,
    InvalidParams,
    InvalidRequest,
    MemdError,
    NotFound,
    PathRefused,
    StoreError,
    UnknownMethod,
    WorkspaceMissing,
    WriteError,
)

if TYPE_CHECKING:  # the CLI imports this module to talk to a daemon: keep it light
    from memd.config import Config
    from memd.socketcache import Target


PARSE_ERROR = -32700
INTERNAL_ERROR = -32603

# SPEC section 4 fixes the first six; the rest are memd's own, so no error arrives as a bare
# MemdError. Subclasses come before their base: the first match wins.
CODES: dict[type[MemdError], int] = {
    InvalidRequest: -32600,
    UnknownMethod: -32601,
    InvalidParams: -32602,
    NotFound: -32001,
    PathRefused: -32002,
    BackendUnavailable: -32003,
    WriteError: -32004,
    IndexCorrupt: -32006,
    StoreError: -32005,
    WorkspaceMissing: -32007,
    ConfigError: -32008,
    DaemonUnavailable: -32010,
    DaemonError: -32009,
    MemdError: INTERNAL_ERROR,
}
_CLASSES = {code: cls for cls, code in reversed(CODES.items())}


def code_of(exc: MemdError) -> int:
    """The protocol code of an error (its nearest class in the table)."""
    for cls in type(exc).__mro__:
        if cls in CODES:
            return CODES[cls]
    return INTERNAL_ERROR


def error_object(request_id: Any, code: int, message: str, data: dict | None = None) -> dict:
    """A JSON-RPC error response."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def error_for(request_id: Any, exc: MemdError) -> dict:
    """The error response for one of memd's errors."""
    data = {"param": exc.param, "problem": exc.problem} if isinstance(exc, InvalidParams) else None
    return error_object(request_id, code_of(exc), str(exc), data)


def exception_from(error: dict) -> MemdError:
    """The exception a client raises for an error object from the daemon."""
    code, message = error.get("code"), str(error.get("message", "error"))
    data = error.get("data") or {}
    cls = _CLASSES.get(code, MemdError)
    if cls is InvalidParams:
        return InvalidParams(str(data.get("param", "params")), str(data.get("problem", message)))
    return cls(message)


class WrongDaemon(DaemonError):
    """The daemon on the socket serves another configuration than the one given.

    ``shares_state`` is true when both use the same state folder: then this process must
    not open the indexes itself either (they are that daemon's)."""

    def __init__(self, message: str, shares_state: bool, health: dict) -> None:
        super().__init__(message)
        self.shares_state = shares_state
        self.health = health


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
        self.health: dict | None = None  # the daemon's health answer, when connect asked

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

    def set_timeout(self, seconds: float | None) -> None:
        """How long each later read or write may wait (a caller with a deadline)."""
        self._sock.settimeout(seconds)

    def pipeline(self, calls: list[tuple[str, dict[str, Any]]]) -> list[dict | MemdError]:
        """Send several requests at once and read their answers, in order: each a result,
        or the error it raised (one round trip where ``call`` takes one each)."""
        requests = []
        for method, params in calls:
            request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
            if params:
                request["params"] = {k: v for k, v in params.items() if v is not None}
            requests.append(json.dumps(request).encode() + b"\n")
        answers: list[dict | MemdError] = []
        try:
            self._file.write(b"".join(requests))
            self._file.flush()
            for _ in requests:
                line = self._file.readline()
                if not line:
                    raise DaemonUnavailable(f"memd at {self.path} closed the connection")
                response = json.loads(line)
                error = response.get("error")
                answers.append(exception_from(error) if error else response["result"])
        except OSError as exc:
            raise DaemonUnavailable(f"lost the connection to memd at {self.path}: {exc}") from exc
        return answers

    def send(self, method: str, params: dict[str, Any]) -> None:
        """Send a request and do not wait for its answer: the daemon carries it out even
        when this side has gone (a hook that must return at once)."""
        request = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        try:
            self._file.write(json.dumps(request).encode() + b"\n")
            self._file.flush()
        except OSError as exc:
            raise DaemonUnavailable(f"lost the connection to memd at {self.path}: {exc}") from exc

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(config: Config, timeout: float | None = 60.0) -> Client | None:
    """A client for the daemon serving ``config``, or None if none runs on its socket.

    The daemon is asked who it is (``health``) first: one serving another config on the same
    socket (``memd --config other.yaml`` while the usual daemon runs) raises ``WrongDaemon``
    rather than answering from the wrong workspace. ``client.health`` keeps the answer."""
    if not config.socket.exists():
        return None
    try:
        client = Client(config.socket, timeout)
    except DaemonUnavailable:
        return None
    try:
        client.health = client.call("health")
    except DaemonUnavailable:
        client.close()
        return None
    except BaseException:
        client.close()
        raise
    problem = mismatch(client.health, config)
    if problem is not None:
        client.close()
        raise WrongDaemon(problem[0], problem[1], client.health)
    return client


def mismatch(health: dict, config: Config | Target) -> tuple[str, bool] | None:
    """Why the daemon that answered ``health`` does not serve ``config`` (and whether they
    share a state folder), or None when it does. A daemon too old to say is trusted."""
    if "state_dir" not in health or "workspaces" not in health:
        return None
    theirs = {name: _real(path) for name, path in health["workspaces"].items()}
    ours = {ws.name: _real(str(ws.path)) for ws in config.workspaces}
    same_state = _real(health["state_dir"]) == _real(str(config.state_dir))
    # Vectors of another model in the same state folder: another config, though its
    # folders are these (a daemon or a remembered config too old to say is trusted).
    vectors = _vectors(config)
    other_vectors = None not in (vectors, health.get("vectors")) and health["vectors"] != vectors
    if same_state and theirs == ours and not other_vectors:
        return None
    who = describe(health)
    if not same_state:
        why = f"state folder {health['state_dir']}, not {config.state_dir}"
    elif theirs != ours:
        shown = ", ".join(f"{n}={p}" for n, p in health["workspaces"].items())
        mine = ", ".join(f"{w.name}={w.path}" for w in config.workspaces)
        why = f"workspaces {shown}, not {mine}"
    else:
        why = f"embeddings '{health['vectors']}', where this config's are '{vectors}'"
    return f"the memd daemon on {config.socket} ({who}) serves {why}", same_state


def _vectors(config: Config | Target) -> str | None:
    if not hasattr(config, "embeddings"):  # a remembered Target says it
        return config.vectors  # type: ignore[union-attr]
    from memd.embed.providers import vector_space  # not on the thin client's path

    return vector_space(config.embeddings)


def describe(health: dict) -> str:
    """``pid 123, config /path`` for a daemon's health answer."""
    parts = [f"pid {health['pid']}"] if health.get("pid") else []
    if "config" in health:
        parts.append(f"config {health['config'] or 'built-in defaults'}")
    return ", ".join(parts) or f"memd {health.get('version', '?')}"


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))
