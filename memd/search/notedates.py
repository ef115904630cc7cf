"""The days a note's own words name: "demo on 3 Dec", "due 11 December", "next Thursday".

A question's time words are read against now (``memd.search.timewords``); a note's are read
against the day it was written, and lean the other way: a note mostly says what is planned.
A date without its year is the one nearest the note's day (a note of 27 November saying
"3 Dec" means the coming one); a weekday alone is the coming one unless the sentence is in
the past tense. The same rules as for questions find the expressions
(``memd.search.timepatterns``); only how a yearless one is placed differs.

    >>> days_named("Demo for ACME on 3 Dec.", dt.date(2026, 11, 27))
    [(datetime.date(2026, 12, 3), datetime.date(2026, 12, 3))]
"""

from __future__ import annotations

import datetime as dt
import re

from memd.search.days import Window
from memd.search.timepatterns import (
    OPEN_RULES,
    RULES,
    WEEKDAY_RULES,
    WEEKDAYS,
    YEARLESS,
    past_tense,
)

# A yearless date further back than this from the note's day is taken a year later.
_BEHIND_DAYS = 60
_WEEKDAY = re.compile(
    r"\b(?:(?P<which>last|this|next)\s+)?(?P<day>" + "|".join(WEEKDAYS) + r")\b(?!s)", re.I
)
_EVERY = re.compile(r"\b(?:every|each|other)\s+$", re.I)
# A date as written across most of Europe: "12.3.", "3.12.2026", "3. Dezember" (the day
# first, a dot after it); a version ("1.8.3") or a decimal ("2.5 h") is none.
_GERMAN_MONTHS = ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august",
                  "september", "oktober", "november", "dezember")  # fmt: skip
_DOTTED = re.compile(
    r"(?<![\d.])(?P<d>\d{1,2})\.(?:(?P<m>\d{1,2})\.(?P<y>(?:19|20)\d\d)?(?!\d)|\s*(?P<name>"
    + "|".join(_GERMAN_MONTHS)
    + r")\b(?:\s+(?P<year>(?:19|20)\d\d))?)",
    re.I,
)
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?\n]|$)")
# What any time expression holds: a digit, a month's or a weekday's name (or their
# abbreviations), a relative word, a holiday, or Chinese time characters.
_MAYBE = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|"
    r"today|tonight|tomorrow|yesterday|week|month|year|weekend|ago|christmas|xmas|easter|"
    r"new\s+year|halloween|valentine|boxing|q[1-4])|[年月日周天]",
    re.I,
)


def days_named(text: str, written: dt.date) -> list[Window]:
    """The windows of days ``text`` names, read as written on ``written``, in text order;
    open-ended ones ("since March") are left out."""
    if not _MAYBE.search(text):
        return []  # most lines name no time: one cheap look instead of every rule
    found: list[tuple[int, int, Window]] = []
    for pattern, handler in RULES:
        if handler in WEEKDAY_RULES or handler in OPEN_RULES:
            continue  # weekdays are read below, the way notes use them; "soon" names no day
        for m in pattern.finditer(text):
            window = handler(m, written)
            if window is None or window[0] is None or window[1] is None:
                continue
            if handler in YEARLESS and not _has_year(m):
                window = _nearest(window, written)
            found.append((m.start(), m.end(), window))
    for m in _DOTTED.finditer(text):
        if (window := _dotted(m, written)) is not None:
            found.append((m.start(), m.end(), window))
    for m in _WEEKDAY.finditer(text):
        if _EVERY.search(text[: m.start()]):
            continue  # "every Thursday": a habit, not a day
        day = _weekday(m, written, _sentence_at(text, m.start()))
        found.append((m.start(), m.end(), (day, day)))
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    kept: list[tuple[int, int, Window]] = []
    for start, end, window in found:  # of overlapping expressions, the longer one
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end, window))
    return [window for _, _, window in kept]


def names_day_in(
    text: str, written: dt.date, start: dt.date, end: dt.date, widest: int | None = None
) -> bool:
    """Whether ``text`` names a day from ``start`` to ``end`` (a window's days) by an
    expression of at most ``widest`` days more than its first (None: any)."""
    for lo, hi in days_named(text, written):
        assert lo is not None and hi is not None
        if lo <= end and hi >= start and (widest is None or (hi - lo).days <= widest):
            return True
    return False


def _has_year(m: re.Match[str]) -> bool:
    try:
        return bool(m["year"])
    except IndexError:
        return False


def _nearest(window: Window, written: dt.date) -> Window:
    start, end = window
    assert start is not None and end is not None
    if (written - end).days <= _BEHIND_DAYS:
        return window
    try:
        return start.replace(year=start.year + 1), end.replace(year=end.year + 1)
    except ValueError:  # 29 February
        return window


def _dotted(m: re.Match[str], written: dt.date) -> Window | None:
    """A day-first dotted date, the nearest to the note's day when it has no year."""
    month = int(m["m"]) if m["m"] else _GERMAN_MONTHS.index(m["name"].lower()) + 1
    year = m["y"] or m["year"]
    try:
        day = dt.date(int(year) if year else written.year, month, int(m["d"]))
    except ValueError:  # 31.2., 13.13.
        return None
    return (day, day) if year else _nearest((day, day), written)


def _weekday(m: re.Match[str], written: dt.date, sentence: str) -> dt.date:
    weekday = WEEKDAYS.index(m["day"].lower())
    which = (m["which"] or "").lower()
    monday = written - dt.timedelta(days=written.weekday())
    if which == "next":  # the one in the calendar week after the note's
        return monday + dt.timedelta(days=7 + weekday)
    if which == "this":
        return monday + dt.timedelta(days=weekday)
    back = (written.weekday() - weekday) % 7
    if which == "last" or (past_tense(sentence) and back):
        return written - dt.timedelta(days=back or 7)
    return written + dt.timedelta(days=(weekday - written.weekday()) % 7)


def _sentence_at(text: str, at: int) -> str:
    for m in _SENTENCE.finditer(text):
        if m.start() <= at < max(m.end(), m.start() + 1):
            return m.group(0)
    return text
