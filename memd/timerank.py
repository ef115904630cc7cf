"""Time and source in ranking: the soft window a query's time words name, newer
statements before older ones, notes before transcripts.

``Searcher`` reads the query's time words (``memd.timewords``) and hands this module the
reading; ``adjust`` then runs inside ``ranking.select`` once every candidate has its score.
Everything here is a preference among near-equals, never a filter: an undated MEMORY.md
fact that answers a "last week" question still comes back, and ``since``/``until`` remain
the only hard date filters.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from memd.config import Search
from memd.errors import InvalidParams
from memd.fts import STOPWORDS
from memd.ranking import Candidate
from memd.schema import Hit
from memd.timewords import TimeReading

# Relevance given to the chunks of a window when the question is only about the time
# ("what did we do yesterday"): above the default min_score, below a real keyword match.
LISTING_RELEVANCE = 0.5
_WORD = re.compile(r"\w+")
_NOSPACE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7ff]")


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


def asks_only_when(query: str) -> bool:
    """Whether a query without its time words has nothing left to search for
    ("what did we do" after "yesterday" is gone)."""
    if _NOSPACE.search(query):
        return False
    return not [w for w in _WORD.findall(query.lower()) if w not in STOPWORDS]


def window_filter(
    reading: TimeReading, since: str | None, until: str | None
) -> tuple[str | None, str | None] | None:
    """The window as ``since``/``until`` within the request's own (hard) ones; None when
    they do not meet."""
    lo = reading.start.isoformat() if reading.start else None
    hi = reading.end.isoformat() if reading.end else None
    lo = max(x for x in (lo, since) if x) if (lo or since) else None
    hi = min(x for x in (hi, until) if x) if (hi or until) else None
    if lo and hi and lo > hi:
        return None
    return lo, hi


def listing(hits: list[Hit]) -> list[Candidate]:
    """Candidates for a question that names only a time: the window's chunks, newest day
    first, each in file order."""
    ordered = sorted(hits, key=lambda h: (h.date or "", -h.chunk_id), reverse=True)
    out = []
    for n, h in enumerate(ordered):
        # A hair less for each later chunk keeps the listing's order in score order.
        out.append(Candidate(h, relevance=LISTING_RELEVANCE - n * 1e-5))
    return out


def reference_day(today: dt.date, reading: TimeReading | None) -> dt.date:
    """The day decay counts age from: today, or the end of a window in the past, so that
    "in March" does not find March's notes old."""
    if reading is not None and reading.end is not None and reading.end < today:
        return reading.end
    return today


def adjust(
    cands: list[Candidate], reading: TimeReading | None, settings: Search
) -> list[Candidate]:
    """Apply the soft preferences to scored candidates (in place; returns them)."""
    for c in cands:
        if reading is not None and c.hit.date is not None and not reading.contains(c.hit.date):
            c.score *= settings.outside_window
        if c.hit.source == "sessions":
            c.score *= settings.sessions_factor
    if settings.newer_first:
        newer_first(cands, settings.near_equal)
    return cands


def newer_first(cands: list[Candidate], margin: float) -> None:
    """When two dated chunks score within ``margin`` of each other, the newer comes first:
    the older one's score is lowered to just under the newer one's.

    Daily notes that disagree (the deploy target was staging on 3 March and production on
    9 March) then show the later statement first, however old both are; a clearly better
    older answer keeps its place.
    """
    dated = sorted((c for c in cands if c.hit.date), key=lambda c: c.hit.date, reverse=True)
    for n, c in enumerate(dated):
        lowered = True
        while lowered:  # lowering a score can bring it near another newer one
            lowered = False
            for newer in dated[:n]:
                if newer.hit.date == c.hit.date or newer.score >= c.score:
                    continue
                if newer.score >= c.score * (1 - margin):
                    c.score = max(newer.score - 1e-4, 0.0)
                    lowered = True
