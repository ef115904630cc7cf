"""memd: a local daemon that keeps an AI agent's Markdown memory searchable."""

from __future__ import annotations

__version__ = "0.1.0"

from memd.chunker import Chunk, chunk_document
from memd.config import Config, WorkspaceConfig, load_config, parse_config
from memd.errors import (
    BackendUnavailable,
    ConfigError,
    InvalidParams,
    MemdError,
    NotFound,
    PathRefused,
    StoreError,
)
from memd.indexer import IndexReport
from memd.markdown import Document, parse
from memd.memory import Memory
from memd.search import SearchRequest, SearchResult

__all__ = [
    "BackendUnavailable",
    "Chunk",
    "Config",
    "ConfigError",
    "Document",
    "IndexReport",
    "InvalidParams",
    "MemdError",
    "Memory",
    "NotFound",
    "PathRefused",
    "SearchRequest",
    "SearchResult",
    "StoreError",
    "WorkspaceConfig",
    "__version__",
    "chunk_document",
    "load_config",
    "parse",
    "parse_config",
]
