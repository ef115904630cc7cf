import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.search.timewords import names_a_time, read_time

NOW = dt.datetime(2026, 3, 18, 9, 30)  # a Wednesday
D = dt.date


@pytest.mark.parametrize(
    ("query", "start", "end", "matched", "rest"),
    [
        ("which hotel did we book last week", D(2026, 3, 9), D(2026, 3, 15), "last week",
         "which hotel did we book"),
        ("which hotel did we book in March", D(2026, 3, 1), D(2026, 3, 31), "March",
         "which hotel did we book"),
        ("what did we order in May", D(2025, 5, 1), D(2025, 5, 31), "May", "what did we order"),
        ("what happened on 20 January", D(2026, 1, 20), D(2026, 1, 20), "20 January",
         "what happened"),
        ("deploy notes from December 5th", D(2025, 12, 5), D(2025, 12, 5), "December 5th",
         "deploy notes"),
        ("three days ago we talked about X", D(2026, 3, 15), D(2026, 3, 15), "three days ago",
         "we talked about X"),
        ("changes since Monday", D(2026, 3, 16), D(2026, 3, 18), "since Monday", "changes"),
        ("what did we discuss Monday?", D(2026, 3, 16), D(2026, 3, 16), "Monday",
         "what did we discuss?"),
        ("the retro on Friday", D(2026, 3, 13), D(2026, 3, 13), "Friday", "the retro"),
        ("notes of 2026-01-20 about deploy", D(2026, 1, 20), D(2026, 1, 20), "2026-01-20",
         "notes about deploy"),
        ("what did we do yesterday?", D(2026, 3, 17), D(2026, 3, 17), "yesterday",
         "what did we do?"),
        ("bugs in the last 3 days", D(2026, 3, 15), D(2026, 3, 18), "last 3 days", "bugs"),
        ("bugs over the past two weeks", D(2026, 3, 4), D(2026, 3, 18), "past two weeks", "bugs"),
        ("last month budget", D(2026, 2, 1), D(2026, 2, 28), "last month", "budget"),
        ("Q4 2025 revenue", D(2025, 10, 1), D(2025, 12, 31), "Q4 2025", "revenue"),
        ("offsite in early February", D(2026, 2, 1), D(2026, 2, 10), "early February", "offsite"),
        ("between 3 March and 10 March", D(2026, 3, 3), D(2026, 3, 10),
         "between 3 March and 10 March", ""),
        ("decisions before March", None, D(2026, 2, 28), "before March", "decisions"),
        ("a couple of weeks ago", D(2026, 3, 2), D(2026, 3, 8), "a couple of weeks ago", ""),
        ("the day before yesterday", D(2026, 3, 16), D(2026, 3, 16), "the day before yesterday",
         ""),
        ("in 2025", D(2025, 1, 1), D(2025, 12, 31), "2025", ""),
        ("2 months ago", D(2026, 1, 1), D(2026, 1, 31), "2 months ago", ""),
        ("昨天我们讨论了什么", D(2026, 3, 17), D(2026, 3, 17), "昨天", "我们讨论了什么"),
        ("上周的会议", D(2026, 3, 9), D(2026, 3, 15), "上周", "会议"),
        ("三月我们订了哪家酒店", D(2026, 3, 1), D(2026, 3, 31), "三月", "我们订了哪家酒店"),
        ("2025年3月的账单", D(2025, 3, 1), D(2025, 3, 31), "2025年3月", "账单"),
        ("3月20日的会议", D(2025, 3, 20), D(2025, 3, 20), "3月20日", "会议"),
        ("三天前", D(2026, 3, 15), D(2026, 3, 15), "三天前", ""),
        ("最近两周的问题", D(2026, 3, 4), D(2026, 3, 18), "最近两周", "问题"),
        ("上个月", D(2026, 2, 1), D(2026, 2, 28), "上个月", ""),
        ("去年", D(2025, 1, 1), D(2025, 12, 31), "去年", ""),
        ("上周三", D(2026, 3, 11), D(2026, 3, 11), "上周三", ""),
        ("自周一以来的变化", D(2026, 3, 16), D(2026, 3, 18), "自周一以来", "变化"),
        ("十二月", D(2025, 12, 1), D(2025, 12, 31), "十二月", ""),
    ],
)  # fmt: skip
def test_reads_time_words(query, start, end, matched, rest):
    """Each expression names its days, as a reader of the question on NOW would."""
    r = read_time(query, NOW)
    assert r is not None
    assert (r.start, r.end, r.matched, r.query) == (start, end, matched, rest)


@pytest.mark.parametrize(
    "query",
    ["we may ship the fix", "march forward", "which database do we use", "version 3 of the API",
     "the deploy target", "数据库用的是什么", "top 10 tasks",
     "where does the Friday team lunch come from", "we deploy on Fridays",
     "the release train leaves every second Tuesday"],
)  # fmt: skip
def test_no_time_words_no_window(query):
    """Words that only look like dates (the verb 'may', a bare number) name no window."""
    assert read_time(query, NOW) is None


def test_a_month_not_yet_begun_this_year_is_last_years():
    assert read_time("in June", NOW).start == D(2025, 6, 1)
    assert read_time("in March", dt.datetime(2026, 2, 27)).start == D(2025, 3, 1)


def test_time_words_join_into_one_span():
    r = read_time("on Monday and Tuesday", NOW)
    assert (r.start, r.end) == (D(2026, 3, 16), D(2026, 3, 17))


def test_as_dict_is_the_answer_shape():
    assert read_time("last week", NOW).as_dict() == {
        "from": "2026-03-09",
        "to": "2026-03-15",
        "matched": "last week",
        "ahead": None,
    }
    assert read_time("before 2026-01-01", NOW).as_dict()["from"] is None


LATE_NOVEMBER = dt.datetime(2026, 11, 25, 10, 0)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "start", "end", "rest"),
    [
        ("who takes over the API next month", D(2026, 12, 1), D(2026, 12, 31),
         "who takes over the API"),
        ("who is taking over the API in December", D(2026, 12, 1), D(2026, 12, 31),
         "who is taking over the API"),
        ("what is due tomorrow", D(2026, 11, 26), D(2026, 11, 26), "what is due"),
        ("what is due the day after tomorrow", D(2026, 11, 27), D(2026, 11, 27), "what is due"),
        ("plans for next week", D(2026, 11, 30), D(2026, 12, 6), "plans"),
        ("what is scheduled in the next 3 days", D(2026, 11, 26), D(2026, 11, 28),
         "what is scheduled"),
        ("the demo next Tuesday", D(2026, 12, 1), D(2026, 12, 1), "the demo"),
        ("what happens this Friday", D(2026, 11, 27), D(2026, 11, 27), "what happens"),
        ("who will be on call on Friday", D(2026, 11, 27), D(2026, 11, 27), "who will be on call"),
        ("who is on call this weekend", D(2026, 11, 28), D(2026, 11, 29), "who is on call"),
        # Asked in the past tense, a month or weekday is the latest one that has begun.
        ("what did we ship in December", D(2025, 12, 1), D(2025, 12, 31), "what did we ship"),
        ("what did we do on Friday", D(2026, 11, 20), D(2026, 11, 20), "what did we do"),
        ("what did we ship this weekend", D(2026, 11, 21), D(2026, 11, 22), "what did we ship"),
    ],
)  # fmt: skip
def test_time_ahead_is_the_coming_window(query, start, end, rest):
    r = read_time(query, LATE_NOVEMBER)
    assert (r.start, r.end, r.query) == (start, end, rest)


@pytest.mark.parametrize(
    ("query", "start", "end", "rest"),
    [
        ("when is Ada's next dentist appointment?", D(2026, 11, 26), D(2026, 12, 26),
         "when is Ada's dentist appointment?"),
        ("when do we talk to the publisher next?", D(2026, 11, 26), D(2026, 12, 26),
         "when do we talk to the publisher?"),
        ("what's coming up?", D(2026, 11, 26), D(2026, 12, 26), "what's?"),
        ("anything due soon", D(2026, 11, 26), D(2026, 12, 26), "anything due"),
        ("any upcoming deadlines", D(2026, 11, 26), D(2026, 12, 26), "any deadlines"),
        ("what is left for the rest of the month", D(2026, 11, 26), D(2026, 11, 30),
         "what is left"),
        ("what is on later this week", D(2026, 11, 26), D(2026, 11, 29), "what is on"),
        ("anything planned in the coming days", D(2026, 11, 26), D(2026, 11, 28),
         "anything planned"),
        # Another time the question names is the window; an open one only gives way.
        ("what's coming up in January", D(2027, 1, 1), D(2027, 1, 31), "what's coming up"),
        ("anything upcoming next week", D(2026, 11, 30), D(2026, 12, 6), "anything upcoming"),
    ],
)  # fmt: skip
def test_what_is_to_come_without_a_day_reads_the_weeks_ahead(query, start, end, rest):
    """'next', 'coming up', 'soon', 'the rest of the month' name no day: from tomorrow to
    about a month ahead (or the unit's end)."""
    r = read_time(query, LATE_NOVEMBER)
    assert (r.start, r.end, r.query) == (start, end, rest)


@pytest.mark.parametrize(
    "query", ["when is Steam Next Fest", "who sits next to Ana", "what did we try next"]
)
def test_next_as_a_name_or_a_place_is_no_time(query):
    assert read_time(query, LATE_NOVEMBER) is None


def test_weekend_only_when_the_words_point_at_now():
    assert read_time("is it ok to ship during the holiday shopping weekend", NOW) is None
    assert read_time("notes on the weekend trip to Porto", NOW) is None
    for said in ("what did we do over the weekend", "last weekend", "this weekend"):
        assert read_time(said, NOW).matched.endswith("weekend"), said
    nxt = read_time("plans for next weekend", NOW)  # Wednesday 18 March
    assert (nxt.start, nxt.end) == (D(2026, 3, 21), D(2026, 3, 22))


def test_a_possessive_goes_with_the_time():
    assert read_time("why did checkout fail during yesterday's release", NOW).query == (
        "why did checkout fail during release"
    )
    assert read_time("last week’s deploy", NOW).query == "deploy"


def test_named_times_are_told_from_times_pointed_at_from_now():
    for named in ("June", "3 May 2023", "in 2025", "on Monday", "3月", "周三"):
        assert names_a_time(named), named
    for pointed in ("this week", "yesterday", "last weekend", "4 years ago", "上周", "去年"):
        assert not names_a_time(pointed), pointed


@settings(deadline=None)  # a loaded machine slows one example, which is no failure
@given(st.text(max_size=60))
def test_any_text_reads_without_error(text):
    """Arbitrary text never raises, and a window never ends before it starts."""
    r = read_time(text, NOW)
    if r is not None and r.start and r.end:
        assert r.start <= r.end
