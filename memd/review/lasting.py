"""Whether a statement of a daily note would be kept in MEMORY.md: read from its form.

A cue list of English phrases ("weekly", "decided", "prefers") carried over to no other
wording: it took a German meeting called "Weekly" for a rule and found a lasting fact
only through a script's name. Here a statement is read for the shape of what lasts: a
``Label: value`` line or a bold subject, a rule's form (a modal, "always", "never", "only"
in either language), a cadence beside a value ("every Tuesday", "nightly 02:30",
"montags"), values a person looks up (a price, a time, an address, a code), the same
words on another day; and for the shape of what passes: a past-tense log line, a day's
deixis ("today", "gestern"), an exclamation, a quote of what someone said, a fragment.
Each is a feature; a logistic model weighs them together, fitted by
``bench/promote_fit.py`` on the tune half of the labelled set ``bench/promote_lines.json``
(the report half is kept for measuring). The weights are in ``memd.review.lasting_weights``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import pairwise

from memd.review.lasting_weights import THRESHOLD, WEIGHTS
from memd.review.statements import Statement, words
from memd.review.values import said
from memd.review.words import DAYS, DAYS_DE, DECIDED, IRREGULAR_PAST, MONTHS

# Closed classes of each language, not phrasings: the modals and adverbs a rule is said
# with, the words that place a statement in one day, cadence words, first persons.
_RULE = frozenset("""
    always never must mustn't should shall cannot can't
    immer nie niemals muss müssen darf dürfen stets
""".split())  # fmt: skip
_ONLY = frozenset("only nur ausschließlich exclusively".split())  # a restriction, or "just"
# A prohibition: "no bonfires", "never PDF", "don't DM", "keine Rabatte". A bare "not"
# says a state ("not started", "not affected") unless a modal or "do" carries it.
_NO = frozenset("no never don't doesn't kein keine keinen keinem nie niemals".split())
_CARRIES = frozenset("must should do does may can darf dürfen soll sollen muss".split())
_DEIXIS = frozenset("""
    today tonight yesterday tomorrow morning afternoon evening overnight earlier later
    again heute gestern morgen vorhin gerade abend mittag vormittag nachmittag wieder
""".split())  # fmt: skip
_CADENCE = frozenset("""
    daily weekly monthly yearly annually nightly hourly quarterly every each per once twice
    täglich wöchentlich monatlich jährlich quartal jeden jede jedes pro einmal zweimal
    a an year month week day term season
""".split())  # fmt: skip
_PERIOD = frozenset("year month week day night term season quarter jahr monat woche tag".split())
_PENDING = frozenset("noch still yet".split())  # "muss noch", "still need to": a to-do
_NEED = frozenset("must need needs have has muss müssen sollte soll".split())
# Deciding, as verb or noun in either language ("decided", "Decision:", "beschlossen",
# "Entscheidung", "vereinbart"): the stems of a closed class, not phrasings.
_DECIDING = ("decid", "decis", "agree", "entschied", "entscheid", "beschl", "vereinbar")
_FIRST = frozenset("i i'm i've i'd we we're we've ich wir mir mich".split())
_PAST = frozenset("was were had did got war waren hatte hatten wurde wurden kam ging".split())
_PASSIVE = frozenset("is are be been being ist sind wird werden".split())
_SUBJECTS = frozenset("i we he she they it you".split())
_DAY_PLURAL = frozenset(d for d in DAYS if d.endswith("s") and len(d) > 4)
_CONTACT = re.compile(
    r"\S+@\S+\.\w+|https?://|\b\w+\.(?:example|com|org|de|net|io)\b|(?:^|\s)[~/]\w+/|"
    r"\+?\d[\d ]{7,}\d|\b(?:code|pin|nr|no)\.?\s*\d{3,}",
    re.IGNORECASE,
)
_MONEY = re.compile(r"[$€£]\s?\d|\d\s?(?:[$€£]|eur|euro|usd|gbp)\b", re.IGNORECASE)
_QUOTE = re.compile(r"[\"“”„«»]")
_LABEL = re.compile(r"^(?P<label>[^:.!?]{2,40}?):\s+\S")
# Two days, months or clock times joined as a span ("Mon–Wed", "Nov–Mar", "17:30–19:00",
# "10–18 Uhr"): a schedule. (A score, "3–1", is no span.)
_RANGE = re.compile(
    r"(?P<a>[^\W\d_]{2,9})\.?\s?[–-]\s?(?P<b>[^\W\d_]{2,9})\b|"
    r"\d{1,2}[:.]\d{2}\s?[–-]\s?\d{1,2}[:.]\d{2}|\b\d{1,2}\s?[–-]\s?\d{1,2}\s?(?:uhr|h|am|pm)\b",
    re.IGNORECASE,
)
# One day of the calendar ("26.2.", "2026-03-14", "Thu 12.5."): what is set for that
# day, an appointment or a deadline, passes with it.
_DATED = re.compile(r"(?<![\d.])\d{1,2}\.\d{1,2}\.(?:\d{2,4})?(?![\d])|\b\d{4}-\d{2}-\d{2}\b")
_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")

# Plain words for the reason a proposal shows, by feature (the strongest first).
_SAID_AS = {
    "label": "a Label: value line",
    "bold": "a bold subject",
    "rule": "a rule's form",
    "negation": "a prohibition",
    "only": "a restriction",
    "cadence": "a cadence with a value",
    "day_plural": "a cadence with a value",
    "range": "a schedule",
    "passive": "how a thing is done",
    "decided": "a decision",
    "contact": "an address or code",
    "money": "a price",
    "nested": "an item of a list it introduces",
}


def features(s: Statement, days: int = 1, turn: bool = False) -> dict[str, float]:
    """What the form of ``s`` says about whether it lasts; ``days``: on how many days its
    words were said; ``turn``: one of a run of lines by named speakers (``dialogue``)."""
    return {**_plain(s, days, turn), **_read(s.text)}


# The features that need the statement taken apart (``memd.review.values.said``), which
# costs most: a review reads them only where the others leave the outcome open.
_READ = ("slot", "values", "changed", "past_event", "dated_value")


def _read(text: str) -> dict[str, float]:
    d = said(text)
    f = {
        "slot": float(bool(d.slot) and len(d.slot) <= 6),
        "values": min(sum(len(v) for v in d.values.values()), 4) / 4,
        "changed": float(d.changed),
        "past_event": float(d.past_event),
        "dated_value": float("date" in d.values),
    }
    return {k: v for k, v in f.items() if v}


def _plain(s: Statement, days: int, turn: bool) -> dict[str, float]:
    text = s.text
    low = words(text)
    n = len(low) or 1
    speaker = (s.speaker or "").strip()
    person = bool(speaker) and not speaker[:1].islower()
    label = _LABEL.match(text)
    near_value = _cadence_beside_value(text)
    past = sum(1 for i, w in enumerate(low[:6]) if _is_past(low, i, w))
    f = {
        "label": float(label is not None and len(label.group("label").split()) <= 4),
        "bold": float(person and s.key is None),
        "rule": float(any(w in _RULE for w in low)),
        "negation": float(any(_forbids(low, i) for i in range(len(low)))),
        "only": float(any(w in _ONLY for w in low)),
        "fragment": float(text[:1].islower() and label is None),
        "cadence": float(near_value),
        "range": float(_schedule(text)),
        "passive": float(_passive(low)),
        "pending": float(
            any(w in _NEED and _PENDING & set(low[i + 1 : i + 3]) for i, w in enumerate(low))
        ),
        "day_plural": float(any(w in _DAY_PLURAL for w in low)),
        "contact": float(bool(_CONTACT.search(text))),
        "money": float(bool(_MONEY.search(text))),
        "decided": float(any(w in DECIDED or w.startswith(_DECIDING) for w in low)),
        "past": min(past, 2) / 2,
        "deixis": float(any(w in _DEIXIS for w in low)),
        "first": float(any(w in _FIRST for w in low)),
        "quote": float(bool(_QUOTE.search(text))),
        "exclaim": float("!" in text or bool(_EMOJI.search(text))),
        "short": float(n < 5),
        "long": min(max(n - 20, 0), 20) / 20,
        "sentences": float(len(re.findall(r"[.!?](?:\s|$)", text.rstrip(".!? "))) >= 1),
        "nested": float(s.lead is not None),
        "dated": float(bool(_DATED.search(text))),
        "turn": float(turn),
        "repeated": float(days >= 2),
    }
    return {k: v for k, v in f.items() if v}


def probability(f: dict[str, float]) -> float:
    """The fitted belief that a person would keep the statement (0..1)."""
    z = WEIGHTS.get("bias", 0.0) + sum(WEIGHTS.get(k, 0.0) * v for k, v in f.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def lasting(s: Statement, days: int = 1, turn: bool = False) -> tuple[float, list[str]]:
    """How likely ``s`` is kept (0..1) and, when it is at least ``THRESHOLD``, what in its
    form said so (the features that raised it most, in plain words)."""
    f = _plain(s, days, turn)
    # The features read from the statement taken apart can add at most their positive
    # weights: where even that leaves it under the bar, they are not read (most lines).
    most = probability({**f, **{k: 1.0 for k in _READ if WEIGHTS.get(k, 0.0) > 0}})
    if most < THRESHOLD:
        return probability(f), []
    f.update(_read(s.text))
    p = probability(f)
    if p < THRESHOLD:
        return p, []
    lifts = sorted(((WEIGHTS.get(k, 0.0) * v, k) for k, v in f.items()), reverse=True)
    why = [_why(k, s) for w, k in lifts if w > 0.3 and (k in _SAID_AS or k == "repeated")]
    return p, list(dict.fromkeys(why))[:3] or ["its form"]


def dialogue(said: Sequence[Statement]) -> set[tuple[str, int]]:
    """The statements (path, line) that are turns of a conversation: a named speaker's
    line next to another speaker's (a meeting or a chat pasted in): what was said, not
    what holds."""
    out: set[tuple[str, int]] = set()
    for a, b in pairwise(said):
        talk = a.speaker and b.speaker and a.speaker != b.speaker
        if talk and a.path == b.path and b.line - a.last <= 2:
            out |= {(a.path, a.line), (b.path, b.line)}
    return out


def _why(feature: str, s: Statement) -> str:
    if feature == "label" and (m := _LABEL.match(s.text)):
        return f'labelled "{m.group("label").strip("* ")}"'
    if feature == "bold":
        return f'about "{s.speaker}"'
    return _SAID_AS.get(feature, "said again on another day")


def _is_past(low: list[str], i: int, w: str) -> bool:
    """A past tense: "was", "got", "went", or an -ed verb where a verb stands (not a
    passive's participle, "Seeds are stored", nor a decision's)."""
    if w in _PAST or w in IRREGULAR_PAST:
        return True
    if w in DECIDED or w.startswith(_DECIDING):
        return False  # "Decided to use X": a decision holds on (as ``memd.review.values``)
    # An -ed word opening a log line ("Called the landlord") or after its subject ("we
    # moved"); elsewhere it is as often an adjective ("bottled water", "signed form").
    return w.endswith("ed") and len(w) > 4 and (i == 0 or low[i - 1] in _SUBJECTS)


def _schedule(text: str) -> bool:
    for m in _RANGE.finditer(text):
        if m.group("a") is None:
            return True
        a, b = m.group("a").lower(), m.group("b").lower()
        if all(w in DAYS or w in DAYS_DE or w in MONTHS for w in (a, b)):
            return True
    return False


def _forbids(low: list[str], i: int) -> bool:
    """A prohibition at ``i``: "no"/"kein"/"never" before what is forbidden, or "not"
    carried by a modal ("must not", "darf nicht"); never a correction ("not 5")."""
    w = low[i]
    nxt = low[i + 1] if i + 1 < len(low) else ""
    if w in _NO:
        return bool(nxt) and not _is_value(nxt)
    return w in ("not", "nicht") and i > 0 and low[i - 1] in _CARRIES


def _passive(low: list[str]) -> bool:
    """A present passive ("are stored", "is charged", "wird umgeleitet"): how a thing is
    done, as a rule, rather than what someone did."""
    for i, w in enumerate(low):
        if w in ("is", "are", "ist", "sind", "wird", "werden", "get", "gets"):
            after = low[i + 1 : i + 5]
            if any(a.endswith("ed") and len(a) > 4 for a in after[:2]):
                return True
            if w in ("wird", "werden") and any("ge" in a[:6] and a.endswith(("t", "en"))
                                                  for a in after):  # fmt: skip
                return True
    return False


def _cadence_beside_value(text: str) -> bool:
    """A cadence word within two words of a value ("every Tuesday", "nightly 02:30",
    "£62 a year", "1st Sat of the month"), or a weekday said in the plural ("Tuesdays",
    "montags"): a thing that recurs, not what happened once."""
    tokens = re.findall(r"[\w'’:.,€£$%–-]+", text.lower())
    for i, t in enumerate(tokens):
        if t.strip(".,") not in _CADENCE:
            continue
        around = tokens[max(0, i - 2) : i] + tokens[i + 1 : i + 3]
        if any(_is_value(a.strip(".,")) for a in around):
            return True
        if t not in _PERIOD and any(a.strip(".,") in _PERIOD for a in around):
            return True  # "once a year", "every day", "einmal im Quartal"
    return False


def _is_value(token: str) -> bool:
    return (
        any(c.isdigit() for c in token)
        or token in DAYS
        or token in MONTHS
        or token.rstrip("s") in DAYS
    )
