"""Calendar arithmetic for time words: weeks (Monday first), months, "the latest March".

Every window is a pair of dates, both inclusive; ``None`` is an open end.
"""

from __future__ import annotations

import calendar
import datetime as dt

Window = tuple[dt.date | None, dt.date | None]


def month_span(year: int, month: int) -> Window:
    last = calendar.monthrange(year, month)[1]
    return dt.date(year, month, 1), dt.date(year, month, last)


def shift_month(day: dt.date, months: int) -> tuple[int, int]:
    n = day.year * 12 + day.month - 1 + months
    return n // 12, n % 12 + 1


def week_span(day: dt.date) -> Window:
    monday = day - dt.timedelta(days=day.weekday())
    return monday, monday + dt.timedelta(days=6)


def year_span(year: int) -> Window:
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def latest_month(month: int, today: dt.date, year: int | None) -> Window:
    """A month named without its year is the latest one that has begun."""
    if year is None:
        year = today.year if month <= today.month else today.year - 1
    return month_span(year, month)


def latest_day(month: int, day: int, today: dt.date, year: int | None) -> Window | None:
    try:
        if year is None:
            year = today.year
            if dt.date(year, month, day) > today:
                year -= 1
        date = dt.date(year, month, day)
    except ValueError:  # 30 February, 29 February of a common year
        return None
    return date, date


def latest_weekday(weekday: int, today: dt.date, before_today: bool = False) -> dt.date:
    back = (today.weekday() - weekday) % 7
    if back == 0 and before_today:
        back = 7
    return today - dt.timedelta(days=back)


def part_of_month(window: Window, part: str | None) -> Window:
    start, end = window
    assert start is not None and end is not None
    if part == "early":
        return start, start + dt.timedelta(days=9)
    if part == "mid":
        return start + dt.timedelta(days=9), start + dt.timedelta(days=19)
    if part == "late":
        return start + dt.timedelta(days=20), end
    return window


def ago(unit: str, n: int, today: dt.date) -> Window:
    """``n`` units before today: that day, or the week, month or year it falls in."""
    if unit == "day":
        day = today - dt.timedelta(days=n)
        return day, day
    if unit == "week":
        return week_span(today - dt.timedelta(weeks=n))
    if unit == "month":
        return month_span(*shift_month(today, -n))
    return year_span(today.year - n)


def past(unit: str, n: int, today: dt.date) -> Window:
    """The last ``n`` units up to today, rolling ("the past two weeks")."""
    if unit == "day":
        return today - dt.timedelta(days=n), today
    if unit == "week":
        return today - dt.timedelta(weeks=n), today
    if unit == "month":
        year, month = shift_month(today, -n)
        day = min(today.day, calendar.monthrange(year, month)[1])
        return dt.date(year, month, day), today
    return dt.date(today.year - n, today.month, min(today.day, 28)), today


def ahead(unit: str, n: int, today: dt.date) -> Window:
    """The next ``n`` units after today, rolling ("the next two weeks")."""
    if unit == "day":
        return today + dt.timedelta(days=1), today + dt.timedelta(days=n)
    if unit == "week":
        return today + dt.timedelta(days=1), today + dt.timedelta(weeks=n)
    if unit == "month":
        year, month = shift_month(today, n)
        return today + dt.timedelta(days=1), dt.date(
            year, month, min(today.day, calendar.monthrange(year, month)[1])
        )
    return today + dt.timedelta(days=1), dt.date(today.year + n, today.month, min(today.day, 28))


def period(unit: str, offset: int, today: dt.date) -> Window:
    """This (0), last (-1) or next (1) calendar week, month or year (a day: that day)."""
    if unit == "day":
        day = today + dt.timedelta(days=offset)
        return day, day
    if unit == "week":
        return week_span(today + dt.timedelta(weeks=offset))
    if unit == "month":
        return month_span(*shift_month(today, offset))
    return year_span(today.year + offset)
