"""What value a later statement gives anew where an earlier one gave another.

Read by ``memd.review.updates`` for a pair of statements it found to share words: the
kinds of value (``memd.review.values``) the newer one changes, with both sides; two
``Label:`` lines set to other words; and, with a change said and no value of a known
shape, the few words put where the older had others.
"""

from __future__ import annotations

import functools
import re

from memd.review.statements import stem
from memd.review.values import LETTERS, Said

_FEW = 3  # values of one kind a statement gives at most, to be one value for another
_SLOT = 4  # a Label: set to more words than this is a sentence, not a value
_LABEL_SHARE = 0.6  # of two labels' words, shared: one slot (Jaccard)
# Verbs that frame a value rather than name a subject ("we use", "goes to", "is kept"):
# counted at a fraction of their weight.
LIGHT = frozenset("use go get have make do keep put take run come set let need want".split())
# What follows names what was, whatever its shape: "by SMS instead of post", "Mailgun
# rather than Postmark", "anstatt der Wartung": a plain word as well as a value. Not a
# bare "statt": German verbs end on it too ("findet im Landhaus statt").
_REPLACING = re.compile(
    r"\b(?:instead of|rather than|in place of|replacing|anstatt|anstelle von)\s+"
    r"(?:(?:the|a|an|our|der|die|das|dem|den|ein|eine|einem|einer)\s+)?"
    r"([^\W\d_][\w-]*)",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)
def every_word(line: str) -> frozenset[str]:
    """Every word of a line as written, its reason and asides too (stemmed): asked only of
    the pairs read closely, so taking a note apart does not pay for it."""
    return frozenset(stem(w) for w in LETTERS.findall(line.lower()))


def names_of(d: Said) -> frozenset[str]:
    """The names a statement gives as values."""
    return d.values.get("name", frozenset())


def word_weight(word: str, idf: dict[str, float]) -> float:
    """A word's IDF, a light verb's at a fraction."""
    w = idf.get(word, 0.0)
    return w * 0.3 if word in LIGHT else w


def value_changes(o: Said, d: Said) -> list[tuple[str, frozenset[str], frozenset[str]]]:
    """The kinds of value ``d`` gives anew where ``o`` gave another, with both sides (a part
    of an old value, "Replica" after "Streaming-Replica", is none)."""
    out = []
    for kind in sorted(o.values.keys() & d.values.keys()):  # sorted: the same on every run
        mine, theirs = o.values[kind], d.values[kind]
        if kind == "num" and o.units and d.units:
            # A number is compared with one counting the same thing: "£18 a week" and
            # "£19.50 ... inside 5 miles" change the price, not the miles.
            same = o.units & d.units
            if not same:
                continue  # "3 bags" and "2 hours": not one quantity
            mine = frozenset(v for v in mine if o.unit_of.get(v, next(iter(same))) in same)
            theirs = frozenset(v for v in theirs if d.unit_of.get(v, next(iter(same))) in same)
        before = mine - o.left or mine  # what the older one says holds
        named = d.left & before  # "from 45", "(was Mondays)": the newer names the old value
        new = theirs - d.left - o.stems - every_word(o.uncut or o.text)  # not said at all
        new = frozenset(v for v in new if not any(v in w.split("-") for w in mine))
        if not new:
            continue
        if len(new) > len(before) and not named and not d.changed:
            # more new values than there were and no change said: a log or a list, which
            # still tells the two apart ("Ben ... Tuesdays and Wednesdays")
            out.append((kind, frozenset(), new))
            continue
        gone = named or (before - d.stems)
        if not gone and before <= set(o.topic) & set(d.topic):
            continue  # the name both open with is what they are about, not a value of it
        if len(new) > _FEW or len(gone or before) > _FEW:
            continue  # prose full of names or numbers, not one value for another
        if gone or d.changed:  # the old value kept beside the new: a change only if said
            out.append((kind, gone or before, new))
    if not out and o.slot and d.slot and len(o.slot) <= _SLOT and len(d.slot) <= _SLOT:
        new, gone = d.slot - o.slot, o.slot - d.slot
        if new and gone and same_label(o.stems - o.slot, d.stems - d.slot):
            out.append(("value", gone, new))
    return out


def same_label(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two labels name one slot when they share most of their words: "Backup target" and
    "Backup target", not "A&J guest count" and "A&J wedding" (one client, two slots)."""
    return bool(a & b) and len(a & b) >= _LABEL_SHARE * len(a | b)


def left_words(d: Said) -> frozenset[str]:
    """What ``d`` names as left behind: its values so named ("from 45", "was Mondays") and
    the words after "instead of" and its like, of any shape ("SMS instead of post")."""
    if not d.changed:
        return d.left
    named = {stem(m.group(1).lower()) for m in _REPLACING.finditer(d.text)}
    return d.left | (named & d.stems)


def loose_change(o: Said, d: Said, idf: dict[str, float]) -> list:
    """With a change said and no value of a known shape: the few words the newer one
    puts where the older had others ("The deploy target is staging" -> "... is production
    now"), when they share most of the rest. What it names as left behind is the older's
    ("go out by SMS instead of post" after "go out by post")."""
    theirs = d.stems - left_words(d)
    gone, new = o.stems - theirs - LIGHT, theirs - o.stems - LIGHT
    if not gone or not new or len(gone) > 3 or len(new) > 3:
        return []
    shared = sum(word_weight(w, idf) for w in o.stems & d.stems)
    differ = max(sum(word_weight(w, idf) for w in side) for side in (gone, new))
    if shared < differ:
        return []
    return [("value", frozenset(gone), frozenset(new))]
