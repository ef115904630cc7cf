"""Reversals: a later statement that moves a subject from one value to another, and the
earlier statement it overturns.

People write a reversal in many ways: "switched the invoice queue from RabbitMQ to SQS",
"moved billing off Heroku onto Fly", "replaced Jenkins with Buildkite", "we dropped Kafka
for RabbitMQ", "we no longer use Datadog for logs", "the queue is SQS now, not RabbitMQ",
"went back to RabbitMQ". Each names the value left behind (or, going back, the one taken
up again), so the statement it overturns is found by that value, not by a subject worded
the same way: the newest earlier statement that names it and shares a word of the subject
(or, with no subject named, that states a choice).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memd.review.statements import Statement, content_words

_WE = (
    r"(?:(?:we|i|they|the(?:\s+[\w-]+){0,2}\s+(?:team|squad|group|folks))\s+"
    r"(?:have\s+|had\s+|just\s+|finally\s+)?)?"
)
_FOR = r"(?:for|in|on|as|at)"
_LEFT = r"(?:dropped|ditched|abandoned|retired|gave up on|got rid of|phased out|dumped)"
_GONE = (
    r"(?:no more|retired|dropped|ditched|abandoned|got rid of|decommissioned|sunset|sunsetted|"
    r"killed|phased out|turned off|shut down|shut off|stopped using|stopped paying for|"
    r"(?:no longer|don't|do not|won't|quit|stopped)\s+(?:use|using|run|running|rely on|"
    r"relying on|need|pay for))"
)
# Moving between places, not values: "flew from Oslo to Berlin".
_TRAVEL = re.compile(
    r"\b(?:flew|fly|flying|drove|drive|driving|travell?ed|walked|rode|sailed|commuted|biked|"
    r"cycled|hiked|ran|trip|flight|train|bus)\b",
    re.IGNORECASE,
)
_CHANGED = re.compile(
    r"\b(?:moved|move|moves|changed|change|changes|shifted|bumped|raised|lowered|switched|"
    r"switch|upgraded|downgraded|went|go|updated|pushed|pulled|migrated|migrate|transferred|"
    r"ported|converted|swapped|replaced)\b",
    re.IGNORECASE,
)
_PRONOUNS = frozenset(
    "i me you he him she her it we us they them this that these those everyone everything "
    "someone something anyone anything nothing here there myself yourself".split()
)

# fmt: off
_PATTERNS = [
    # "went back to RabbitMQ for the invoice queue", "reverted to Terraform"
    re.compile(rf"^(?:.*?\b)?(?:back\s+to|returned\s+to|reverted\s+to)\s+(?P<back>.+?)"
               rf"(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "we dropped Kafka for RabbitMQ", "ditched Heroku in favour of Fly for billing"
    re.compile(rf"^{_WE}{_LEFT}\s+(?P<old>.+?)\s+(?:for|in favou?r of|and (?:went|moved|"
               rf"switched) (?:to|with))\s+(?P<new>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "HAProxy got replaced by Traefik on the edge nodes"
    re.compile(rf"^(?P<old>.+?)\s+(?:got|was|were|has been|have been|is being|is|are)\s+"
               rf"(?:replaced|superseded|swapped out)\s+(?:by|with|for)\s+(?P<new>.+?)"
               rf"(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "replaced Jenkins with Buildkite for CI", "swapped Kong out for Envoy as the gateway"
    re.compile(rf"^{_WE}(?:replaced|swapped|traded|exchanged)\s+(?P<old>.+?)\s+(?:out\s+)?"
               rf"(?:with|by|for)\s+(?P<new>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "Buildkite replaced Jenkins for CI", "Outline took over from MediaWiki as the wiki"
    re.compile(rf"^(?P<new>.+?)\s+(?:replaced|replaces|has replaced|took over from|"
               rf"supersedes|superseded)\s+(?P<old>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "switched the queue from RabbitMQ to SQS", "went from Memcached to Redis for the cache"
    re.compile(r"^(?P<pre>.*?)\b(?:from|off(?:\s+of)?|away\s+from)\s+(?P<old>.+?)\s+"
               rf"(?:to|onto|over\s+to|into)\s+(?P<new>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "staff email was moved to Fastmail from Google Workspace"
    re.compile(r"^(?P<pre>.*?)\b(?:to|onto|over\s+to)\s+(?P<new>.+?)\s+(?:from|off(?:\s+of)?)\s+"
               r"(?P<old>.+)$"),
    # "the shop now uses GoodJob instead of Sidekiq", "rendered by Gotenberg rather than X"
    re.compile(rf"^(?P<taken>)(?P<pre>.+?)\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+"
               rf"(?P<old>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "the queue is SQS now, not RabbitMQ"
    re.compile(r"^(?P<taken>)(?P<pre>.+?),\s*(?:and\s+|but\s+)?(?:not|no\s+longer)\s+"
               r"(?P<old>.+)$"),
    # "went with Cloudflare R2 over Amazon S3 for uploads"
    re.compile(rf"^(?:.*?\b)?(?:went with|go with|picked|chose|choose|prefer|decided on|"
               rf"settled on|opted for)\s+(?P<new>.+?)\s+over\s+(?P<old>.+?)"
               rf"(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "we no longer use Datadog for logs", "retired OpenVPN", "no more Aha"
    re.compile(rf"^(?P<pre>.*?)\b{_GONE}\s+(?P<old>.+?)(?:\s+{_FOR}\s+(?P<s>.+))?$"),
    # "Capistrano is gone", "Jenkins is history"
    re.compile(r"^(?P<old>.+?)\s+(?:is|are|was|has been)\s+(?:gone|dead|history|retired|"
               r"decommissioned|no more)$"),
]
# fmt: on
_PATTERNS = [re.compile(p.pattern, re.IGNORECASE) for p in _PATTERNS]
# Where a value's name ends: its reason, purpose or aside follows.
_VALUE_END = re.compile(
    r"\s+(?:to|so|because|since|as|after|once|which|that|and|but|for|in|on|at|with|by|"
    r"when|while|until|from|due|out|now|today|anymore|instead|from now on|this|last|"
    r"next|—|–)(?:\s.*)?$|[,;:(].*$",
    re.IGNORECASE,
)
# Words that end a value read backwards from a connective ("uses GoodJob instead of").
_NOT_NAME = frozenset(
    "is are was were be been being use uses used using run runs ran on in at by with from to "
    "for of the a an our their its now today come comes came go goes went get gets got "
    "rendered hosted kept stored written built done made handled managed served sent lives "
    "live moved switched and or but it we i they everyone".split()
)
# An earlier statement with no subject named must state a choice to be overturned.
_CHOICE = re.compile(
    r"\b(?:use|uses|using|used|picked|chose|chosen|decided|went with|settled|adopted|run|runs|"
    r"running|moved|switched|migrated|hosted|host|on|standardi[sz]ed|comes? from|through|via|"
    r"is|are|with|in|by)\b",
    re.IGNORECASE,
)
# A word one of the patterns needs: tried first, so a note's many other lines cost one scan.
_TRIGGER = re.compile(
    r"\b(?:from|off|away|replac\w*|swapped|traded|exchanged|took over|supersed\w*|"
    r"instead|rather|place|not|no longer|no more|over|back|returned|reverted|dropped|ditched|"
    r"abandoned|retired|gave up|got rid|phased|dumped|decommissioned|sunset\w*|killed|"
    r"turned off|shut|stopped|don't|won't|quit|gone|dead|history)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r";|\s[—–]\s|(?<=[.!?])\s+|:\s+")


@dataclass(frozen=True)
class Reversal:
    """A move of ``subject`` from ``old`` to ``new``; ``back`` when ``new`` is taken up
    again (then ``old`` is unknown: the value it replaces is found in earlier notes)."""

    subject: str
    old: str | None
    new: str | None
    back: bool = False


@dataclass(frozen=True)
class Overturned:
    """An earlier statement a reversal overturns."""

    older: Statement
    newer: Statement
    reversal: Reversal
    old: str  # the value left behind, as named


def reversals(text: str) -> list[Reversal]:
    """The reversals ``text`` states, one per clause at most."""
    if not _TRIGGER.search(text):  # most statements: no pattern could match
        return []
    found = []
    for clause in _CLAUSE.split(text):
        clause = clause.strip().rstrip(".!")
        if not clause or clause.endswith("?"):
            continue
        for pattern in _PATTERNS:
            m = pattern.match(clause)
            if m is not None and (r := _reading(m)) is not None:
                found.append(r)
                break
    return found


def _reading(m: re.Match[str]) -> Reversal | None:
    groups = m.groupdict()
    pre = groups.get("pre") or ""
    subject = groups.get("s") or ""
    if groups.get("back"):
        new = _value(groups["back"])
        return Reversal(_subject(subject), None, new, back=True) if new else None
    old = _value(groups.get("old") or "")
    if "new" in groups:
        new = _value(groups.get("new") or "")
    elif "taken" in groups:  # "GoodJob instead of Sidekiq": the name before the connective
        new, pre = _last_name(pre)
    else:
        new = ""
    if not old or old.lower() == new.lower() or {old.lower(), new.lower()} & _PRONOUNS:
        return None
    if _TRAVEL.search(pre) or _TRAVEL.search(subject):
        return None
    verb = _CHANGED.search(m.string) is not None
    if "pre" in groups and "new" in groups and not _CHANGED.search(pre):
        return None  # "great to hear from you", "open from 9 to 5": no change said
    if not verb and not (_name_like(old) or _name_like(new)):
        return None  # "from contemporary to hip-hop": kinds, not a tool or a place chosen
    if not subject and pre:
        subject = " ".join(w for w in pre.split() if w.lower() not in _NOT_NAME and not
                           w.lower().endswith("ed"))  # fmt: skip
    return Reversal(_subject(subject), old, new or None)


def _name_like(value: str) -> bool:
    """A product, place or person's name, or a version: a capital or a digit in it."""
    return bool(re.search(r"[A-Z0-9]", value)) and "[" not in value and "]" not in value


def _last_name(pre: str) -> tuple[str, str]:
    """The name that ends ``pre`` (up to four words, back to a verb or preposition), and
    what stands before it."""
    words = re.sub(r"[\s,]+(?:now|today|these days|anymore)?[\s,]*$", "", pre).split()
    name: list[str] = []
    while words and len(name) < 4 and words[-1].lower().strip(",") not in _NOT_NAME:
        name.insert(0, words.pop())
    return _value(" ".join(name)), " ".join(words)


def overturned(every: Sequence[Statement]) -> list[Overturned]:
    """For each statement that reverses an earlier one, the newest earlier statement it
    overturns (``every`` in time order: MEMORY.md and undated notes first)."""
    out: list[Overturned] = []
    said: list[tuple[Statement, list[Reversal], str]] = []  # ..., its text lower-cased
    for s in every:
        if s.task or s.key is not None:
            continue
        mine = reversals(s.text)
        for r in mine:
            hit = _back(said, r) if r.back else _named(said, r)
            if hit is not None:
                out.append(Overturned(hit[0], s, hit[1], hit[1].old or ""))
                break
        said.append((s, mine, s.text.lower()))
    return out


def _named(said: list, r: Reversal) -> tuple[Statement, Reversal] | None:
    """The newest earlier statement that names the value ``r`` leaves."""
    name = re.compile(rf"(?<![\w-]){re.escape(r.old or '')}(?![\w-])", re.IGNORECASE)
    about = set(content_words(r.subject)) - set(content_words(f"{r.old} {r.new or ''}"))
    plain = (r.old or "").lower()
    for older, theirs, lower in reversed(said):
        if plain not in lower or not name.search(older.text) or _leaves(theirs, r.old):
            continue
        if about and not about & set(content_words(older.text)):
            continue
        if not about and not _CHOICE.search(older.text):
            continue
        return older, r
    return None


def _back(said: list, r: Reversal) -> tuple[Statement, Reversal] | None:
    """ "Went back to A": the newest earlier statement that moved off A (to what is now
    left behind)."""
    for older, theirs, _ in reversed(said):
        for t in theirs:
            if t.old and t.new and t.old.lower() == (r.new or "").lower():
                return older, Reversal(r.subject or t.subject, t.new, r.new, back=True)
    return None


def _leaves(theirs: list[Reversal], value: str | None) -> bool:
    """Whether a statement itself moved off ``value`` (it does not say ``value`` holds)."""
    return any(t.old and value and t.old.lower() == value.lower() for t in theirs)


def _value(text: str) -> str:
    value = _VALUE_END.sub("", text.strip())
    value = re.sub(r"^(?:the|a|an|our|using|back to)\s+", "", value, flags=re.IGNORECASE)
    value = value.strip(" .,'\"`*")
    return value if value and len(value.split()) <= 4 else ""


def _subject(text: str) -> str:
    text = re.sub(r"^(?:the|our|a|an)\s+", "", text.strip(), flags=re.IGNORECASE)
    return text.strip(" .,")
