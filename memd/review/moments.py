"""Dates and clock times as notes write them, each in one form: "10 Feb", "February 10th",
"2026-02-10" and "10.2.2026" are one day of the year; "9:30", "9.30" and "9h30" one time."""

from __future__ import annotations

import re

from memd.review.words import MONTHS


def calendar_day(raw: str) -> str:
    """ "10 Feb", "February 10th", "2026-02-10", "10.2.2026" -> "02-10" (the year aside)."""
    low = raw.lower()
    if m := re.match(r"\d{4}-(\d{2})-(\d{2})", low):
        return f"{m.group(1)}-{m.group(2)}"
    if m := re.match(r"(\d{1,2})\.(\d{1,2})\.", low):
        return f"{int(m.group(2)):02d}-{int(m.group(1)):02d}"
    month = next((n for name, n in MONTHS.items() if re.search(rf"\b{name}\b", low)), 0)
    day = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b(?!\d)", low)
    return f"{month:02d}-{int(day.group(1)) if day else 0:02d}"


def clock(norm: str) -> str:
    """ "9:30", "9.30", "9h30", "9:30am" -> "09:30"; "5pm" -> "17:00"."""
    m = re.match(r"(\d{1,2})(?:[:.h](\d{2}))?([ap])?", norm)
    if not m:
        return norm
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "p" and hour < 12:
        hour += 12
    return f"{hour:02d}:{minute:02d}"
