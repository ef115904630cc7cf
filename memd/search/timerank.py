"""Time and source in ranking: the soft window a query's time words name, newer
statements before older ones, notes before transcripts.

``Searcher`` reads the query's time words (``memd.search.timewords``) and hands this module the
reading; ``adjust`` then runs inside ``ranking.select`` once every candidate has its score.
Everything here is a preference among near-equals, never a filter: an undated MEMORY.md
fact that answers a "last week" question still comes back, and ``since``/``until`` remain
the only hard date filters.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache

from memd.config import Search
from memd.search.notedates import names_day_in
from memd.search.ranking import COVERAGE_KEYWORD, HALF_KEYWORD, Candidate
from memd.search.timewords import TimeReading
from memd.store.fts import STOPWORDS
from memd.store.rows import Hit

# Relevance given to the chunks of a window when the question is only about the time
# ("what did we do yesterday"): above the default min_score, below a real keyword match.
LISTING_RELEVANCE = 0.5
LISTING_POOL = 200  # window chunks a listing orders (the newest, and those matching words)
LISTING_LIFT = 0.1  # how far a chunk holding what is left of the question moves up
# A chunk dated inside a window only narrows: its date never lifts its relevance, so
# whether it is a strong match is decided by what it says, as outside a window (a window
# that made its every note strong answered unanswerable questions). Among the strong (and
# among the weak) it orders: ``IN_WINDOW + (1 - IN_WINDOW) × score``.
IN_WINDOW = 0.4
# With ``narrow_window``, a keyword match must hold this idf-weighted share of the
# question's words (those left after its time words) to be a match at all.
ON_TOPIC = 0.5
NEAR_DUPLICATE = 0.5  # share of the shorter line's words two statements of one fact share
AFTER_HALF_DAYS = 2.0  # a note this many days after a window keeps half its preference
_WORD = re.compile(r"\w+")


@cache
def _nospace() -> re.Pattern[str]:
    """Kana, Han and Hangul (compiled on first use: wide ranges take milliseconds)."""
    return re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7ff]")


# Words that ask what happened in a time without naming anything to look for: "what did
# we decide yesterday", "summarize last week", "上周讨论了什么". After the time words they
# leave nothing to search for, so the question lists the window.
GENERIC = frozenset(
    """happen happened happening happens decide decided decides decision decisions do did
    doing done go going went work worked working discuss discussed discussing discussion talk
    talked talking summarize summarise summary recap overview update updates news new
    anything everything something stuff things thing notes note say said agree agreed get
    got us let lets tell show give list me""".split()
    # ... and what to come: "what's planned", "anything due", "what's on", "coming up".
    + """plan plans planned planning schedule scheduled booked upcoming coming up due on
    agenda calendar expect expected arranged lined have has""".split()
)
# What a contraction leaves ("what's", "we'll", "don't") says nothing to search for.
_CONTRACTED = frozenset("s ll re ve d t m".split())
_GENERIC_ZH = re.compile(
    "发生|决定|讨论|聊|谈|总结|概括|回顾|做|干|搞|说|了|过|的|什么|哪些|啥|事情|事|情况|"
    "我们|我|大家|有|吗|呢|吧|都|些|一下"
)


def asks_only_when(query: str) -> bool:
    """Whether a query without its time words has nothing left to search for: only
    question words and generic verbs ("what did we decide" after "yesterday" is gone)."""
    if _nospace().search(query):
        query = _GENERIC_ZH.sub(" ", query)
        if _nospace().search(query):
            return False
    left = [w for w in _WORD.findall(query.lower()) if w not in STOPWORDS and w not in GENERIC]
    return not [w for w in left if w not in _CONTRACTED]


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


def lift_listing(cands: list[Candidate], matched: list[Candidate]) -> None:
    """Move the listed chunks that hold the rest of the question's words ("decide" in
    "what did we decide last week") up, by their keyword evidence, in listing order."""
    evidence = {c.hit.chunk_id: c.text(COVERAGE_KEYWORD, HALF_KEYWORD) for c in matched}
    for c in cands:
        c.relevance += LISTING_LIFT * evidence.get(c.hit.chunk_id, 0.0)


# A window still to come is named by notes written before it: "demo on 3 Dec", "due 11
# December", "next Thursday" (read as of the note's day, ``memd.search.notedates``).
AHEAD_POOL = 300  # the latest notes read for the days they name, for a question ahead
AHEAD_WRITTEN_DAYS = 90  # ... written at most this long before now
AHEAD_PREFERENCE = 1.5  # score factor of a note naming a day in the window, among matches


def names_of(reading: TimeReading) -> list[str]:
    """What a note may call a window: its months' names, its days' weekdays (a week or
    less) and dates, and the words the question used ("next week"), longest first."""
    assert reading.start is not None and reading.end is not None
    names, day = {reading.matched.lower()}, reading.start
    span = (reading.end - reading.start).days
    while day <= reading.end:
        names |= {day.strftime("%B").lower(), day.strftime("%Y-%m")}
        if span < 7:
            names |= {day.strftime("%A").lower(), day.isoformat()}
        day += dt.timedelta(days=1 if span < 62 else 28)
    return sorted(names, key=len, reverse=True)


def naming(cands: list[Candidate], reading: TimeReading, today: dt.date) -> set[int]:
    """The chunks that name a day of ``reading``'s window, each read as written on its
    note's day (an undated note: as of ``today``)."""
    assert reading.start is not None and reading.end is not None
    # A mention much wider than the window ("in December" for "the week after next") does
    # not name a day of it.
    widest = max((reading.end - reading.start).days, 6)
    out = set()
    for c in cands:
        written = dt.date.fromisoformat(c.hit.date) if c.hit.date else today
        if names_day_in(f"{c.hit.heading}\n{c.hit.text}", written, reading.start, reading.end,
                        widest):  # fmt: skip
            out.add(c.hit.chunk_id)
    return out


def answer_ahead(cands: list[Candidate], named: set[int], only_when: bool) -> None:
    """A question only about a time still to come ("what's on next week") is answered by
    the notes that name a day of it: they count as a listing's match; the others, which
    only share a name with it ("every Thursday"), keep half of what they had. A question
    about something in that time is decided by its words, as any other."""
    if not only_when:
        return
    for c in cands:
        if c.hit.chunk_id in named:
            c.relevance = max(c.relevance, LISTING_RELEVANCE)
        else:
            c.relevance *= 0.5


def prefer(cands: list[Candidate], named: set[int]) -> list[Candidate]:
    """Among the matches, those naming a day of the window come first (scores only; a
    score stays within [0, 1]: when the preference lifts one past 1, all are scaled down
    alike, so the order is the preference's)."""
    for c in cands:
        if c.hit.chunk_id in named:
            c.score *= AHEAD_PREFERENCE
    top = max((c.score for c in cands), default=0.0)
    if top > 1.0:
        for c in cands:
            c.score /= top
    return cands


def on_topic(cands: list[Candidate], floor: float) -> list[Candidate]:
    """The candidates that match the question itself, its time words aside: holding
    ``ON_TOPIC`` of its words, or, with meaning, at or above ``floor`` on their own. With
    only these the window narrows the question's matches and admits none for its date
    (``narrow_window``: what reaches a model unasked)."""
    return [
        c
        for c in cands
        if c.coverage >= ON_TOPIC or (c.cosine is not None and round(c.relevance, 4) >= floor)
    ]


def adjust(
    cands: list[Candidate],
    reading: TimeReading | None,
    settings: Search,
    query: str = "",
    shown: int = 10,
) -> list[Candidate]:
    """Apply the soft preferences to scored candidates (in place; returns them); ``shown``
    is how many results the answer will hold."""
    if reading is not None and not any(_inside(c.hit.date, reading) for c in cands):
        # Nothing found is from those days ("last Saturday" asked of notes years old): the
        # words cannot point at a note, so they weigh on none.
        reading = None
    for c in cands:
        if reading is not None:
            c.score *= window_factor(c.hit.date, reading, settings.outside_window)
            if _inside(c.hit.date, reading):
                c.score = IN_WINDOW + (1 - IN_WINDOW) * c.score
        if c.hit.source == "sessions":
            c.score *= settings.sessions_factor
    if settings.newer_first:
        # Only what may be shown can move: the best few, inside the window if there is one.
        best = sorted(cands, key=lambda c: -c.score)[: 2 * shown]
        inside = [c for c in best if reading is None or _inside(c.hit.date, reading)]
        newer_first(inside, settings.near_equal, query)
    return cands


def _inside(date: str | None, reading: TimeReading) -> bool:
    return date is not None and reading.contains(date)


def window_factor(date: str | None, reading: TimeReading, outside: float) -> float:
    """1 for a day inside the window, ``outside`` before it; after it, from 1 down to
    ``outside`` over a few days, since what happened is often written down a day or two
    later ("yesterday we ..."). An undated note (MEMORY.md, a topic note) sits halfway: it
    may hold a standing fact that answers, but it was not written then."""
    if date is None:
        return (1.0 + outside) / 2
    day = dt.date.fromisoformat(date)
    if reading.contains(day):
        return 1.0
    if reading.end is not None and day > reading.end:
        late = (day - reading.end).days
        return outside + (1.0 - outside) * 2.0 ** (-late / AFTER_HALF_DAYS)
    return outside


def newer_first(cands: list[Candidate], margin: float, query: str) -> None:
    """When two dated chunks make nearly the same statement (``statement``) and score
    within ``margin`` of each other, the newer comes first: the older one's score is
    lowered to just under the newer one's.

    Daily notes that disagree (the deploy target is staging, on 3 March; the deploy target
    is production, on 9 March) then show the later statement first, however old both are;
    a clearly better older answer keeps its place, and chunks that only share the query's
    words are left in their order. Notes are compared with notes and transcripts with
    transcripts.
    """
    asked = terms(query)
    dated = sorted((c for c in cands if c.hit.date), key=lambda c: c.hit.date, reverse=True)
    said: dict[int, set[str]] = {}

    def of(c: Candidate) -> set[str]:  # only chunks close in score are ever compared
        if c.hit.chunk_id not in said:
            said[c.hit.chunk_id] = statement(c.hit.text, asked)
        return said[c.hit.chunk_id]

    for n, c in enumerate(dated):
        lowered = True
        while lowered:  # lowering a score can bring it near another newer one
            lowered = False
            for newer in dated[:n]:
                if newer.hit.date == c.hit.date or newer.score >= c.score:
                    continue
                if (newer.hit.source == "sessions") != (c.hit.source == "sessions"):
                    continue  # a later transcript does not overrule a curated note
                if newer.score >= c.score * (1 - margin) and same_statement(of(c), of(newer)):
                    c.score = max(newer.score - 1e-4, 0.0)
                    lowered = True


def terms(text: str) -> set[str]:
    """Content words, cut to five letters (a crude stem: 'provider' ~ 'providers')."""
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def statement(text: str, asked: set[str]) -> set[str]:
    """The words of the line of ``text`` that holds most of the query's words: what the
    chunk says about what was asked."""
    best, score = "", 0
    for line in text.lower().splitlines():
        held = sum(term in line for term in asked)  # substrings: cheap, and close enough
        if held > score:
            best, score = line, held
    return terms(best)


def same_statement(a: set[str], b: set[str]) -> bool:
    """Two lines say nearly the same thing (most words shared), as one fact's old and new
    value do ("the deploy target is now staging" / "... production")."""
    shared = len(a & b)
    return shared >= 2 and shared >= NEAR_DUPLICATE * min(len(a), len(b))
