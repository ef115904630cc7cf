"""The errors memd raises, each carrying what a user needs to fix it.

    MemdError                 any failure memd reports (JSON-RPC -32603)
    ├── ConfigError           a bad config file or value; names the key and the file
    ├── InvalidRequest        a malformed JSON-RPC request (-32600)
    ├── UnknownMethod         no such method (-32601)
    ├── InvalidParams         a request parameter is missing or wrong (-32602); names it
    ├── NotFound              the file or key asked for does not exist (-32001)
    ├── PathRefused           a path outside what memd indexes (-32002)
    ├── BackendUnavailable    the embedding or LLM endpoint cannot be reached (-32003)
    ├── StoreError            the index database cannot be opened or written

Each shell (CLI, socket server, MCP) maps these to its own failure form in one place.
"""

from __future__ import annotations


class MemdError(Exception):
    """Root of every error memd reports to a user."""

    code = -32603


class ConfigError(MemdError):
    """The configuration is invalid; the message names the key and the file."""


class InvalidParams(MemdError):
    """A request parameter is missing or has the wrong type or value."""

    code = -32602

    def __init__(self, param: str, problem: str) -> None:
        super().__init__(f"invalid parameter '{param}': {problem}")
        self.param = param
        self.problem = problem


class InvalidRequest(MemdError):
    """The request is not a valid JSON-RPC 2.0 request object."""

    code = -32600


class UnknownMethod(MemdError):
    """No method of that name."""

    code = -32601


class NotFound(MemdError):
    """The file or key asked for does not exist."""

    code = -32001


class PathRefused(MemdError):
    """The path lies outside the files memd indexes."""

    code = -32002


class BackendUnavailable(MemdError):
    """An embedding or LLM endpoint cannot be reached."""

    code = -32003


class StoreError(MemdError):
    """The index database cannot be opened or written."""


class DaemonError(MemdError):
    """The daemon cannot start or serve: another one runs, or the socket is in use."""
