"""Time words in a query: "last week", "in March", "三天前" read as a window of days.

``read_time`` finds the time expressions of a question in English or Chinese (the rules
in ``memd.search.timepatterns``), resolves them against a clock (``now``, already in the
user's time zone) and returns the window they name together with the query stripped of
them, so the words that only say *when* are not searched for as keywords. Pure: no
config, no clock of its own.

    >>> now = dt.datetime(2026, 3, 18, 9, 0)  # a Wednesday
    >>> r = read_time("which hotel did we book last week", now)
    >>> (r.start, r.end, r.matched, r.query)
    (datetime.date(2026, 3, 9), datetime.date(2026, 3, 15), 'last week', 'which hotel did we book')
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from memd.search.days import Window
from memd.search.timepatterns import MONTHS, OPEN_RULES, RULES, WEEKDAYS


@dataclass(frozen=True)
class TimeReading:
    """The days a query's time words name (both ends inclusive; None: open) and the query
    without those words."""

    start: dt.date | None
    end: dt.date | None
    matched: str  # the time words as written, e.g. "last week"
    query: str
    ahead: bool = False  # the window is still to come (set by the searcher, which knows now)

    def contains(self, day: str | dt.date) -> bool:
        """Whether ``day`` (a date or YYYY-MM-DD) falls inside the window."""
        if isinstance(day, str):
            day = dt.date.fromisoformat(day[:10])
        return (self.start is None or day >= self.start) and (self.end is None or day <= self.end)

    def as_dict(self) -> dict:
        return {
            "from": self.start.isoformat() if self.start else None,
            "to": self.end.isoformat() if self.end else None,
            "matched": self.matched,
            "ahead": self.ahead or None,
        }


# -- reading a query ---------------------------------------------------------------------


@dataclass
class _Found:
    start: int  # span in the query, with the words that lead into it
    end: int
    shown: str  # the words a person would quote: "last week", "since Monday"
    window: Window


_NAMED = re.compile(
    r"\b(?:" + "|".join([*MONTHS, *WEEKDAYS, r"(?:19|20)\d\d"]) + r")\b"
    r"|[〇零一二三四五六七八九十\d]+[月年]|周[一二三四五六日天]",
    re.I,
)


def names_a_time(matched: str) -> bool:
    """Whether time words name a month, a weekday or a date ("June", "3 May 2023") rather
    than only point back from now ("this week", "yesterday")."""
    return bool(_NAMED.search(matched))


def read_time(query: str, now: dt.datetime | dt.date) -> TimeReading | None:
    """The time window ``query`` names, resolved against ``now``; None when it names none.

    Several expressions are joined into the span that covers them ("on Monday and
    Tuesday"); "since X" and "after X" run to today, "before X" and "until X" are open at
    the start, "between X and Y" runs from X to Y.
    """
    today = now.date() if isinstance(now, dt.datetime) else now
    found = _find(query, today)
    if not found:
        return None
    found = _ranges(query, found, today)
    starts = [f.window[0] for f in found]
    ends = [f.window[1] for f in found]
    start = None if None in starts else min(s for s in starts if s is not None)
    end = None if None in ends else max(e for e in ends if e is not None)
    if start is not None and end is not None and start > end:
        return None
    rest = query
    for f in sorted(found, key=lambda f: -f.start):
        rest = rest[: f.start] + " " + rest[f.end :]
    rest = re.sub(r"\s+([?.!,;:？。！，])", r"\1", " ".join(rest.split()))
    return TimeReading(start, end, ", ".join(f.shown for f in found), rest.strip(" ,"))


def _find(query: str, today: dt.date) -> list[_Found]:
    """Every time expression, longest first where two overlap."""
    candidates, vague = [], []
    for pattern, handler in RULES:
        for m in pattern.finditer(query):
            if not m.group(0).strip():
                continue
            window = handler(m, today)
            if window is not None:
                found = vague if handler in OPEN_RULES else candidates
                found.append((m.start(), m.end(), window))
    # "coming up in January": January; "later this month" holds "this month" and is kept.
    candidates += [v for v in vague if not candidates or any(
        v[0] <= c[0] and c[1] <= v[1] for c in candidates)]  # fmt: skip
    candidates.sort(key=lambda c: (-(c[1] - c[0]), c[0]))
    taken: list[_Found] = []
    for start, end, window in candidates:
        if any(start < f.end and f.start < end for f in taken):
            continue
        shown = _LEAD_WORDS.sub("", query[start:end]).strip()
        taken.append(_Found(start, end, shown, window))
    return sorted(taken, key=lambda f: f.start)


_LEAD_WORDS = re.compile(
    r"^(?:(?:in|on|during|at|over|for|of|within|throughout|from)\s+)?(?:the\s+(?!day\b))?", re.I
)


# Prepositions that turn a point in time into an open range, English then Chinese.
_SINCE_EN = re.compile(r"\b(since|after|starting(?:\s+from)?)\s+$", re.I)
_BEFORE_EN = re.compile(r"\b(before|until|till|up\s+to|prior\s+to|by)\s+$", re.I)
_BETWEEN_EN = re.compile(r"\b(between|from)\s+$", re.I)
_AND_EN = re.compile(r"^\s+(and|to|until|till|through|-)\s+", re.I)
_SINCE_ZH = re.compile(r"(自从|自|从)$")
_SINCE_AFTER_ZH = re.compile(r"^(以来|之后|以后|起|开始)")
_BEFORE_AFTER_ZH = re.compile(r"^(之前|以前)")

_TAIL = re.compile(r"^(?:的|['’]s\b)")


def _opens_range(query: str, f: _Found) -> int | None:
    """Where "between X" or "from X" starts, when ``f`` is X."""
    if lead := _BETWEEN_EN.search(query[: f.start]):
        return lead.start()
    if re.match(r"from\s", query[f.start : f.end], re.I):
        return f.start
    return None


def _ranges(query: str, found: list[_Found], today: dt.date) -> list[_Found]:
    """Apply "since", "before", "between ... and" and their Chinese forms."""
    out: list[_Found] = []
    i = 0
    while i < len(found):
        f = found[i]
        before, after = query[: f.start], query[f.end :]
        start, end = f.window
        nxt = found[i + 1] if i + 1 < len(found) else None
        if nxt is not None and (opened := _opens_range(query, f)) is not None:
            joint = _AND_EN.match(query[f.end : nxt.start])
            if joint and joint.end() == nxt.start - f.end:
                out.append(_Found(opened, nxt.end, query[opened : nxt.end].strip(),
                                  (start, nxt.window[1])))  # fmt: skip
                i += 2
                continue
        if (lead := _SINCE_EN.search(before)) or (lead := _SINCE_ZH.search(before)):
            tail = _SINCE_AFTER_ZH.match(after)
            stop = f.end + (tail.end() if tail else 0)
            first = start if lead[1].lower() != "after" else (end + dt.timedelta(days=1))
            out.append(_Found(lead.start(), stop, query[lead.start() : stop].strip(),
                              (first, max(today, first))))  # fmt: skip
        elif lead := _BEFORE_EN.search(before):
            inclusive = lead[1].lower() in ("until", "till", "by")
            last = end if inclusive else start - dt.timedelta(days=1)
            # "before Christmas" asked in November: from now until then, still to come.
            first = today + dt.timedelta(days=1) if start > today else None
            out.append(_Found(lead.start(), f.end, query[lead.start() : f.end].strip(),
                              (first, last)))  # fmt: skip
        elif tail := _SINCE_AFTER_ZH.match(after):
            out.append(_Found(f.start, f.end + tail.end(), f.shown + tail[0],
                              (start, max(today, start))))  # fmt: skip
        elif tail := _BEFORE_AFTER_ZH.match(after):
            out.append(_Found(f.start, f.end + tail.end(), f.shown + tail[0],
                              (None, start - dt.timedelta(days=1))))  # fmt: skip
        else:
            out.append(f)
        i += 1
    for f in out:  # 上周的会议, "yesterday's release": the 的 and the 's go with the time
        if tail := _TAIL.match(query[f.end :]):
            f.end += tail.end()
    return out
