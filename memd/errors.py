"""Every error memd raises, in one tree; each message says what a user needs to fix it.

    MemdError                   any failure memd reports
    ├── ConfigError             a bad config file or value; names the key and the file
    ├── InvalidRequest          a malformed request (not a JSON-RPC 2.0 object)
    ├── UnknownMethod           no method of that name
    ├── InvalidParams           a parameter is missing or wrong; names it
    ├── NotFound                the file or key asked for does not exist
    ├── PathRefused             a path outside what memd indexes or may write
    ├── BackendUnavailable      the embedding, LLM or rerank endpoint failed
    ├── WorkspaceMissing        the workspace folder is gone or unreadable
    ├── WriteError              a write to a memory file failed; the file is as it was
    ├── StoreError              the index database cannot be opened or written
    │   ├── IndexCorrupt        the database is damaged; it is moved aside and rebuilt
    │   └── FileRefused         the team database will not take one file; the rest go on
    └── DaemonError             the daemon cannot start, or serve this request
        └── DaemonUnavailable   no daemon answers on the socket

The classes carry no protocol codes: each shell maps them to its own failure form in one
place (``memd.client`` for JSON-RPC, ``cli.main`` for exit codes, ``mcp`` for tool errors).
"""

from __future__ import annotations


class MemdError(Exception):
    """Root of every error memd reports to a user."""


class ConfigError(MemdError):
    """The configuration is invalid; the message names the key and the file."""


class InvalidRequest(MemdError):
    """The request is not a valid JSON-RPC 2.0 request object."""


class UnknownMethod(MemdError):
    """No method of that name."""


class InvalidParams(MemdError):
    """A request parameter is missing or has the wrong type or value."""

    def __init__(self, param: str, problem: str) -> None:
        super().__init__(f"invalid parameter '{param}': {problem}")
        self.param = param
        self.problem = problem


class NotFound(MemdError):
    """The file or key asked for does not exist."""


class PathRefused(MemdError):
    """The path lies outside the files memd indexes (or may write)."""


class BackendUnavailable(MemdError):
    """An embedding, LLM or rerank endpoint cannot be reached or answered wrongly."""


class WorkspaceMissing(MemdError):
    """The workspace folder does not exist or cannot be read."""


class WriteError(MemdError):
    """A write to a memory file failed; the file is as it was."""


class StoreError(MemdError):
    """The index database cannot be opened or written."""


class IndexCorrupt(StoreError):
    """The index database is damaged; it can be moved aside and rebuilt from the files."""


class FileRefused(StoreError):
    """The team database will not take one file (a NUL byte, too large, a name it cannot
    hold, its host's share full): that file is skipped and named, the rest are published."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class DaemonError(MemdError):
    """The daemon cannot start or serve: another one runs, or the socket is in use."""


class DaemonUnavailable(DaemonError):
    """No daemon answers on the socket."""
