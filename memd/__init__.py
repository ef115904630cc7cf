"""memd: a local daemon that keeps an AI agent's Markdown memory searchable.

As a library::

    import memd
    with memd.open() as memory:          # the config memd serve would use
        memory.index()
        for hit in memory.search("what did we decide about the database").results:
            print(hit.citation, hit.score)
"""

from __future__ import annotations

__version__ = "0.1.0"

from memd.config import Config, WorkspaceConfig
from memd.configfile import load_config, parse_config
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
from memd.indexer import IndexReport
from memd.memory import Memory, open
from memd.records import (
    FlushAnswer,
    FlushPrompt,
    ForgetAnswer,
    Freshness,
    KeyEntry,
    KeyList,
    Lines,
    SearchAnswer,
    SearchResult,
    Status,
    StoreAnswer,
    TimeWindow,
    Written,
)
from memd.search import SearchRequest
from memd.writer import Entry

__all__ = [
    "BackendUnavailable",
    "Config",
    "ConfigError",
    "DaemonError",
    "DaemonUnavailable",
    "Entry",
    "FlushAnswer",
    "FlushPrompt",
    "ForgetAnswer",
    "Freshness",
    "IndexCorrupt",
    "IndexReport",
    "InvalidParams",
    "InvalidRequest",
    "KeyEntry",
    "KeyList",
    "Lines",
    "MemdError",
    "Memory",
    "NotFound",
    "PathRefused",
    "SearchAnswer",
    "SearchRequest",
    "SearchResult",
    "Status",
    "StoreAnswer",
    "StoreError",
    "TimeWindow",
    "UnknownMethod",
    "WorkspaceConfig",
    "WorkspaceMissing",
    "WriteError",
    "Written",
    "__version__",
    "load_config",
    "open",
    "parse_config",
]
