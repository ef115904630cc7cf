"""The typed records memd's library returns; ``as_dict()`` is the socket's JSON shape.

Every shell (socket, CLI, MCP) sends ``as_dict()``; library users read the attributes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


class _Record:
    def as_dict(self) -> dict[str, Any]:
        """This record as the socket returns it (a ``warning``, ``time`` and the like only
        when there is one)."""
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and (f.name in ("warning", "time") or f.metadata.get("optional")):
                continue
            out[f.metadata.get("key", f.name)] = _plain(value)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, _Record):
        return value.as_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class SearchResult(_Record):
    """One ranked chunk: where it is, how well it answers, and its text."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    heading: str
    source: str
    citation: str
    # "strong": at or above the relevance floor; "weak": below it, shown because fewer
    # than search.min_results were strong.
    match: str = "strong"
    # A team search says whose note it is (``scope: "team"``); a local one leaves them out.
    host: str | None = field(default=None, metadata={"optional": True})
    workspace: str | None = field(default=None, metadata={"optional": True})
    # The citation of the later statement that replaced the one this result matched on
    # (memd.search.superseded): labelled so. ``superseded`` says how it was found:
    # "confirmed" (a change word, and the older is the nearest in meaning of the newer's
    # candidates: ranked lower), "stated" (a change word: "now", "switched", "was") or
    # "likely" (the same subject with another value, no change word); ``now`` what the
    # newer one says.
    superseded_by: str | None = field(default=None, metadata={"optional": True})
    superseded: str | None = field(default=None, metadata={"optional": True})
    now: str | None = field(default=None, metadata={"optional": True})
    # How many other chunks of the same note matched and were folded into this one (a
    # result list gives each note one place unless ``all_chunks`` asks for every chunk).
    more_chunks: int | None = field(default=None, metadata={"optional": True})
    # A note with no body (a stub: its name, aliases and tags) says what links to it:
    # the citations of the linking chunks, as ``memory_get`` gives them.
    backlinks: list[str] | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Freshness(_Record):
    """How current the index is; every search answer carries one."""

    generation: int
    pending_files: int
    pending_embeddings: int
    stale: bool
    last_indexed_at: str | None
    # While a whole-workspace pass runs (a cold start): {"done": files, "total": files}.
    indexing: dict | None = field(default=None, metadata={"optional": True})
    # In a search answer while vectors are back-filled: the share of the results' files
    # whose every chunk has a vector (was searched by meaning); absent when all were.
    meaning_share: float | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class TimeWindow(_Record):
    """How a query's time words were read: the days (inclusive; None: open) and the words."""

    start: str | None = field(metadata={"key": "from"})
    end: str | None = field(metadata={"key": "to"})
    matched: str
    # True when no note is dated in the window: the whole question was searched instead.
    empty: bool | None = field(default=None, metadata={"optional": True})
    # True when the window is still to come: notes that name it first, whatever their date.
    ahead: bool | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class SearchAnswer(_Record):
    """Results best first, what really ran (``mode``), how fresh the index was, and how the
    query's time words were read (``time``, when it had any)."""

    results: list[SearchResult]
    mode: str
    provider: str
    model: str | None
    index: Freshness
    warning: str | None = None
    time: TimeWindow | None = None
    # When min_score left no result: how many candidates it dropped, and the best score.
    below_floor: int | None = field(default=None, metadata={"optional": True})
    best_score: float | None = field(default=None, metadata={"optional": True})
    team: dict | None = field(default=None, metadata={"optional": True})  # scope team: publishing
    # "pending" when answered without a daemon while what later notes replaced was still
    # being found after a ``memd index``: a result may not say yet that it was replaced.
    current: str | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Lines(_Record):
    """Lines of a memory file as ``memory_get`` returns them."""

    path: str
    start: int = field(metadata={"key": "from"})
    lines: int
    text: str
    total_lines: int
    truncated: bool
    next_from: int | None
    # Another host's note (``host`` given): the lines it published, and when.
    host: str | None = field(default=None, metadata={"optional": True})
    published_at: str | None = field(default=None, metadata={"optional": True})
    # Citations of the chunks that link to this note (``[[Note]]``), for a named note.
    backlinks: list[str] | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Written(_Record):
    """Where a write landed: 1-based inclusive lines of ``path`` (workspace-relative)."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class FlushAnswer(_Record):
    """What a flush wrote, what it skipped as already there, and whether the id was seen."""

    written: list[Written]
    skipped: list[dict]
    duplicate: bool = False
    warning: str | None = None

    @classmethod
    def from_dict(cls, d: dict, duplicate: bool) -> FlushAnswer:
        """An answer kept in the flush ledger, given back for a repeated ``flush_id``."""
        return cls([Written(**w) for w in d["written"]], d["skipped"], duplicate, d.get("warning"))


@dataclass(frozen=True)
class StoreAnswer(_Record):
    """The line a key now holds, and whether it replaced an older one."""

    path: str
    start_line: int
    end_line: int
    replaced: bool
    warning: str | None = None


@dataclass(frozen=True)
class ForgetAnswer(_Record):
    """Whether the key's line existed, and which files it was removed from."""

    removed: bool
    paths: list[str]
    warning: str | None = None


@dataclass(frozen=True)
class KeyEntry(_Record):
    """One ``- **key**: value`` line."""

    key: str
    path: str
    line: int
    category: str
    value: str = ""


@dataclass(frozen=True)
class KeyList(_Record):
    """Every stored key found."""

    entries: list[KeyEntry]
    count: int


@dataclass(frozen=True)
class FlushPrompt(_Record):
    """The prompt an agent runs over its context before compaction, and where notes land."""

    system: str
    user: str
    target: str
    review_waiting: int | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Proposal(_Record):
    """What a review suggests: a stable ``id`` (a hash of what it cites), why, and where."""

    id: str
    kind: str  # promote | conflict | duplicate
    reason: str
    score: float
    citations: list[str]  # path#Lstart-Lend, oldest first
    text: str  # what applying it writes (or, with action "none", what it is about)
    action: str  # append | store | forget | none
    newer: str | None = field(default=None, metadata={"optional": True})  # a conflict's
    key: str | None = field(default=None, metadata={"optional": True})  # store/forget


@dataclass(frozen=True)
class ReviewAnswer(_Record):
    """The proposals waiting, best first, and when and over how much they were made."""

    proposals: list[Proposal]
    count: int
    reviewed_at: str
    files: int
    dismissed: int
    seconds: float
    warning: str | None = None
    more: int = 0  # proposals waiting beyond the best shown (memd review shows 20)
    # "pending" when answered without a daemon while what later notes replaced was still
    # being found after a ``memd index``.
    current: str | None = field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class ReviewApplied(_Record):
    """What applying proposals did: each id with what it wrote, if anything."""

    applied: list[dict]  # {id, action, path, start_line, end_line, duplicate}
    dismissed: list[str]


@dataclass(frozen=True)
class Activity:
    """What a running daemon is doing for a workspace; a library alone is always at rest.

    The daemon builds one whenever an answer needs it; memd's library never writes it.
    """

    daemon: bool = False
    watcher: str = "not running"  # running | restarting | waiting for folder | not running
    pending_files: int = 0  # changed files waiting for (or in) a targeted pass
    scanning: bool = False  # a whole-workspace pass is queued or running
    scan_done: int = 0
    scan_total: int = 0
    embeddings: str = "idle"  # idle | embedding | cooling down ... after: <error>
    pending_embeddings: int | None = None  # None: count them in the database
    embed_per_s: float | None = None  # chunks a second over the last minute of back-fill
    team: dict | None = None  # publishing to the team store: host, state, outbox, published_at
    review: dict | None = None  # the daily review: waiting, reviewed_at, next_at, state

    @property
    def pending(self) -> int:
        remaining = self.scan_total - self.scan_done if self.scanning else 0
        return self.pending_files + remaining

    @property
    def stale(self) -> bool:
        """The index may be behind the files: edits wait, a pass runs, or nothing watches."""
        unwatched = self.daemon and self.watcher != "running"
        return self.pending > 0 or self.scanning or unwatched


@dataclass(frozen=True)
class Status(_Record):
    """Counts, freshness and where things live, for people and monitoring."""

    version: str
    workspace: str
    path: str
    roots: list[str]
    files: int
    chunks: int
    embedded_chunks: int
    pending_files: int
    pending_embeddings: int
    provider: str
    model: str | None
    embeddings: str
    generation: int
    last_indexed_at: str | None
    watcher: str
    indexing: dict | None
    database: str
    database_bytes: int
    config: str | None = None  # the config file the answering process read (None: defaults)
    socket: str | None = None
    team: dict | None = field(default=None, metadata={"optional": True})
    # The review's proposals waiting (memd review), when it ran and when it runs next.
    review: dict | None = field(default=None, metadata={"optional": True})
    # While chunks wait for vectors: {done, total, per_s, eta_s}, the rate (chunks a second)
    # measured by the daemon over its last minute of embedding (None until it has).
    embedding: dict | None = field(default=None, metadata={"optional": True})
    # Files the index could not take, each "path (why)": too large, unreadable, a name
    # that is not UTF-8 (its bytes as \xff); the rest are indexed.
    skipped_files: list[str] | None = field(default=None, metadata={"optional": True})
    # Without a daemon, while what later notes replaced is still being found after a
    # ``memd index``: "pending", and that process's {pid, since, queued}.
    current: str | None = field(default=None, metadata={"optional": True})
    finishing: dict | None = field(default=None, metadata={"optional": True})


def embedding_progress(done: int, pending: int, per_s: float | None, db: Any = None) -> dict | None:
    """Embedding progress while chunks wait: counts, rate and the seconds left; with index
    ``db``, its interim tier's progress (``InterimTier.progress``: done, total, rate,
    seconds left) while it is made, and ``recent``: how many of the newest week's chunks
    have the full model's vectors and how many only the interim tier's
    (``Index.recent_coverage``)."""
    if not pending:
        return None
    rate = round(per_s, 2) if per_s else None
    eta = round(pending / rate) if rate else None  # what the numbers shown give
    out: dict = {"done": done, "total": done + pending, "per_s": rate, "eta_s": eta}
    if db is not None and db.interim is not None:
        out["interim"] = db.interim.progress()
    if db is not None:  # which tier covers how much of the newest week
        out["recent"] = db.recent_coverage()
    return out


@dataclass
class IndexReport:
    """What one index pass did (``memd index``, ``Memory.index``); mutable while it runs."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks: int = 0
    cancelled: bool = False
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    # path -> why, for status (not sent: ``warnings`` says it with names printable).
    skipped_files: dict[str, str] = field(default_factory=dict, metadata={"sent": False})

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def as_dict(self) -> dict:
        out = {**dataclasses.asdict(self), "seconds": round(self.seconds, 3)}
        for f in dataclasses.fields(self):
            if f.metadata.get("sent") is False:
                del out[f.name]
        return out
