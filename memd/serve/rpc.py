"""JSON-RPC 2.0 as memd speaks it: error codes for memd's errors, both ways.

The one table of protocol codes. The server turns an exception into an error object with
``error_object``; the client turns it back into the same class with ``exception_from``.
Kept free of heavy imports: the CLI loads it to talk to a daemon.
"""

from __future__ import annotations

from typing import Any

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
