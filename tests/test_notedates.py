"""A note's own dates (``memd.search.notedates``) and the time words of questions about
what is to come (``memd.search.timewords``), read against a known day."""

from __future__ import annotations

import datetime as dt

import pytest

from memd.search.notedates import days_named, names_day_in
from memd.search.timewords import read_time

WRITTEN = dt.date(2026, 11, 25)  # a Wednesday
NOW = dt.datetime(2026, 11, 27, 9, 0)  # the Friday after


def day(text: str) -> list[dt.date]:
    return [lo for lo, _ in days_named(text, WRITTEN)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Demo for ACME on 3 Dec.", dt.date(2026, 12, 3)),  # the coming one, not last year's
        ("Invoice due 11 December.", dt.date(2026, 12, 11)),
        ("The Northwind demo is next Thursday at 15:00.", dt.date(2026, 12, 3)),
        ("Call with Priya on Friday about the renewal.", dt.date(2026, 11, 27)),
        ("We shipped the fix on Monday.", dt.date(2026, 11, 23)),  # past tense: the last one
        ("Review scheduled for Monday.", dt.date(2026, 11, 30)),  # arranged: the coming one
        ("Launch on 2026-12-15, no later.", dt.date(2026, 12, 15)),
        ("Team lunch tomorrow at noon.", dt.date(2026, 11, 26)),
        ("Got the report on 20 November.", dt.date(2026, 11, 20)),  # just before: kept
    ],
)
def test_a_notes_date_is_read_as_of_the_day_it_was_written(text, expected):
    assert day(text)[0] == expected


def test_habits_and_lines_without_a_time_name_no_day():
    assert days_named("Standup every Thursday at 09:30.", WRITTEN) == []
    assert days_named("Fixed the CSV export encoding bug.", WRITTEN) == []
    # What a question means by "soon" or "next" names no day a note can be held to.
    assert days_named("Ship 2.0 soon; next steps in 3 tickets.", WRITTEN) == []
    assert days_named("Coming up: 2 talks, the rest of the month is quiet.", WRITTEN) == []


def test_a_mention_much_wider_than_the_window_does_not_name_a_day_of_it():
    text = "The December budget sheet was updated."
    start, end = dt.date(2026, 12, 7), dt.date(2026, 12, 13)
    assert names_day_in(text, WRITTEN, start, end)
    assert not names_day_in(text, WRITTEN, start, end, widest=6)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("anything due before Christmas?", "2026-11-28", "2026-12-24"),
        ("what's on for Thursday?", "2026-12-03", "2026-12-03"),
        ("is there something planned for the week after next?", "2026-12-07", "2026-12-13"),
        ("what's happening in two weeks?", "2026-12-07", "2026-12-13"),
        ("what is due by Friday?", "2026-11-28", "2026-12-04"),
        ("anything happening on 3 Dec?", "2026-12-03", "2026-12-03"),
        ("what did we decide on Thursday?", "2026-11-26", "2026-11-26"),  # the past one
        ("what happened at Christmas?", "2025-12-25", "2025-12-25"),
    ],
)
def test_questions_about_what_is_to_come_read_ahead(question, start, end):
    reading = read_time(question, NOW)
    assert reading is not None, question
    assert (reading.start.isoformat(), reading.end.isoformat()) == (start, end)


def test_a_day_first_dotted_date_is_a_day_and_a_version_is_none():
    """ "Thu 12.3.", "am 3. Dezember", "bis 31.12.2026" name days (a yearless one the
    nearest to the note's day); "1.8.3" and "2.5 h" name none."""
    written = dt.date(2026, 11, 23)
    assert days_named("Hausmeister kommt am 3. Dezember.", written) == [
        (dt.date(2026, 12, 3), dt.date(2026, 12, 3))
    ]
    assert days_named("Thu 12.3. pick up passport", dt.date(2026, 3, 8)) == [
        (dt.date(2026, 3, 12), dt.date(2026, 3, 12))
    ]
    assert days_named("Vertrag bis 31.12.2026", written) == [
        (dt.date(2026, 12, 31), dt.date(2026, 12, 31))
    ]
    assert days_named("billing-worker 1.8.3, 2.5 h", written) == []
