"""Chinese time expressions: each rule a pattern and the handler that turns its match into
a window of days (``memd.search.timepatterns`` tries them after the English ones)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from memd.search import days
from memd.search.days import Window

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], Window | None]]


_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
_CN_NUM = r"(?:\d{1,4}|[零〇一二两三四五六七八九十]{1,4})"
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def _cn_number(text: str) -> int:
    """Digits, or Chinese numerals up to 99 (三, 十二, 二十一) and years (二〇二五)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)
    value = 0
    for ch in text:
        value = value * 10 + _CN_DIGITS[ch]
    return value


_CN_UNIT = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
            "年": "year"}  # fmt: skip


def _cn_unit(word: str) -> str:
    return _CN_UNIT[word.removeprefix("个")]


def _cn_date(m: re.Match[str], today: dt.date) -> Window | None:
    year = _cn_number(m["y"]) if m["y"] else None
    month = _cn_number(m["m"])
    if not 1 <= month <= 12:
        return None
    if m["d"]:
        return days.latest_day(month, _cn_number(m["d"]), today, year)
    return days.latest_month(month, today, year)


def _cn_year(m: re.Match[str], today: dt.date) -> Window | None:
    return days.year_span(_cn_number(m["y"]))


_CN_RELATIVE = {"今": 0, "昨": 1, "前": 2, "大前": 3}


def _cn_relative(m: re.Match[str], today: dt.date) -> Window | None:
    day = today - dt.timedelta(days=_CN_RELATIVE[m["rel"]])
    return day, day


def _cn_ago(m: re.Match[str], today: dt.date) -> Window | None:
    return days.ago(_cn_unit(m["unit"]), _cn_number(m["n"]), today)


def _cn_past(m: re.Match[str], today: dt.date) -> Window | None:
    return days.past(_cn_unit(m["unit"]), _cn_number(m["n"]) if m["n"] else 1, today)


_CN_OFFSET = {"本": 0, "这": 0, "这个": 0, "今": 0, "上": -1, "上个": -1, "去": -1, "前": -2}


def _cn_calendar(m: re.Match[str], today: dt.date) -> Window | None:
    return days.period(_cn_unit(m["unit"]), _CN_OFFSET[m["which"]], today)


def _cn_weekday(m: re.Match[str], today: dt.date) -> Window | None:
    weekday = _CN_WEEKDAYS[m["wd"]]
    which = m["which"]
    if which is None:
        day = days.latest_weekday(weekday, today)
    else:
        offset = _CN_OFFSET[which.removesuffix("个")]
        day = days.week_span(today + dt.timedelta(weeks=offset))[0] + dt.timedelta(days=weekday)
    return day, day


def _cn_weekend(m: re.Match[str], today: dt.date) -> Window | None:
    if m["which"]:
        monday = days.week_span(
            today + dt.timedelta(weeks=_CN_OFFSET[m["which"].removesuffix("个")])
        )[0]
        saturday = monday + dt.timedelta(days=5)
    else:
        saturday = days.latest_weekday(5, today)
    return saturday, saturday + dt.timedelta(days=1)


RULES_ZH: list[_Rule] = [
    (re.compile(rf"(?:(?P<y>{_CN_NUM})年)?(?P<m>{_CN_NUM})月(?:(?P<d>{_CN_NUM})[日号]|(?P<fen>份))?"),
     _cn_date),
    (re.compile(r"(?P<y>(?:19|20)\d\d|[一二][〇零一二三四五六七八九]{3})年(?!前|[〇零一二三四五六七八九十\d]+月)"),
     _cn_year),
    (re.compile(r"(?P<rel>大前|前|昨|今)(?:天|日)(?:早上|上午|中午|下午|晚上)?|(?P<rel2>昨|今)(?:早|晚)"),
     lambda m, t: _cn_relative(_Alias(m, rel=m["rel"] or m["rel2"]), t)),
    (re.compile(rf"(?P<n>{_CN_NUM}|几)(?P<unit>个?(?:月|星期|礼拜)|天|日|周|年)(?:之|以)?前"),
     lambda m, t: _cn_ago(_Alias(m, n="三" if m["n"] == "几" else m["n"]), t)),
    (re.compile(rf"(?:最近|过去|近|这(?=几))(?P<n>{_CN_NUM}|几)?(?P<unit>个?(?:月|星期|礼拜)|天|日|周|年)"
                r"(?:来|以来|里|内)?"),
     lambda m, t: _cn_past(_Alias(m, n="三" if m["n"] == "几" else m["n"]), t)),
    (re.compile(r"(?P<which>上个|这个|上|本|这)(?P<wk>周|星期|礼拜)(?P<wd>[一二三四五六日天])"),
     _cn_weekday),
    (re.compile(r"(?:(?P<which>上个|这个|上|本|这))?(?:周末)"), _cn_weekend),
    (re.compile(r"(?P<which>上个|这个|上|本|这)(?P<unit>周|星期|礼拜|月)"), _cn_calendar),
    (re.compile(r"(?P<which>今|去|前)(?P<unit>年)"), _cn_calendar),
    (re.compile(r"(?P<which>)(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"),
     lambda m, t: _cn_weekday(_Alias(m, which=None), t)),
]  # fmt: skip


class _Alias:
    """A match with some groups replaced (Chinese rules share handlers)."""

    def __init__(self, match: re.Match[str], **groups: str | None) -> None:
        self._match = match
        self._groups = groups

    def __getitem__(self, name: str) -> str | None:
        if name in self._groups:
            return self._groups[name]
        return self._match[name]

    def group(self, n: int = 0) -> str:
        return self._match.group(n)
