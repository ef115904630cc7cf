"""What a statement says about what: a subject, its value, and whether it is denied.

"The deploy target is now staging", "Switched the CI provider to Buildkite", "Dana is the
team lead for the platform squad", "Paging moved to Opsgenie", "Error budget set to
99.9%", "Hana takes over as release manager", "Coffee supplier: Roast House", "We no longer
use Redis for sessions": each names a subject whose value can later change. Events ("Flew
KLM to Oslo"), activities ("Ana is working on billing") and statements scoped to a time
("On call this week: Ana") are not facts of this kind: their values are meant to differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.review.statements import content_words
from memd.store.fts import STOPWORDS

# Words that mark a change of state; taken off before the value is compared.
_CHANGE = re.compile(
    r"\b(?:from now on|from today(?: on)?|as of today|starting today|going forward|"
    r"effective immediately|now|instead|anymore|any more)\b",
    re.IGNORECASE,
)
# A time the statement is about, not when it was written: its value holds for that time only.
_SCOPED = re.compile(
    r"\b(?:this|next|last) (?:week|weekend|month|morning|afternoon|evening|sprint|time)\b|"
    r"\b(?:today|tonight|yesterday|tomorrow|right now|at the moment|for now)\b",
    re.IGNORECASE,
)
_VERDICTS = {"great", "amazing", "awesome", "fun", "cool", "nice", "good", "bad", "so", "very",
             "really", "beautiful", "wonderful", "fantastic", "lovely", "terrible", "super",
             "such", "too", "quite", "pretty", "incredible", "perfect", "solid", "strong",
             "tough", "hard", "easy", "fine", "okay", "ok", "best", "worst",
             # a value that begins with one of these is a clause about someone, not a value
             "my", "your", "his", "her", "their", "these", "those", "this", "that", "if",
             "when", "because", "like"}  # fmt: skip
# "Looks like", "sounds like": a comparison, not a liking.
_SEEMING = re.compile(r"\b(?:looks?|looked|sounds?|sounded|seems?|seemed|feels?|felt)$", re.I)
_FILLER = {"still", "also", "again", "currently", "officially", "definitely"}
_PRONOUN = {"i", "we", "you", "he", "she", "they", "it", "this", "that", "there", "here",
            "what", "who", "which", "everyone", "everything", "someone", "something",
            "it's", "that's", "there's", "i'm", "we're", "you're", "they're", "he's", "she's",
            "what's", "life", "things"}  # fmt: skip
# "We use X for Y", "I prefer X": a pronoun subject that still names a lasting fact.
_OWN_HABITS = ("we use", "i use", "we run", "i prefer", "we prefer", "i like", "we like")
_NEGATION = r"(?P<neg>no longer |not |never |don't |doesn't |do not |does not |stopped )?"

_PATTERNS = [
    # "Switched the CI provider (from Jenkins) to Buildkite"
    re.compile(
        r"^(?:we |i )?(?:switched|switch|changed|change|migrated|migrate|moved|move)\s+"
        r"(?P<s>.+?)\s+(?:from\s+.+?\s+)?to\s+(?P<v>.+)$",
        re.IGNORECASE,
    ),
    # "Hana takes over as release manager"
    re.compile(r"^(?P<v>.+?)\s+(?:takes|took|is taking|will take)\s+over\s+as\s+(?P<s>.+)$", re.I),
    # "Daily standup moves to 10:00", "Nightly backups now go to the r2 bucket"
    re.compile(
        r"^(?P<s>.+?)\s+(?:now\s+)?(?:moves|moved|has moved|have moved|move|switched|switches|"
        r"changed|migrated|now goes|now go|go|goes)\s+(?:over\s+)?to\s+(?P<v>.+)$",
        re.IGNORECASE,
    ),
    # "Error budget for checkout set to 99.9%"
    re.compile(
        r"^(?P<s>.+?)\s+(?:is |was |has been |have been )?(?:now )?(?:set|changed|updated|"
        r"bumped|raised|lowered|reduced|increased|pinned|fixed)\s+to\s+(?P<v>.+)$",
        re.IGNORECASE,
    ),
    # "Friday team lunch comes from Taco Loco"
    re.compile(r"^(?P<s>.+?)\s+(?:now\s+)?(?:comes|come)\s+from\s+(?P<v>.+)$", re.IGNORECASE),
    # "Dana is the team lead for the platform squad" (a name, then what it now is)
    re.compile(
        r"^(?P<v>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})\s+(?:is|will be|becomes|became)\s+"
        r"(?:now\s+)?(?:the|our)\s+(?P<s>.+)$"
    ),
    # "We (no longer) use Redis for sessions", "Dana prefers tea"
    re.compile(
        r"^(?P<s>.+?)\s+" + _NEGATION + r"(?P<verb>use|uses|using|prefer|prefers|like|likes|"
        r"want|wants|run on|runs on|is hosted on|are hosted on|live in|lives in)\s+(?P<v>.+)$",
        re.IGNORECASE,
    ),
    # "The deploy target is (now) staging", "Sprints are two weeks long"
    re.compile(
        r"^(?P<s>.+?)\s+(?:is|are|was|were)\s+"
        + _NEGATION.replace("never |", "")
        + r"(?:now\s+)?(?:called\s+|named\s+)?(?P<v>.+)$",
        re.IGNORECASE,
    ),
    # "New coffee beans supplier: Kaffa Co"
    re.compile(r"^(?P<s>[^:]{3,48}):\s+(?P<v>[^:]+)$"),
]


# Words every pattern above needs one of: a clause without them states no such fact.
_MAY_STATE = re.compile(
    r":|\b(?:is|are|was|were|to|from|over|use|uses|using|prefer|prefers|like|likes|want|wants|"
    r"run|runs|hosted|live|lives)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Fact:
    """A subject and its value as one statement gives them."""

    subject: str  # normalised: content words, in order
    label: str  # the subject as written
    value: str  # as written (change words off)
    value_words: frozenset[str]
    negated: bool = False


def facts(text: str, speaker: str | None = None) -> list[Fact]:
    """The facts ``text`` states, one per clause at most; ``speaker`` scopes "I"/"my"."""
    found = []
    for clause in re.split(r";|\s[—–]\s|(?<=[.!?])\s+", text):
        if clause.rstrip().endswith("!"):  # an exclamation reacts; it states no value
            continue
        fact = _fact(clause.strip().rstrip("."), speaker)
        if fact is not None:
            found.append(fact)
    return found


def _fact(clause: str, speaker: str | None) -> Fact | None:
    if not clause or clause.endswith("?") or not _MAY_STATE.search(clause):
        return None
    if _SCOPED.search(_CHANGE.sub("", clause)):
        return None
    clause = re.sub(r"^(?:so|ok|okay|fyi|note|update|heads up)[,:]?\s+", "", clause, flags=re.I)
    for pattern in _PATTERNS:
        m = pattern.match(clause)
        if m is None:
            continue
        subject, value = m.group("s"), _CHANGE.sub("", m.group("v")).strip(" ,.;:")
        groups = m.groupdict()
        negated = bool(groups.get("neg"))
        if groups.get("verb"):  # "we use X for Y": one value per purpose
            verb = groups["verb"].lower().rstrip("s")
            if _SEEMING.search(subject):
                return None
            tool, _, purpose = value.partition(" for ")
            subject = f"{subject} {verb}" + (f" for {purpose}" if purpose else "")
            value = tool if purpose else value
        key = _subject(subject, speaker)
        words = _value_words(value)
        if key is None or not words or len(value.split()) > 8 or _activity(value):
            return None
        label = re.sub(r"^(?:the|our|a|an)\s+", "", _CHANGE.sub("", subject).strip(), flags=re.I)
        label = re.sub(r"\s+(?:from|as of)\s*$", "", label)
        return Fact(key, label, value, words, negated)
    return None


def _subject(text: str, speaker: str | None) -> str | None:
    first = text.split()[0].lower().replace("\u2019", "'") if text.split() else ""
    if first.endswith("ed") and len(first) > 4:  # "Booked the hotel: ...": an event
        return None
    if first in _PRONOUN and not text.lower().startswith(_OWN_HABITS):
        return None
    words = [w for w in content_words(_CHANGE.sub("", text)) if w not in ("new", "current")]
    if not words or len(words) > 8:
        return None
    if text.lower().startswith(("i ", "my ")) and speaker:
        words.insert(0, speaker.lower())
    return " ".join(words)


def _value_words(value: str) -> frozenset[str]:
    """A value's words as written ("staging-eu" is one word, and not "staging")."""
    found = (w.strip(".,;:!") for w in value.lower().split())
    return frozenset(w for w in found if w and w not in STOPWORDS and w not in _FILLER)


def _activity(value: str) -> bool:
    """A value that is something being done ("working on billing") or a verdict ("great",
    "so much fun"), not a state that a later one can replace."""
    first = value.split()[0].lower().strip(",.")
    if first in _VERDICTS:
        return True
    return first.endswith("ing") and first not in ("string", "staging", "thing", "morning")


def disagree(a: Fact, b: Fact) -> bool:
    """Two facts on one subject that cannot both hold: other values, or one denied."""
    if a.negated != b.negated:
        return a.value_words == b.value_words
    return not (a.value_words <= b.value_words or b.value_words <= a.value_words)
