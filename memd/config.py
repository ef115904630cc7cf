"""Typed configuration: one frozen ``Config`` of small sections, each with its defaults
and the checks on its values.

``memd.configfile`` reads it from YAML. The config is loaded once by an entry point and
passed down; nothing deeper reads the environment.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memd.errors import ConfigError, WorkspaceMissing

DEFAULT_WORKSPACE = "~/clawd"
DEFAULT_WORKSPACE_NAME = "default"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def shown_url(url: str) -> str:
    """``url`` as memd may print it (status, doctor, errors, logs): a password written in it
    (``http://user:secret@host/v1``) replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.partition("@")
    if not sep or not at or ":" not in userinfo or "/" in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


# What Obsidian never shows as prose and memd leaves out of the index by default:
# %% comments %%, Dataview queries, and an Excalidraw drawing's data.
Hidden = Literal["comments", "queries", "drawings"]
HIDDEN_TEXT: tuple[Hidden, ...] = (
    "comments",
    "queries",
    "drawings",
)


@dataclass(frozen=True)
class Chunking:
    """How notes are cut into chunks."""

    tokens: int = 400  # most cl100k_base tokens in one chunk
    overlap: int = 120  # tokens each chunk repeats from the end of the one before
    hide: tuple[Hidden, ...] = HIDDEN_TEXT  # Obsidian text not indexed ([]: index all)

    def __post_init__(self) -> None:
        if self.tokens < 16:
            raise ValueError("tokens must be at least 16")
        if not 0 <= self.overlap < self.tokens:
            raise ValueError("overlap must be at least 0 and less than tokens")


@dataclass(frozen=True)
class Watch:
    """How the daemon follows the files."""

    debounce_ms: int = 300  # quiet time after a file event before re-indexing
    reconcile_minutes: float = 5.0  # full stat sweep that catches what the watcher missed

    def __post_init__(self) -> None:
        if self.debounce_ms < 0:
            raise ValueError("debounce_ms must not be negative")
        if self.reconcile_minutes <= 0:
            raise ValueError("reconcile_minutes must be positive")


@dataclass(frozen=True)
class Server:
    """The daemon's socket."""

    idle_timeout_s: float = 300.0  # close a connection that sends nothing for this long

    def __post_init__(self) -> None:
        if self.idle_timeout_s <= 0:
            raise ValueError("idle_timeout_s must be positive")


@dataclass(frozen=True)
class Embeddings:
    """Where vectors come from, and how they are fetched."""

    provider: Literal["auto", "openai", "local", "none"] = "auto"  # auto: local if installed
    model: str | None = None  # e.g. text-embedding-3-small, or nomic-embed-text for Ollama
    base_url: str | None = None  # an OpenAI-compatible endpoint (unset: OpenAI)
    api_key: str | None = None  # e.g. ${OPENAI_API_KEY}; local servers need none
    dimensions: int | None = None  # ask the endpoint for this many (unset: the model's own)
    batch_size: int = 32  # texts per request
    timeout_s: float = 30.0  # seconds per request
    retries: int = 2  # per request, with backoff that honours 429 and Retry-After
    debounce_ms: int = 2000  # embed a changed file once it has been quiet this long
    cache_size: int = 50000  # cached embeddings kept (least recently used dropped)
    query_timeout_s: float = 2.0  # past this, a search answers by keyword, with a warning
    # Cosines of (unrelated, clearly related) text for the model: where its vector score
    # reads 0 and 1. None: memd's measured band for the model, or a generic one.
    cosine_band: tuple[float, float] | None = None  # cosines for vector score 0 and 1
    threads: int | None = None  # local model's CPU threads (unset: every core; needs a restart)
    interim: bool = True  # a large back-fill first gives every chunk vectors from its words

    def __post_init__(self) -> None:
        if self.threads is not None and (isinstance(self.threads, bool) or self.threads < 1):
            raise ValueError("threads must be a positive number (null: every core)")
        band = self.cosine_band
        if band is not None and not -1 <= band[0] < band[1] <= 1:
            raise ValueError("cosine_band must be [unrelated, related] cosines, the lower first")
        if self.dimensions is not None and self.dimensions < 1:
            raise ValueError("dimensions must be positive")
        if not 1 <= self.batch_size <= 2048:
            raise ValueError("batch_size must be between 1 and 2048")
        if self.retries < 0 or self.debounce_ms < 0 or self.cache_size < 0:
            raise ValueError("retries, debounce_ms and cache_size must not be negative")
        if self.timeout_s <= 0 or self.query_timeout_s <= 0:
            raise ValueError("timeout_s and query_timeout_s must be positive")


@dataclass(frozen=True)
class Search:
    """How a search ranks and cuts its results."""

    max_results: int = 6  # results an answer holds at most
    # The relevance floor: results at or above it are strong. 0.38 keeps strong answers to
    # questions the notes cannot answer at 4 % on locomo-dev (0.35: 8 %); weak ones below
    # it are still shown, labelled (docs/benchmarks.md).
    min_score: float = 0.38  # the relevance floor: at or above it a result is strong
    # An explicit search with fewer strong results is filled up to this many with the best
    # weak ones, labelled weak (0: strong only); 5 keeps R@5 what it is without a floor.
    # What reaches a model unasked stays strong.
    min_results: int = 5  # fill an explicit search up to this many with weak results
    fusion: Literal["weighted", "rrf"] = "weighted"  # how keyword and vector scores combine
    vector_weight: float = 0.4  # the vector side's share of hybrid relevance
    text_weight: float = 0.6  # the keyword side's share of hybrid relevance
    half_life_days: float = 30.0  # decay: age at which a daily note's bonus halves
    mmr_lambda: float = 0.7  # MMR: relevance against diversity
    candidate_multiplier: int = 4  # each side proposes this × max_results chunks
    decay: bool = False  # score daily notes down by age (worse than newer_first)
    decay_floor: float = 0.6  # decay: score × (floor + weight × 2^(−age / half life))
    decay_weight: float = 0.4  # decay: the age-dependent share of the score
    mmr: bool = False  # keep near-duplicates from filling the list
    # Time words and soft preferences (memd.search.timerank).
    time_words: bool = True  # read "last week", "in March", "昨天" as a soft window
    outside_window: float = 0.6  # score factor of a dated note outside that window
    newer_first: bool = True  # of two notes stating one fact, the newer first
    near_equal: float = 0.15  # scores within this share of each other are near-equal
    sessions_factor: float = 0.9  # score factor of a transcript: a note wins a tie
    first_pass_wait: float = 3.0  # seconds a search waits for the first index pass

    def __post_init__(self) -> None:
        if not 1 <= self.max_results <= 100:
            raise ValueError("max_results must be between 1 and 100")
        if not 0 <= self.min_results <= 100:
            raise ValueError("min_results must be between 0 and 100")
        if not 1 <= self.candidate_multiplier <= 50:
            raise ValueError("candidate_multiplier must be between 1 and 50")
        for name in ("min_score", "vector_weight", "text_weight", "mmr_lambda", "decay_floor",
                     "decay_weight", "outside_window", "near_equal",
                     "sessions_factor"):  # fmt: skip
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0 <= self.first_pass_wait <= 60:
            raise ValueError("first_pass_wait must be between 0 and 60 seconds")


@dataclass(frozen=True)
class Rerank:
    """An optional reranker for the best candidates."""

    provider: Literal["none", "http"] = "none"  # http: POST {base_url}/rerank
    base_url: str | None = None  # e.g. http://127.0.0.1:8080/v1
    model: str | None = None  # the reranking model, if the endpoint wants one
    api_key: str | None = None  # e.g. ${JINA_API_KEY}
    top_n: int = 20  # how many of the best candidates it sees
    timeout_s: float = 2.0  # past this, the fusion order stands, with a warning

    def __post_init__(self) -> None:
        if self.provider == "http" and not self.base_url:
            raise ValueError("base_url is required when provider is http")
        if not 1 <= self.top_n <= 200:
            raise ValueError("top_n must be between 1 and 200")
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be positive")


@dataclass(frozen=True)
class FlushLLM:
    """A chat endpoint that picks what a transcript flush keeps."""

    model: str  # the chat model
    base_url: str | None = None  # an OpenAI-compatible endpoint (unset: OpenAI)
    api_key: str | None = None  # e.g. ${OPENAI_API_KEY}
    timeout_s: float = 60.0  # seconds per request
    retries: int = 1  # per request


@dataclass(frozen=True)
class Flush:
    """Writing entries into the notes."""

    timezone: str | None = None  # IANA name for "today" in daily notes (unset: the system's)
    llm: FlushLLM | None = None  # a chat endpoint for transcript flushes

    def __post_init__(self) -> None:
        if self.timezone is not None:
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"timezone {self.timezone!r} is not an IANA time zone such as Europe/Berlin"
                ) from None

    def now(self) -> dt.datetime:
        """The time now in ``timezone`` (the system's when unset): "today" for daily notes."""
        if self.timezone:
            return dt.datetime.now(ZoneInfo(self.timezone))
        return dt.datetime.now().astimezone()


@dataclass(frozen=True)
class Log:
    """What the daemon logs, and how."""

    level: Literal["debug", "info", "warning", "error"] = "info"  # the least severe level logged
    format: Literal["auto", "json", "console"] = "auto"  # auto: JSON when not a terminal


# A team host's name: in config (team.host) and in `memd team add-host` alike.
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
HOST_NAME_RULE = "host uses letters, digits, '-', '_' and '.' (at most 63)"


@dataclass(frozen=True)
class Team:
    """Team memory: this host's workspaces published to one PostgreSQL + pgvector."""

    dsn: str | None = None  # a libpq URI; unset: no team memory
    host: str | None = None  # how this host is named in results (default: its hostname)
    publish: tuple[str, ...] | None = None  # which workspaces the team can search (default: all)
    timeout_s: float = 2.0  # a team search answers with local results after this long
    transcripts: bool = False  # session transcripts are published only when this says so
    lease_s: float = 180.0  # another daemon may publish as this host when unrenewed this long

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if not 10 <= self.lease_s <= 3600:
            raise ValueError("lease_s must be between 10 and 3600")
        if self.host is not None and not HOST_NAME.fullmatch(self.host):
            raise ValueError(HOST_NAME_RULE)

    @property
    def enabled(self) -> bool:
        return self.dsn is not None

    def host_name(self) -> str:
        """This host's name in team results."""
        return self.host or socket.gethostname()

    def publishes(self, workspace: str) -> bool:
        return self.enabled and (self.publish is None or workspace in self.publish)


@dataclass(frozen=True)
class ExtraPath:
    """A folder or file indexed beside the workspace, with globs of its own."""

    path: Path  # a folder, or a single .md file
    include: tuple[str, ...] = ()  # when given, only files matching one of these
    exclude: tuple[str, ...] = ()  # files to skip, besides the workspace's exclude


SESSION_FORMATS = ("claude-code", "codex", "openclaw", "jsonl")
# Where each agent host keeps its transcripts, when an entry gives no path.
SESSION_PATHS = {
    "claude-code": "~/.claude/projects",
    "codex": "~/.codex/sessions",
    "openclaw": "~/.openclaw/agents/main/sessions",
}


@dataclass(frozen=True)
class SessionSource:
    """A folder of agent session transcripts, indexed read-only (``source: sessions``)."""

    path: Path  # the transcripts' folder (default: the host's own)
    format: Literal["claude-code", "codex", "openclaw", "jsonl"]  # how its lines are read
    max_age_days: float = 30.0  # older transcripts leave the index (never the disk)
    tools: Literal["summary", "omit"] = "summary"  # tool calls and output: one line, or none
    name: str | None = None  # shown as sessions/<name>/...; default: the format

    def __post_init__(self) -> None:
        if self.max_age_days <= 0:
            raise ValueError("max_age_days must be positive")
        if self.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.name):
            raise ValueError("name uses letters, digits, '-', '_' and '.'")


@dataclass(frozen=True)
class WorkspaceConfig:
    """One memory workspace: its folder, extra roots, exclude globs and session folders."""

    name: str
    path: Path
    extra_paths: tuple[ExtraPath, ...] = ()
    exclude: tuple[str, ...] = ()
    sessions: tuple[SessionSource, ...] = ()
    # Read the folder as a vault of notes (every note, as an extra root is read) rather
    # than as an agent's MEMORY.md and memory/; None: decide by looking (memd.sources.layout).
    vault: bool | None = None

    def check_folder(self) -> None:
        """Raise ``WorkspaceMissing`` unless the workspace folder exists and can be read."""
        if not self.path.is_dir():
            raise WorkspaceMissing(
                f"workspace folder {self.path} does not exist or is not a folder; "
                "create it or set 'workspace' in the config"
            )
        if not os.access(self.path, os.R_OK | os.X_OK):
            raise WorkspaceMissing(f"workspace folder {self.path} cannot be read (permissions)")


@dataclass(frozen=True)
class Review:
    """The daemon's daily review of each workspace (``memd review`` runs one at any time)."""

    enabled: bool = True  # review each workspace every day
    at: str = "03:00"  # local time (flush.timezone's when set)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", self.at):
            raise ValueError(f"at must be a time of day as HH:MM, got {self.at!r}")


@dataclass(frozen=True)
class Ui:
    """The local page that shows memory (``memd ui`` serves it at any time)."""

    enabled: bool = False  # the daemon serves the page too, on 127.0.0.1
    port: int = 0  # 0: a free port, chosen at each start

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0 to 65535, got {self.port}")


@dataclass(frozen=True)
class Config:
    """The whole configuration of one memd installation."""

    workspaces: tuple[WorkspaceConfig, ...]
    state_dir: Path
    socket: Path
    chunking: Chunking = field(default_factory=Chunking)
    watch: Watch = field(default_factory=Watch)
    server: Server = field(default_factory=Server)
    embeddings: Embeddings = field(default_factory=Embeddings)
    search: Search = field(default_factory=Search)
    rerank: Rerank = field(default_factory=Rerank)
    flush: Flush = field(default_factory=Flush)
    log: Log = field(default_factory=Log)
    team: Team = field(default_factory=Team)
    review: Review = field(default_factory=Review)
    ui: Ui = field(default_factory=Ui)
    source: Path | None = None

    def __post_init__(self) -> None:
        known = [ws.name for ws in self.workspaces]
        for name in self.team.publish or ():
            if name not in known:
                raise ConfigError(
                    f"team.publish names workspace {name!r}, which is not configured "
                    f"(configured: {', '.join(known)})"
                )

    def workspace(self, name: str | None = None) -> WorkspaceConfig:
        """The named workspace, or the first one when ``name`` is None."""
        if name is None:
            return self.workspaces[0]
        for ws in self.workspaces:
            if ws.name == name:
                return ws
        known = ", ".join(ws.name for ws in self.workspaces)
        raise ConfigError(f"no workspace named '{name}' (configured: {known})")
