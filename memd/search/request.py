"""What a search may ask for: the request, and its defaults filled in and every value
checked once, so the pipeline never meets a bad one."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from memd.config import Search
from memd.errors import InvalidParams

MODES = ("auto", "hybrid", "keyword", "vector")
SCOPES = ("local", "team")
SOURCES = ("memory", "sessions")
MAX_RESULTS = 100


@dataclass(frozen=True)
class SearchRequest:
    """What to search for and how to filter; ``None`` takes the config's default."""

    query: str
    max_results: int | None = None
    min_score: float | None = None  # given: a hard cut (no weak results)
    min_results: int | None = None  # fill up with weak results to this many (0: none)
    mode: str = "auto"
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    now: str | None = None  # ISO date-time that time words are read against; None: the clock
    sources: tuple[str, ...] = ()  # "memory" (notes), "sessions" (transcripts); (): both
    scope: str = "local"  # "team": every host's published workspaces too
    all_chunks: bool = False  # every matching chunk, not each note's best (memd.search.collapse)
    # A time window only narrows the question's matches: a chunk that holds under half of
    # its other words (and has no strong meaning) is none (``timerank.on_topic``). Not a
    # socket parameter: what reaches a model unasked (``memd recall``) sets it.
    narrow_window: bool = False
    # At most this long for the query's vector, else keyword search (None: the config's
    # query_timeout_s). Not a socket parameter: a hook must answer within its budget even
    # while the model is busy with a back-fill's batch.
    embed_wait_s: float | None = None


def resolve(
    request: SearchRequest, settings: Search, clock: Callable[[], dt.datetime]
) -> SearchRequest:
    """The request with every default filled in from ``settings``; raises
    ``InvalidParams`` naming the first bad value."""
    s = settings
    if not isinstance(request.query, str) or not request.query.strip():
        raise InvalidParams("query", "is required and must be a non-empty string")
    max_results = s.max_results if request.max_results is None else request.max_results
    if not 1 <= max_results <= MAX_RESULTS:
        raise InvalidParams(
            "max_results", f"must be between 1 and {MAX_RESULTS}, got {max_results}"
        )
    min_score = s.min_score if request.min_score is None else float(request.min_score)
    if not 0.0 <= min_score <= 1.0:
        raise InvalidParams("min_score", f"must be between 0.0 and 1.0, got {min_score}")
    # A caller's own min_score is a hard cut: what it asks to drop is not shown as weak.
    fill = 0 if request.min_score is not None else s.min_results
    min_results = fill if request.min_results is None else request.min_results
    if not 0 <= min_results <= MAX_RESULTS:
        raise InvalidParams(
            "min_results", f"must be between 0 and {MAX_RESULTS}, got {min_results}"
        )
    if request.scope not in SCOPES:
        raise InvalidParams("scope", f"must be local or team, got {request.scope!r}")
    if request.mode not in MODES:
        raise InvalidParams("mode", f"must be one of {', '.join(MODES)}, got {request.mode!r}")
    since, until = _date("since", request.since), _date("until", request.until)
    if since and until and since > until:
        raise InvalidParams("since", f"{since} is after until ({until})")
    if request.now is not None:
        parse_now(request.now, clock)  # raises naming 'now'
    for source in request.sources:
        if source not in SOURCES:
            raise InvalidParams("sources", f"must list {' and/or '.join(SOURCES)}, got {source!r}")
    return dataclasses.replace(
        request,
        max_results=max_results,
        min_score=min_score,
        min_results=min(min_results, max_results),
        paths=tuple(request.paths),
        tags=tuple(request.tags),
        sources=tuple(dict.fromkeys(request.sources)),
        since=since,
        until=until,
    )


def _date(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise InvalidParams(name, f"must be a date as YYYY-MM-DD, got {value!r}") from None


def parse_now(value: str | None, clock: Callable[[], dt.datetime]) -> dt.datetime:
    """The request's ``now`` (ISO date-time; a bare date is its noon) in the clock's zone;
    the clock when unset."""
    here = clock()
    if value is None:
        return here
    try:
        moment = dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidParams(
            "now", f"must be an ISO date-time such as 2026-01-20T09:30:00+01:00, got {value!r}"
        ) from None
    if len(value) <= 10:
        moment = moment.replace(hour=12)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=here.tzinfo)
    return moment.astimezone(here.tzinfo)
