"""JSON-RPC 2.0 over a Unix stream socket: one JSON object per line, answered in order.

``respond`` turns one request line into one response object (or None for a notification);
``SocketServer`` owns the socket file: its folder and file modes, stale-socket replacement,
refusing other users, the 1 MiB line cap and idle connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from memd.client import CODES, INTERNAL_ERROR, PARSE_ERROR, error_for, error_object
from memd.errors import DaemonError, InvalidParams, InvalidRequest, MemdError
from memd.log import get_logger
from memd.store.private import private_folder

log = get_logger()

MAX_LINE = 1024 * 1024
_MAX_SKIP_LINES = 64  # give up on a connection after discarding 64 MiB of one line
_SUN_PATH_MAX = 104  # the smallest sockaddr_un path size (macOS); Linux allows 108

Dispatch = Callable[[str, Any], Awaitable[dict]]


_INVALID = CODES[InvalidRequest]


async def respond(line: bytes, dispatch: Dispatch) -> dict | None:
    """Answer one request line; never raises. Notifications (no ``id``) get no answer."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        # A request pretty-printed over several lines lands here once per line: say why.
        return error_object(
            None, PARSE_ERROR, f"parse error: {exc}; send one JSON object per line (jq -c)"
        )
    except RecursionError:
        return error_object(None, PARSE_ERROR, "parse error: JSON nested too deeply")
    if isinstance(request, list):
        return error_object(None, _INVALID, "batches are not supported; send one per line")
    if not isinstance(request, dict):
        return error_object(None, _INVALID, "a request must be a JSON object")
    request_id = request.get("id")
    if not isinstance(request_id, str | int | type(None)) or isinstance(request_id, bool):
        return error_object(None, _INVALID, "id must be a string, a number or null")
    if request.get("jsonrpc") != "2.0":
        return error_object(request_id, _INVALID, 'jsonrpc must be "2.0"')
    method = request.get("method")
    if not isinstance(method, str):
        return error_object(request_id, _INVALID, "method must be a string")
    started = time.perf_counter()
    outcome = "ok"
    try:
        result = await dispatch(method, request.get("params"))
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
    except MemdError as exc:
        outcome = "invalid_params" if isinstance(exc, InvalidParams) else type(exc).__name__
        response = error_for(request_id, exc)
    except Exception as exc:  # a bug must not end the connection or the daemon
        outcome = "internal_error"
        log.exception("rpc_failed", method=method)
        response = error_object(
            request_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
        )
    log.debug(
        "rpc", method=method, outcome=outcome, ms=round((time.perf_counter() - started) * 1000, 2)
    )
    return None if "id" not in request else response


def encode(answer: dict) -> bytes:
    """One answer as a UTF-8 line; never raises, so every request line gets its answer.

    Text that UTF-8 cannot carry (a lone surrogate echoed from the request) goes out as a
    JSON escape; an answer that cannot be encoded at all becomes an internal error.
    """
    try:
        return json.dumps(answer, ensure_ascii=False, allow_nan=False).encode() + b"\n"
    except UnicodeEncodeError:
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            return json.dumps(answer, allow_nan=False).encode() + b"\n"
    except (ValueError, TypeError, RecursionError):
        pass
    log.error("rpc_unencodable", id=repr(answer.get("id")))
    fallback = error_object(answer.get("id"), INTERNAL_ERROR, "internal error: unencodable answer")
    return json.dumps(fallback).encode() + b"\n"


class SocketServer:
    """A Unix socket serving ``dispatch`` to the user who owns this process."""

    def __init__(self, path: Path, dispatch: Dispatch, idle_timeout: float = 300.0) -> None:
        self.path = path
        self.dispatch = dispatch
        self.idle_timeout = idle_timeout
        self._server: asyncio.base_events.Server | None = None
        self._clients: set[asyncio.Task] = set()

    async def start(self) -> None:
        """Bind the socket (replacing a stale one) with socket 0600, in a folder made 0700 if
        memd makes it."""
        if len(os.fsencode(self.path)) >= _SUN_PATH_MAX:
            raise DaemonError(
                f"socket path {self.path} is too long for a Unix socket; set 'socket'"
            )
        folder = self.path.parent
        try:
            private_folder(folder, tighten=False)  # a folder memd did not make keeps its mode
        except OSError as exc:
            raise DaemonError(f"cannot create socket folder {folder}: {exc.strerror}") from exc
        if self.path.exists() or self.path.is_symlink():
            self._replace_stale()
        self._server = await asyncio.start_unix_server(
            self._serve_client, path=str(self.path), limit=MAX_LINE + 1
        )
        os.chmod(self.path, 0o600)

    def _replace_stale(self) -> None:
        if not stat.S_ISSOCK(os.lstat(self.path).st_mode):
            raise DaemonError(f"{self.path} exists and is not a socket; remove it or set 'socket'")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(self.path))
        except OSError:  # nobody answers: left behind by a daemon that was killed
            log.info("stale_socket_removed", socket=str(self.path))
            self.path.unlink()
        else:
            raise DaemonError(f"socket {self.path} is in use by another process")
        finally:
            probe.close()

    async def close(self) -> None:
        """Stop accepting, end open connections, remove the socket file."""
        if self._server is not None:
            self._server.close()
        for task in list(self._clients):
            task.cancel()
        if self._clients:
            await asyncio.wait(self._clients, timeout=2)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        self._clients.add(task)
        try:
            if _peer_uid(writer) not in (os.getuid(), None):
                log.warning("connection_refused", reason="other user", uid=_peer_uid(writer))
                return
            await self._requests(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), timeout=self.idle_timeout)
            except TimeoutError:
                log.debug("connection_idle_closed", seconds=self.idle_timeout)
                return
            except (ValueError, asyncio.LimitOverrunError):
                answer = error_object(None, _INVALID, "request line is over 1 MiB; refused")
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
                if await self._skip_rest_of_line(reader):
                    continue
                return
            if not line:
                return
            if not line.strip():
                continue
            answer = await respond(line, self.dispatch)
            if answer is not None:
                writer.write(encode(answer))
                await writer.drain()
            if not line.endswith(b"\n"):  # the client closed mid-line; that was its last
                return

    async def _skip_rest_of_line(self, reader: asyncio.StreamReader) -> bool:
        """Read past the end of an over-long line; True if the connection can go on.

        Closing with unread data would reset the connection and lose the error reply.
        """
        for _ in range(_MAX_SKIP_LINES):
            try:
                tail = await asyncio.wait_for(reader.readline(), timeout=self.idle_timeout)
            except (ValueError, asyncio.LimitOverrunError):
                continue  # another MiB of the same line, discarded
            except TimeoutError:
                return False
            return tail.endswith(b"\n")
        return False


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The uid of the connecting process (Linux SO_PEERCRED, macOS LOCAL_PEERCRED)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return None
    try:
        if hasattr(socket, "SO_PEERCRED"):
            _pid, uid, _gid = struct.unpack(
                "3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            )
            return uid
        if sys.platform == "darwin":
            # struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t groups[16]}
            raw = sock.getsockopt(0, 0x001, 76)  # SOL_LOCAL, LOCAL_PEERCRED
            return struct.unpack_from("2I", raw)[1]
    except OSError:
        return None
    return None
