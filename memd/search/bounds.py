"""How much one search may ask for: a query is cut to what a search can use.

Every query term costs an FTS pass, and a query's text goes to the embedding model, which
reads its first few hundred tokens anyway. A query longer than ``MAX_QUERY_CHARS``
characters, or with more than ``MAX_QUERY_TERMS`` distinct words, is searched by its
beginning, and the answer says so: an agent that pasted a whole document still gets
results, and one request can no longer hold the daemon for a minute.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, TypeVar

from memd.store.fts import STOPWORDS

MAX_QUERY_CHARS = 4000
MAX_QUERY_TERMS = 64
HEAVY_QUERY_CHARS = 256  # longer searches queue in their own lane in the daemon
MAX_WAIT_FRESH = 10.0  # seconds a search may wait for the index to catch up (wait_fresh)


class _HasQuery(Protocol):
    query: str


R = TypeVar("R", bound=_HasQuery)


def bound_query(query: str) -> tuple[str, str | None]:
    """``query`` cut to its first ``MAX_QUERY_CHARS`` characters and ``MAX_QUERY_TERMS``
    distinct words (at a word boundary), and a warning saying what was dropped."""
    if len(query) <= MAX_QUERY_TERMS * 2 and len(query.split()) <= MAX_QUERY_TERMS:
        return query, None  # the common case, cheaply
    kept = query
    if len(kept) > MAX_QUERY_CHARS:
        cut = kept.rfind(" ", 0, MAX_QUERY_CHARS + 1)
        kept = kept[: cut if cut > MAX_QUERY_CHARS // 2 else MAX_QUERY_CHARS]
    seen: set[str] = set()
    words = kept.split()
    for n, word in enumerate(words):
        term = word.lower()
        if term in STOPWORDS or term in seen:
            continue
        if len(seen) == MAX_QUERY_TERMS:
            kept = " ".join(words[:n])
            break
        seen.add(term)
    if kept == query:
        return query, None
    total = len(query.split())
    return kept, (
        f"query cut to its first {len(kept.split())} of {total} words "
        f"(searches use at most {MAX_QUERY_CHARS} characters and {MAX_QUERY_TERMS} distinct words)"
    )


def bound_request(request: R) -> tuple[R, str | None]:
    """A search request with its query bounded (see ``bound_query``)."""
    if not isinstance(request.query, str):
        return request, None
    query, warning = bound_query(request.query)
    if warning is None:
        return request, None
    return dataclasses.replace(request, query=query), warning  # type: ignore[type-var]


def join_warnings(*warnings: str | None) -> str | None:
    return "; ".join(w for w in warnings if w) or None


def not_caught_up(waited: float) -> str:
    """The warning of a ``wait_fresh`` search that gave up after ``waited`` seconds."""
    return (
        f"the index had not caught up with the files after {waited:.2g} s "
        "(wait_fresh); results may miss the latest edits"
    )
