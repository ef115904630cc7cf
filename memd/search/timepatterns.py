"""The time expressions a query may hold, English and Chinese: each rule a pattern and
the handler that turns its match into a window of days (None: not a time after all).
The Chinese rules are in ``memd.search.timepatterns_zh``."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from memd.search import days
from memd.search.days import Window
from memd.search.timepatterns_zh import RULES_ZH

# -- English -------------------------------------------------------------------------------

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip

_MONTH = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUM = r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_UNIT = r"(?P<unit>day|week|month|year)s?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_WEEKDAY = "(?P<weekday>" + "|".join(WEEKDAYS) + ")(?P<plural>s)?"
# Words that only point at the time expression after them; removed with it.
_LEAD = r"(?:(?:in|on|during|at|over|for|of|within|throughout|from)\s+)?(?:the\s+)?"

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], Window | None]]


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _year_of(m: re.Match[str]) -> int | None:
    return int(m["year"]) if m["year"] else None


def _iso_day(m: re.Match[str], today: dt.date) -> Window | None:
    return days.latest_day(int(m["m"]), int(m["d"]), today, int(m["y"]))


def _iso_month(m: re.Match[str], today: dt.date) -> Window | None:
    month = int(m["m"])
    return days.month_span(int(m["y"]), month) if 1 <= month <= 12 else None


def _day_month(m: re.Match[str], today: dt.date) -> Window | None:
    month, day, year = MONTHS[m["month"].lower()], int(m["day"]), _year_of(m)
    if year is None and leans_ahead(m.string):  # "anything on 3 Dec?": the coming one
        try:
            if dt.date(today.year, month, day) > today:
                year = today.year
        except ValueError:
            return None
    return days.latest_day(month, day, today, year)


# A question about what is to come: a month or weekday named without a year is then the
# coming one ("who is taking over the API in December", asked in November). A question in
# the past tense keeps the latest one that has begun, as any question without these words.
_FUTURE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|upcoming|coming|planned\s+for|scheduled|due|"
    r"(?:is|are|am)\s+\w+ing|takes?\s+over|starts?|begins?|moves?\s+to)\b|'ll\b",
    re.I,
)
_PAST = re.compile(r"\b(?:did|was|were|had|ago|last|previous|went|happened)\b", re.I)


# Participles that say what is arranged ahead ("planned for", "is scheduled"), not what
# was done: the one kind of "-ed" word that is no past tense in a note or a question.
_ARRANGED = re.compile(
    r"\b(?:planned|scheduled|booked|expected|supposed|needed|required|due|slated|pencilled|"
    r"penciled|set)\b",
    re.I,
)
_PAST_VERB = re.compile(r"\b(?!(?:need|feed|seed|speed|breed|bleed|red|bed|shed)\b)[a-z]{2,}ed\b")
_AUX_AHEAD = re.compile(r"\b(?:is|are|am|be|been|will|'ll|to|gets?)\s+\w+ed\b", re.I)


def past_tense(text: str) -> bool:
    """Whether ``text`` is told in the past tense ("we shipped it on Tuesday", "did we"),
    rather than about what is arranged or to come ("demo planned for Thursday")."""
    if _PAST.search(text):
        return True
    rest = _AUX_AHEAD.sub(" ", _ARRANGED.sub(" ", text))
    return bool(_PAST_VERB.search(rest.lower()))


def asks_ahead(query: str) -> bool:
    """Whether ``query`` asks about what is to come (and not in the past tense)."""
    return bool(_FUTURE.search(query)) and not _PAST.search(query)


# Present-tense questions about a named day ask about the coming one ("what's on for
# Thursday", "is anything due Friday"); the past tense asks about the last one.
_PRESENT = re.compile(r"\b(?:is|are|am|do|does|have|has|any|anything)\b|\w['’]s\b", re.I)


def leans_ahead(query: str) -> bool:
    """Whether ``query`` asks about what is to come or what stands now, not what was."""
    return not past_tense(query) and (asks_ahead(query) or bool(_PRESENT.search(query)))


def _month_name(m: re.Match[str], today: dt.date) -> Window | None:
    word = m["month"]
    bare = not (m["year"] or m["part"] or m.group(0)[: m.start("month") - m.start()].strip())
    # "may" and "march" are also verbs and abbreviations also words: alone, only a full
    # name counts, and of those two only "March" with its capital.
    if bare and (word.lower() not in _FULL_MONTHS or word in ("may", "May", "march")):
        return None
    month, year = MONTHS[word.lower()], _year_of(m)
    if year is None and asks_ahead(m.string):  # still ahead: this year's, else next year's
        year = today.year if month >= today.month else today.year + 1
    window = days.latest_month(month, today, year)
    return days.part_of_month(window, m["part"] and m["part"].lower())


_FULL_MONTHS = frozenset(
    ("january february march april may june july august september october november december")
    .split()
)  # fmt: skip


def _year_only(m: re.Match[str], today: dt.date) -> Window | None:
    return days.year_span(int(m["year"]))


def _quarter(m: re.Match[str], today: dt.date) -> Window | None:
    q = int(m["q"])
    year = _year_of(m)
    if year is None:
        year = today.year if (q - 1) * 3 + 1 <= today.month else today.year - 1
    return days.month_span(year, q * 3 - 2)[0], days.month_span(year, q * 3)[1]


def _relative_day(m: re.Match[str], today: dt.date) -> Window | None:
    word = m["rel"].lower()
    back = {"today": 0, "tonight": 0, "this": 0, "earlier": 0, "yesterday": 1}.get(word.split()[0])
    if "day before yesterday" in word:
        back = 2
    day = today - dt.timedelta(days=back or 0)
    return day, day


def _ago_rule(m: re.Match[str], today: dt.date) -> Window | None:
    return days.ago(m["unit"].lower(), _number(m["n"]), today)


def _past_rule(m: re.Match[str], today: dt.date) -> Window | None:
    unit = m["unit"].lower()
    if m["n"] is None and m["which"].lower() == "last" and not m["the"]:
        return days.period(unit, -1, today)  # "last week": the calendar week before this one
    return days.past(unit, _number(m["n"]) if m["n"] else 1, today)


def _this_rule(m: re.Match[str], today: dt.date) -> Window | None:
    return days.period(m["unit"].lower(), 0, today)


def _next_rule(m: re.Match[str], today: dt.date) -> Window | None:
    unit = m["unit"].lower()
    if m["n"] is None and m.group(0).lower().endswith("s"):  # "the coming days": a few
        return days.ahead(unit.rstrip("s"), _NUMBERS["few"], today)
    if m["n"] is None:  # "next week": the calendar week after this one
        return days.period(unit, 1, today)
    return days.ahead(unit, _number(m["n"]), today)


# A time still to come that names no day ("coming up", "soon", "the next dentist
# appointment", "when do we meet next"): the days from tomorrow to about a month ahead. It
# gives way to any time a question names besides ("what's coming up in January").
OPEN_AHEAD_DAYS = 31


def _open_ahead(m: re.Match[str], today: dt.date) -> Window | None:
    if m.groupdict().get("unit"):  # "the rest of the month", "later this week": to its end
        return today + dt.timedelta(days=1), days.period(m["unit"].lower(), 0, today)[1]
    if m.group(0) == "next" and past_tense(m.string):  # "what did we do next": then
        return None
    return today + dt.timedelta(days=1), today + dt.timedelta(days=OPEN_AHEAD_DAYS)


def _tomorrow(m: re.Match[str], today: dt.date) -> Window | None:
    day = today + dt.timedelta(days=2 if "after" in m.group(0).lower() else 1)
    return day, day


def _weekday_rule(m: re.Match[str], today: dt.date) -> Window | None:
    if m["plural"] or _EVERY.search(m.string[: m.start()]):
        return None  # "on Fridays", "every second Tuesday": a rule, not a day
    which = (m["which"] or "").lower()
    if not (which or m["lead"]):
        # A bare weekday is a time only at the end of the question or after "since" and
        # its kin: "the Friday team lunch" is a lunch.
        ends = not m.string[m.end() :].strip(" ?.!,;:")
        if not (ends or _OPEN_BEFORE.search(m.string[: m.start()])):
            return None
    weekday = WEEKDAYS.index(m["weekday"].lower())
    if which == "this":
        day = days.week_span(today)[0] + dt.timedelta(days=weekday)
    elif which == "next":  # the one in the calendar week after this one
        day = days.week_span(today)[0] + dt.timedelta(days=7 + weekday)
    elif not which and leans_ahead(m.string):  # "who is on call on Friday": the coming one
        day = today + dt.timedelta(days=(weekday - today.weekday()) % 7 or 7)
    else:
        day = days.latest_weekday(weekday, today, before_today=which in ("last", "past"))
    return day, day


def _weekend_rule(m: re.Match[str], today: dt.date) -> Window | None:
    which = (m["which"] or "").lower()
    # "weekend" names a time only when words point it at now: "this/last/next weekend",
    # "over the weekend". "The holiday shopping weekend" or "the weekend trip" do not.
    if not which and not (m["lead"] and m["the"]):
        return None
    if not which and re.match(r"\s+(?:of|trip|getaway|plans?|shift|sale)\b", m.string[m.end() :]):
        return None
    saturday = days.latest_weekday(5, today)
    coming = today + dt.timedelta(days=(5 - today.weekday()) % 7 or 7)
    if which == "next":
        saturday = coming
    elif which == "this" and today.weekday() < 5 and not _PAST.search(m.string):
        saturday = coming  # "who is on call this weekend", asked on a Wednesday
    elif today.weekday() == 5 and which == "last":
        saturday -= dt.timedelta(days=7)
    return saturday, saturday + dt.timedelta(days=1)


# Holidays on a fixed day of the year: the coming one when the question leans ahead, else
# the latest one.
_HOLIDAYS = {
    "christmas eve": (12, 24), "christmas day": (12, 25), "christmas": (12, 25),
    "xmas": (12, 25), "boxing day": (12, 26), "new year's eve": (12, 31),
    "new years eve": (12, 31), "new year's day": (1, 1), "new years day": (1, 1),
    "new year's": (1, 1), "new year": (1, 1), "halloween": (10, 31),
    "valentine's day": (2, 14), "valentines day": (2, 14),
}  # fmt: skip
_HOLIDAY = (
    "(?P<holiday>"
    + "|".join(re.escape(h).replace("'", "['’]?") for h in sorted(_HOLIDAYS, key=len, reverse=True))
    + ")"
)


def _holiday(m: re.Match[str], today: dt.date) -> Window | None:
    key = re.sub(r"['’]", "'", m["holiday"].lower())
    month, day = _HOLIDAYS.get(key) or _HOLIDAYS[key.replace("'", "")]
    date = dt.date(today.year, month, day)
    if date < today and leans_ahead(m.string):
        date = dt.date(today.year + 1, month, day)
    elif date > today and not leans_ahead(m.string):
        date = dt.date(today.year - 1, month, day)
    return date, date


def _after_next(m: re.Match[str], today: dt.date) -> Window | None:
    return days.period(m["unit"].lower(), 2, today)


def _in_rule(m: re.Match[str], today: dt.date) -> Window | None:
    """ "in two weeks": the day, week or month that far ahead."""
    unit, n = m["unit"].lower(), _number(m["n"])
    if unit == "day":
        day = today + dt.timedelta(days=n)
        return day, day
    if unit == "week":
        return days.week_span(today + dt.timedelta(weeks=n))
    if unit == "month":
        return days.month_span(*days.shift_month(today, n))
    return days.year_span(today.year + n)


_RULES_EN: list[_Rule] = [
    (re.compile(rf"\b{_LEAD}{_HOLIDAY}\b", re.I), _holiday),
    (re.compile(r"\b(?:(?:in|during|for)\s+)?(?:the\s+)?(?P<unit>week|month|year)\s+after\s+next\b",
                re.I), _after_next),
    (re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}(?:['’]\s*time)?\b(?!\s+ago)", re.I), _in_rule),
    (re.compile(rf"\b{_LEAD}(?P<y>(?:19|20)\d\d)[-/.](?P<m>\d{{1,2}})[-/.](?P<d>\d{{1,2}})\b"),
     _iso_day),
    (re.compile(rf"\b{_LEAD}(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)\b(?![-/.]\d)"), _iso_month),
    (re.compile(rf"\b{_LEAD}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b",
                re.I), _day_month),
    (re.compile(rf"\b{_LEAD}{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?!\d)(?:,?\s+{_YEAR})?\b",
                re.I), _day_month),
    (re.compile(rf"\b{_LEAD}(?:(?P<part>early|mid|late)[-\s]+)?{_MONTH}(?:\s+{_YEAR})?\b", re.I),
     _month_name),
    (re.compile(rf"\b(?:in|during|of|for|throughout)\s+(?:the\s+year\s+)?{_YEAR}\b", re.I),
     _year_only),
    (re.compile(rf"\b{_LEAD}q(?P<q>[1-4])(?:\s+{_YEAR})?\b", re.I), _quarter),
    (re.compile(r"\b(?:(?:on|from)\s+)?(?P<rel>the\s+day\s+before\s+yesterday|yesterday"
                r"(?:\s+(?:morning|afternoon|evening|night))?|today|tonight|earlier\s+today|"
                r"this\s+(?:morning|afternoon|evening))\b", re.I), _relative_day),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I), _ago_rule),
    (re.compile(rf"\b(?:(?:in|over|during|for|within)\s+)?(?P<the>the\s+)?(?P<which>last|past|previous)"
                rf"\s+(?:{_NUM}\s+)?{_UNIT}\b", re.I), _past_rule),
    (re.compile(rf"\b{_LEAD}(?:this|current)\s+{_UNIT}\b", re.I), _this_rule),
    (re.compile(rf"\b(?:(?:in|over|during|for|within)\s+)?(?:the\s+)?(?:next|coming|upcoming)"
                rf"\s+(?:{_NUM}\s+)?{_UNIT}\b", re.I), _next_rule),
    (re.compile(r"\b(?:coming\s+up|upcoming|soon|in\s+the\s+near\s+future|(?:for\s+|in\s+)?"
                r"(?:the\s+rest\s+of|later)\s+(?:the|this)\s+(?P<unit>week|month|year))\b", re.I),
     _open_ahead),
    # "next" before a thing or after a verb, written small ("Next Fest" is a name), not
    # "next to": a time unit or day after it is read by the longer rules above.
    (re.compile(r"\bnext\b(?!\s+(?:to|door)\b)(?![-\w])"), _open_ahead),
    (re.compile(r"\b(?:(?:on|for|by)\s+)?(?:the\s+day\s+after\s+)?tomorrow"
                r"(?:\s+(?:morning|afternoon|evening|night))?\b", re.I), _tomorrow),
    (re.compile(rf"\b(?:(?P<lead>on|in)\s+)?(?:(?P<which>last|past|this|next)\s+)?{_WEEKDAY}\b",
                re.I), _weekday_rule),
    (re.compile(r"\b(?:(?P<lead>on|over|at|during)\s+)?(?P<the>the\s+)?"
                r"(?:(?P<which>last|this|past|next)\s+)?weekend\b", re.I), _weekend_rule),
]  # fmt: skip

_EVERY = re.compile(r"\b(every|each|other|first|second|third|fourth|fifth)\s+$", re.I)
_OPEN_BEFORE = re.compile(r"\b(since|after|before|until|till|from|by)\s+$", re.I)

# Tried in this order: of two rules that match the same words, the first one's window is kept.
RULES: list[_Rule] = [*_RULES_EN, *RULES_ZH]
# Handlers that place a date without its year at the latest one begun (a note's words are
# placed nearest their day instead: ``memd.search.notedates``), and the weekday rule, which
# a note's words are read by differently.
YEARLESS = frozenset({_day_month, _month_name})
WEEKDAY_RULES = frozenset({_weekday_rule})
OPEN_RULES = frozenset({_open_ahead})  # give way to any other time the question names
