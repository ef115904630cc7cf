"""memd: a local daemon that keeps an AI agent's Markdown memory searchable.

As a library::

    import memd
    with memd.open() as memory:          # the config memd serve would use
        memory.index()
        for hit in memory.search("what did we decide about the database").results:
            print(hit.citation, hit.score)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Names are imported on first use (PEP 562): `memd search` talking to a daemon must not pay
# for numpy, markdown-it and the index just because it imports the package.
_EXPORTS = {
    "BackendUnavailable": "memd.errors",
    "Config": "memd.config",
    "ConfigError": "memd.errors",
    "DaemonError": "memd.errors",
    "DaemonUnavailable": "memd.errors",
    "Entry": "memd.write.writer",
    "FlushAnswer": "memd.records",
    "FlushPrompt": "memd.records",
    "ForgetAnswer": "memd.records",
    "Freshness": "memd.records",
    "IndexCorrupt": "memd.errors",
    "IndexReport": "memd.records",
    "InvalidParams": "memd.errors",
    "InvalidRequest": "memd.errors",
    "KeyEntry": "memd.records",
    "KeyList": "memd.records",
    "Lines": "memd.records",
    "MemdError": "memd.errors",
    "Memory": "memd.memory",
    "NotFound": "memd.errors",
    "PathRefused": "memd.errors",
    "SearchAnswer": "memd.records",
    "SearchRequest": "memd.search.request",
    "SearchResult": "memd.records",
    "Status": "memd.records",
    "StoreAnswer": "memd.records",
    "StoreError": "memd.errors",
    "TimeWindow": "memd.records",
    "UnknownMethod": "memd.errors",
    "WorkspaceConfig": "memd.config",
    "WorkspaceMissing": "memd.errors",
    "WriteError": "memd.errors",
    "Written": "memd.records",
    "load_config": "memd.configfile",
    "open": "memd.memory",
    "parse_config": "memd.configfile",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memd' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
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
    from memd.memory import Memory, open
    from memd.records import (
        FlushAnswer,
        FlushPrompt,
        ForgetAnswer,
        Freshness,
        IndexReport,
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
    from memd.search.request import SearchRequest
    from memd.write.writer import Entry
