"""What a statement says, split into what it is about and the values it gives.

A later statement updates an earlier one when both are about one subject and the later
gives another value for it. Values are found by their shape, not by the words around
them: a number with its unit ("45 minutes", "99.9 %"), a clock time, a day of the week, a
date, a version, a name (a capitalised word inside an English sentence, a word holding
digits or joined by hyphens), and, after a ``Label:``, whatever the label is set to. The
rest of the content words are the subject. Nothing here knows any one phrasing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memd.review.moments import calendar_day, clock
from memd.review.statements import stem
from memd.review.words import (
    CHANGE,
    COPULA,
    DAYS,
    DAYS_DE,
    DECIDED,
    GERMAN,
    HANDING,
    IRREGULAR_PAST,
    LEAVING,
    MONTHS,
    NEGATING,
    NOT,
    RANGE,
)
from memd.store.fts import STOPWORDS

_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_TOKEN = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2}|\d{1,2}\.\d{1,2}\.\d{2,4}(?!\d)"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?(?:{_MONTH_NAMES})\b\.?(?:\s+\d{{4}})?"
    rf"|(?:{_MONTH_NAMES})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?)"
    r"|(?P<time>\d{1,2}[:h]\d{2}\s?(?:[ap]\.?m\.?)?|\d{1,2}\s?[ap]\.?m\.?|\d{1,2}\s?uhr)(?!\w)"
    r"|(?P<version>v\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:[\w.-]*))"
    r"|(?P<num>[$€£]?\d+(?:[.,]\d+)?\s?(?:%|k\b|m\b|x\b)?[$€£]?)"
    r"|(?P<word>[^\W\d_](?:[\w'’-]*[^\W_])?)",
    re.IGNORECASE,
)
# The words that may negate or say a change, and "over" ("handed over"): looked at closely.
_MARKED = NOT | NEGATING | CHANGE | {"over"}
LETTERS = re.compile(r"[^\W\d_]+")
_SPACES = re.compile(r"\s+")
_BREAK = re.compile(r"[,;:(—–]|\s-\s")  # where a clause ends
_LABEL = re.compile(r"^\s*(?:\*\*)?(?P<label>[^:*]{2,48}?)(?:\*\*)?\s*:\s*(?:\*\*)?\s+(?=\S)")
# Where a statement's reason or aside begins.
_REASON = re.compile(
    r"(?:,\s*|\s+[—–-]\s*|\s+)(?:because|since|so that|as the|as our|as it|weil|da die|"
    r"da der|damit|wegen)\b|\s+to (?:drop|save|avoid|cut|reduce|get|make|keep|stop)\b|"
    r"[,;]\s+(?:for|which|per)\b|\s+(?:while|whilst|during)\b",
    re.IGNORECASE,
)
_MOVING = re.compile(r"\bfrom\b.+\b(?:to|onto|into)\b|\bvon\b.+\b(?:auf|zu|nach)\b", re.I)
_ARROW = re.compile(r"\s(?:→|->|=>|⇒)\s")
_STRUCK = re.compile(r"~~[^~]+~~")
_ASIDE = re.compile(r"\(([^()]*)\)")
_BEFORE = re.compile(r"\s*(?:was|were|not|previously|formerly|before|vorher|statt|früher)\b", re.I)
# Being done now: "is working on", "are looking at" (a progressive verb and its object).
_PROGRESSIVE = re.compile(
    r"\b(?:is|are|am|was|were|'s|'re)\s+(?:\w+ly\s+)?\w+ing\s+(?:on|at|with|in|to|for|about|"
    r"through|into|over)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Said:
    """One statement taken apart: its content stems, its values by kind, what a
    ``Label:`` is set to, whether it says a change, and where its values stand."""

    stems: frozenset[str]  # every content word, values included (lower-case, stemmed)
    values: dict[str, frozenset[str]]  # kind -> normalised values
    value_stems: frozenset[str]  # the stems that are values
    owners: frozenset[str]  # possessive names ("Ana's shift"): whose, part of the subject
    changed: bool  # a change word in it
    slot: frozenset[str]  # after a Label: the words it is set to (values, whatever shape)
    past_event: bool  # opens with a past-tense verb and says no change: a log line
    negated: bool = False  # "no longer", "not", "stopped": what it names does not hold
    shown: dict[str, str] = field(default_factory=dict)  # a stem or value as written
    left: frozenset[str] = frozenset()  # values it names as left behind ("from X", "was X")
    units: frozenset[str] = frozenset()  # what its numbers count ("minutes", "requests")
    unit_of: dict[str, str] = field(default_factory=dict)  # a number -> what it counts
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # value -> where, in text
    text: str = ""  # what was read (the reason and asides left out)
    before: dict[str, str] = field(default_factory=dict)  # a word -> the word just before it
    last: str = ""  # its last content word (a value's head: "the blue cluster")
    scope: frozenset[str] = frozenset()  # names of the item it is nested under: whose
    topic: tuple[str, ...] = ()  # what it opens with: its label, or its first words
    uncut: str = ""  # the line as written, where a reason, aside or clause was cut ("": text)
    german: bool = False  # written in German: nouns have capitals, compounds are one word
    denied: frozenset[str] = frozenset()  # values in a clause a negation opens ("no X on N4")

    def written(self, values: frozenset[str]) -> str:
        """``values`` as the statement writes them, neighbours joined ("AWS SQS")."""
        found = sorted(self.spans[v] for v in values if v in self.spans)
        runs: list[list[int]] = []
        for start, end in found:
            if runs and not self.text[runs[-1][1] : start].strip(" -"):
                runs[-1][1] = max(runs[-1][1], end)
            else:
                runs.append([start, end])
        shown = [self.text[a:b].strip() for a, b in runs]
        shown += [self.shown.get(v, v) for v in sorted(values) if v not in self.spans]
        return ", ".join(shown)


def said(text: str) -> Said:
    """Take one statement apart (its reason, "because ...", left out: a why is neither
    what it is about nor its value)."""
    uncut = text
    if m := _REASON.search(text):
        text = text[: m.start()]
    text = text.split(";")[0]  # a second clause is another statement
    if "(" in text:  # an aside, unless it names what was before ("(was Mondays)") or a value
        text = _ASIDE.sub(lambda a: a.group(0) if _kept(a.group(1)) else " ", text)
    label = _LABEL.match(text)
    body_from = label.end() if label else 0
    lower_words = [w.lower() for w in LETTERS.findall(text)]
    german = _german(lower_words)
    stems: set[str] = set()
    values: dict[str, set[str]] = {}
    value_stems: set[str] = set()
    owners: set[str] = set()
    slot: set[str] = set()
    negated = False
    denied: set[str] = set()
    negation = -1  # where the last negating word stands
    shown: dict[str, str] = {}
    left: set[str] = set()
    units: set[str] = set()
    unit_of: dict[str, str] = {}
    # "from" leaves a value behind only where a change is said ("moved from A to B"), not
    # where it says a source ("beans come from Ozone").
    moving = bool(_MOVING.search(text))
    # "Tue/Fri → Mon/Thu", "~~12 May~~ 19 May": what stands before an arrow, or is struck
    # through, is what was.
    tokens = list(_TOKEN.finditer(text))
    arrows = [m.start() for m in _ARROW.finditer(text) if _to_value(text[m.end() :])]
    arrow = arrows[-1] if arrows else -1
    # What was: the one or two tokens right before the arrow ("Tue/Fri", "02:00").
    ahead = [t.start() for t in tokens if t.end() <= arrow][-2:] if arrow >= 0 else []
    was_from = ahead[0] if ahead else arrow
    struck = [m.span() for m in _STRUCK.finditer(text)] if "~~" in text else []
    changed = arrow >= 0 or bool(struck)
    first_word = True
    # Each token read once (the loop below looks back at the one before, and put() at the
    # two before: the words before a value).
    raws = [m.group(0) for m in tokens]
    lowers = [raw.lower() for raw in raws]
    modifiers: dict[str, str] = {}
    previous = ""  # the content word just before, while words run on without a break
    previous_word = ""
    topic: list[str] = []
    run_on = True  # the opening words still run on (no stopword, value or mark between)

    spans: dict[str, tuple[int, int]] = {}

    def put(kind: str, norm: str, word: str) -> None:
        start = m.start()
        spans.setdefault(norm, (start, m.end()))
        values.setdefault(kind, set()).add(norm)
        value_stems.add(word)
        stems.add(norm)  # "sun" beside "sunday": a value is said in its common form too
        near = lowers[max(0, i - 2) : i]  # the two words before it
        behind = was_from <= start < arrow or any(a <= start < b for a, b in struck)
        if behind or any(w in LEAVING for w in near) or ("from" in near and moving):
            left.add(norm)  # "from 45 to 60", "instead of Kafka", "(was Mondays)", "not 280"
        if negation >= 0 and not _BREAK.search(text, negation, start):
            denied.add(norm)

    end = 0  # where the token before ended
    for i, m in enumerate(tokens):
        kind = m.lastgroup
        raw = raws[i]
        low = lowers[i]
        if "’" in low:
            low = low.replace("’", "'")
        start = m.start()
        gap = text[end:start] if i else ""
        end = m.end()
        # Only a word right before another (no stopword, number or mark between) modifies it.
        adjacent = previous if i and (gap == " " or not gap.strip()) else ""
        # A title's full stop joins it to the name it is part of ("Mr. Hughes").
        titled = previous if gap[:1] == "." and i and not _opens(gap, raws[i - 1]) else ""
        previous = ""
        after_label = label is not None and start >= body_from
        if kind == "word":
            bare = low[:-2] if low.endswith("'s") else low
            if bare in _MARKED or low in CHANGE:  # a word that negates or says a change
                if bare in NOT or bare in NEGATING:
                    negated, negation = True, m.start()
                    if bare in NOT and i + 1 < len(tokens) and _is_value(tokens[i + 1], german):
                        changed = True  # "400 (not 280)", "Tuesdays, not Mondays": a correction
                handed = bare == "over" and i > 0 and lowers[i - 1] in HANDING
                if bare in CHANGE or low in CHANGE or handed:
                    changed = True
                    first_word = False
                    continue
            if (bare in STOPWORDS or len(bare) < 2 or (german and bare in GERMAN)) and not (
                (len(raw) == 1 and raw.isupper() and raw != "I" and not first_word)  # a letter
                or (german and bare in DAYS_DE)
            ):
                first_word = False
                continue
            word = stem(bare)
            opening, first_word = first_word, False
            day = DAYS.get(bare) or (DAYS_DE.get(bare) if german else None)
            if day:  # "Mondays", "Mon", "montags": one value, "mon"
                shown.setdefault(day, raw)
                put("day", day, day)
                if after_label:
                    slot.add(day)
                previous = day  # "the Wednesday egg round": a day can name which one
                continue
            stems.add(word)
            if adjacent:
                modifiers.setdefault(word, adjacent)
            if label is not None:
                if start < body_from:
                    topic.append(word)
            elif not topic or (run_on and (adjacent or titled) == topic[-1]):
                topic.append(word)
            else:
                run_on = False
            previous = previous_word = word
            shown.setdefault(word, raw)  # (a word token neither starts nor ends with a quote)
            if bare in MONTHS and (_near_number(tokens, i) or (len(bare) > 3 and raw[0].isupper())):
                put("date", f"m{MONTHS[bare]}", word)
            elif low.endswith("'s") and raw[0].isupper():
                owners.add(word)  # whose: part of what it is about
            elif _shaped_name(raw) or (
                # a capital, unless it opens a sentence (and is not someone who acts)
                raw[0].isupper()
                and not german
                and not (
                    (opening or _opens(gap, raws[i - 1] if i else ""))
                    and not (label is not None and start == body_from)
                    and not _acts(tokens, i)
                )
            ):
                put("name", word, word)
            if after_label:
                slot.add(word)
            continue
        first_word = False
        norm = _SPACES.sub("", low)
        if kind == "num":
            unit, counted = _unit(tokens, i)
            if any(c in norm for c in "%$€£"):  # 4.6% and 4.1%: rates; £40, £20: prices
                unit, counted = "".join(c for c in norm if c in "%$€£")[0], True
            norm = norm.replace(",", ".").rstrip(".")
            put("num", norm, norm)
            if unit:
                stems.add(unit)  # "30 days" and "14 days": the unit is said by both
            if unit and counted:  # what it counts, not the word before ("gate 90")
                units.add(unit)
                unit_of.setdefault(norm, unit)
        elif kind == "time":
            shown.setdefault(clock(norm), raw.strip())
            put("time", clock(norm), norm)
        elif kind == "date":
            norm = calendar_day(raw)
            put("date", norm, norm)
        else:
            put(kind or "other", norm, norm)
        stems.add(norm)
        shown.setdefault(norm, raw.strip())
        if after_label:
            slot.add(norm)
    first = lower_words[0] if lower_words else ""
    # What was done that day ("Booked the hotel: ...", "Flew TAP to Oslo"), or is being done
    # ("Mateo is working on search"): events and activities, whose values are meant to
    # differ, not facts a later value replaces. A decision ("Decided: ...") is a fact.
    past = (first.endswith("ed") and len(first) > 4) or first in IRREGULAR_PAST
    past_event = (not changed and past and first not in CHANGE and first not in DECIDED) or (
        bool(_PROGRESSIVE.search(text))
    )
    return Said(
        frozenset(stems),
        {k: frozenset(v) for k, v in values.items()},
        frozenset(value_stems),
        frozenset(owners),
        changed,
        frozenset(slot),
        past_event,
        negated,
        shown,
        frozenset(left),
        frozenset(units),
        unit_of,
        spans,
        text,
        modifiers,
        previous_word,
        topic=tuple(topic),
        uncut=uncut if uncut != text else "",
        german=german,
        denied=frozenset(denied),
    )


def _german(lower_words: list[str]) -> bool:
    """Two German function words or more: German, where nouns have capitals too."""
    seen = 0
    for w in lower_words:
        if w in GERMAN:
            seen += 1
            if seen == 2:
                return True
    return False


def _to_value(after: str) -> bool:
    """Whether an arrow leads to a value ("→ Mon/Thu", "-> 03:30", "→ Olive & Ember"), not
    to a consequence ("→ need a kitchen", "→ keine Statusseite nötig")."""
    words = list(_TOKEN.finditer(re.split(r"[,;.(]\s", after, maxsplit=1)[0]))
    german = sum(t.group(0).lower() in GERMAN for t in words) >= 1
    return 0 < len(words) <= 2 and any(_is_value(t, german) for t in words)


def _opens(gap: str, previous: str) -> bool:
    """Whether a word after ``gap`` (what stands since the ``previous`` token) opens a
    sentence or an aside: after a full stop, but not a title's ("Dr. Lang", "St. Pauli")."""
    if gap == " ":  # the most common gap by far: between two words
        return False
    if any(c in gap for c in '(["“'):
        return True
    if not any(c in gap for c in ".!?;"):
        return False
    return not (len(previous) <= 3 and previous[:1].isupper() and gap.startswith("."))


def _kept(aside: str) -> bool:
    """An aside that says what was before, or is a short value ("(Tue–Fri)", "(6pm)")."""
    if _BEFORE.match(aside):
        return True
    short = len(aside.split()) <= 3
    return short and any(_typed(t) for t in _TOKEN.finditer(aside))


def _typed(t: re.Match[str]) -> bool:
    return t.lastgroup != "word" or t.group(0).lower() in DAYS


def _acts(tokens: list[re.Match[str]], i: int) -> bool:
    """A capitalised first word followed by "is", "will", "takes"...: someone or something
    named ("Dana is the team lead"), not a sentence's first word ("Deploy target is")."""
    nxt = tokens[i + 1].group(0).lower() if i + 1 < len(tokens) else ""
    return nxt in COPULA


def _is_value(t: re.Match[str], german: bool) -> bool:
    """A value's shape: a number, a day, or (outside German, where nouns have capitals
    too) a name."""
    word = t.group(0)
    if t.lastgroup != "word" or word.lower() in DAYS:
        return True
    return word[0].isupper() and not german


def _shaped_name(raw: str) -> bool:
    """A product, place or person by its shape, in any language: a word with digits or
    inner capitals ("gpt-4o", "PostgreSQL", "B2"). (A capital inside an English sentence
    names one too: ``said`` asks that only of a capitalised word.)"""
    if raw.islower() and raw.isalpha():  # most words: neither
        return False
    rest = raw[1:]
    # An inner capital: "PostgreSQL", but not one after "-" ("On-Call").
    if rest != rest.lower() and any(c.isupper() and raw[n] != "-" for n, c in enumerate(rest)):
        return True
    return not raw.isalpha() and any(c.isdigit() for c in raw)


def _near_number(tokens: list[re.Match[str]], i: int) -> bool:
    """A month name counts as a date only beside a number ("3 March", "March 3rd")."""
    near = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
    return any(t.lastgroup == "num" for t in near)


def _unit(tokens: list[re.Match[str]], i: int) -> tuple[str | None, bool]:
    """The word a number counts, and whether it follows it: the next word ("45 to 60
    minutes": minute, skipping the other number), else the word before ("room 204")."""
    for t in tokens[i + 1 : i + 4]:
        low = t.group(0).lower()
        if t.lastgroup in ("num", "time") or low in RANGE:
            continue
        if t.lastgroup == "word" and low not in STOPWORDS and low not in CHANGE:
            return stem(low), True
        break
    if i > 0 and tokens[i - 1].lastgroup == "word":
        low = tokens[i - 1].group(0).lower()
        if low not in STOPWORDS and low not in CHANGE and low not in RANGE:
            return stem(low), False
    return None, False
