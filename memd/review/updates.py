"""Updates: a later statement that gives a subject another value than an earlier one.

For each statement, its nearest strictly older statements are found by IDF-weighted
overlap of their words (rare words say what a statement is about; a value changes, its
subject stays). Each is read for values of one kind (``memd.review.values``): where the
later one holds a value the earlier does not, of a kind the earlier also gives, the rules
take it for an update, and the judge (``memd.review.judge``) keeps the likeliest of those
it does not find unlikely. A change word ("now", "switched", "was", "instead") makes a
relation ``stated``; without one it is ``likely``. With meaning at hand, a stated one whose
older statement is also, of the newer one's candidates, the nearest in meaning is
``confirmed``: two signals that agree. Nothing here is a list of phrasings.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from memd.review.changes import (
    LIGHT,
    loose_change,
    names_of,
    same_label,
    value_changes,
    word_weight,
)
from memd.review.compounds import with_parts
from memd.review.judge import Reading, accepted, describe, kind_feature, probability
from memd.review.statements import Statement
from memd.review.values import Said, said

# A session's turns, however the dump labels them: what was asked and answered, not facts.
TURNS = frozenset("user assistant system human ai bot agent tool model claude gpt".split())
_PROSE = 300  # characters: a statement longer than this is prose, as is one of 4 sentences
# A question, wherever it stands ("is 85% too low? check", "\"Can you find out?\" → ...").
_ASKS = re.compile(r"\?[\"'”’)]*(?:\s|$)")
_SENTENCES = re.compile(r"[.!?]\s+(?=[A-Z])")
_ROUTINE = 5  # older statements on one subject with other values: past this, a log
_ROUTINE_DF = 8  # statements holding even the rarest of its subject words: past this, routine
_POOL = 12  # candidates read closely per statement, the most overlapping first
_COMMON = 0.05  # a word in more than this share of statements finds no candidates
_COVER = 0.45  # the share of a statement's subject (IDF-weighted) the other must share
_WHOLE = 0.7  # one shared word is a subject only when it is (nearly) all of one side


@dataclass(frozen=True)
class Update:
    """``newer`` gives the subject of ``older`` another value (``was`` -> ``now``)."""

    older: Statement
    newer: Statement
    kind: str  # the kind of value that changed ("num", "day", "name", "value", ...)
    was: str
    now: str
    likely: bool  # no change word: found by subject and value alone
    score: float  # how much of the subject the two share (0..1)
    # Stated, and of the newer one's candidates the older is the nearest in meaning: two
    # signals that agree, right often enough for search to rank by (memd.search.superseded).
    confirmed: bool = False


def eligible(s: Statement) -> bool:
    """A statement that can state a fact: not a task or question, not a session's turn,
    not a line that introduces what follows."""
    if s.task or s.text.rstrip().endswith(":") or _ASKS.search(s.text) or len(s.text) > _PROSE:
        return False  # a paragraph of prose states many things, not one value for a subject
    if len(_SENTENCES.findall(s.text)) > 2:
        return False
    return not (s.speaker and s.speaker.lower().split()[0] in TURNS)


# How alike two statements' texts are in meaning (a cosine placed on the model's band:
# 0 unrelated, 1 related), or None when unknown (``memd.review.meaning``).
Near = Callable[[str, str], "float | None"]


def find_updates(
    every: Sequence[Statement],
    when: Callable[[Statement], str],
    near: Near | None = None,
    collect: list | None = None,
) -> list[Update]:
    """Every update among ``every``: each statement's nearest older one that it gives
    another value. ``when`` orders them (a daily note's date; "" for the oldest).
    ``collect`` gathers every candidate pair's (older, newer, features), to fit the judge."""
    return pair(read(every), when, near, collect)


def read(every: Iterable[Statement]) -> list[tuple[Statement, Said]]:
    """The statements that can state a fact, each taken apart (``said``)."""
    items = [(s, _scoped(said(_text(s)), s.lead)) for s in every if eligible(s)]
    return [(s, d) for s, d in items if not d.past_event and d.stems]


def _scoped(d: Said, lead: str | None) -> Said:
    """``d`` with the words of the item it is nested under as part of its subject: under
    "Logistik Nord gets its own limit:", "Limit: 1200/min" is that customer's limit."""
    if not lead:
        return d
    above = said(lead)
    return replace(d, stems=d.stems | above.stems, scope=(names_of(above) | above.owners) - d.stems)


def pair(
    taken: Iterable[tuple[Statement, Said]],
    when: Callable[[Statement], str],
    near: Near | None = None,
    collect: list | None = None,
) -> list[Update]:
    """``find_updates`` over statements already taken apart (``read``)."""
    items = sorted(with_parts(list(taken)), key=lambda sd: (when(sd[0]), sd[0].path, sd[0].line))
    n = len(items)
    if n < 2:
        return []
    df: Counter[str] = Counter()
    for _, d in items:
        df.update(d.stems)
    idf = {w: math.log(1 + (n + 1) / (c + 0.5)) for w, c in df.items()}
    common = max(50, int(_COMMON * n))
    frequent = {w for w, c in df.items() if c > common}
    postings: dict[str, list[int]] = defaultdict(list)
    found: list[Update] = []
    for j, (_, d) in enumerate(items):
        rare = d.stems - frequent
        if d.values or d.slot or d.changed:
            ordered = sorted(rare)  # ties break alike each run
            found += _judged(j, items, d, ordered, postings, idf, df, when, near, collect)
        for w in rare:
            postings[w].append(j)
    return found


def _judged(
    j: int,
    items: list[tuple[Statement, Said]],
    d: Said,
    rare: list[str],
    postings: dict[str, list[int]],
    idf: dict[str, float],
    df: Counter[str],
    when: Callable[[Statement], str],
    near: Near | None,
    collect: list | None,
) -> list[Update]:
    s = items[j][0]
    overlap: Counter[int] = Counter()
    for w in rare:
        for i in postings.get(w, ()):
            overlap[i] += idf[w]
    mine, read = when(s), []
    pool = [i for i, _ in overlap.most_common(_POOL) if when(items[i][0]) < mine]
    for i in pool:
        older = items[i][1]
        # Words find an update; meaning only confirms one (``_nearest``). Asked inside
        # the reading too, meaning found a few more and was wrong more often (bench
        # figures, report halves and two writers' sets: 10 more right, 13 more false).
        if r := _reading(older, d, idf, collect is not None):
            read.append((i, r))
    changing = [(i, r) for i, r in read if r.change is not None]
    # Only a pair the rules take can be judged an update; fitting reads every pair.
    judged = [(i, r) for i, r in changing if collect is not None or r.features["rules"]]
    if not judged:
        return []
    newest = max(i for i, _ in changing)
    best_cover = max(r.features["cover"] for _, r in read)
    for i, r in judged:
        frame = [df[w] for w in d.stems - d.value_stems if w in items[i][1].stems]
        r.features.update({
            "first": float(i == read[0][0]),
            "behind": best_cover - r.features["cover"],
            "newest": float(i == newest),
            "routine": min(len(changing), 6) / 6,
            "frame_common": min(min(frame, default=0), _ROUTINE_DF * 2) / (_ROUTINE_DF * 2),
            "older_undated": float(not when(items[i][0])),
        })  # fmt: skip
    scored = sorted(((probability(r.features), i, r) for i, r in judged), reverse=True)
    if collect is not None:
        collect += [(items[i][0], s, r.features) for _, i, r in scored]
    # The rules propose (a pair they turn down is no update); the judge turns down those
    # of their pairs it finds unlikely, on evidence the rules do not weigh together.
    scored = [x for x in scored if x[2].features["rules"]]
    if not scored or len(scored) >= _ROUTINE:
        return []  # said with another value again and again: a log ("ran 5 km"), no fact
    p, _, top = scored[0]
    # Its words, values aside, said on _ROUTINE_DF days or more: a routine line, no fact.
    if not accepted(p) or top.features["frame_common"] >= 0.5:
        return []
    kind, _, now = top.change
    nearest = _nearest(pool, items, d, near) if d.changed and near is not None else None
    return [
        Update(
            items[i][0], s, *r.change, not d.changed, round(r.features["cover"], 3), i == nearest
        )
        for p, i, r in scored
        if accepted(p) and r.change[0] == kind and r.change[2] == now
    ]


def _nearest(
    pool: list[int], items: list[tuple[Statement, Said]], d: Said, near: Near
) -> int | None:
    """Of the candidates ``pool``, the one nearest ``d`` in meaning; None while any one's
    meaning is unknown (asking names it, so a later pass knows it)."""
    alike = {i: near(items[i][1].text, d.text) for i in pool}
    if not alike or None in alike.values():
        return None
    return max(alike, key=lambda i: (alike[i], -i))


def _compare(
    o: Said, d: Said, idf: dict[str, float], changes: list | None = None
) -> tuple[float, tuple | None] | None:
    """How much of one subject two statements share, and the value the newer ``d`` changes
    (None: the same values); None when they are not about one subject. ``changes``: what
    ``_changes`` gave for the two, if it was asked already."""
    if o.owners and d.owners and not o.owners & d.owners:
        return None  # "Ana's shift" and "Ben's shift": two people's
    if d.scope - o.stems or o.scope - d.stems:
        return None  # nested under a line naming what the other never names: its own
    changes = value_changes(o, d) if changes is None else changes
    moved = {v for _, was, now in changes for v in (*was, *now)}
    shared = (o.stems & d.stems) - moved
    if _told_apart(o, d, shared):
        return None  # "Phone lines" and "Prescription line", "Ref fee" and "Linesman fee"
    weight = sum(word_weight(w, idf) for w in shared)
    mine = sum(word_weight(w, idf) for w in d.stems - moved)
    theirs = sum(word_weight(w, idf) for w in o.stems - moved)
    cover = max(weight / mine if mine else 0.0, weight / theirs if theirs else 0.0)
    if not _one_subject(o, d, shared, cover, bool(changes)):
        return None
    if not changes and d.changed:
        changes = loose_change(o, d, idf)
    if not changes:
        if d.negated and not o.negated and d.changed:
            return cover, ("negated", o.written(o.value_stems), "no longer")
        return cover, None
    if len(changes) > 1 and (not d.changed or any(k == "name" for k, _, _ in changes)):
        return None  # two values differ at once (a name among them): another thing
    if not changes[0][1]:
        return None  # only a list of new values
    apart = names_of(d) - o.stems and names_of(o) - d.stems
    if changes[0][0] != "name" and apart and not d.changed:
        return None  # each names someone or something the other does not: two things
    kind, was, now = changes[0]
    if was <= o.denied and not d.negated and not d.left & was:
        return None  # "no X on A", then "X on B": B is not what A was (nothing was set)
    return cover, (kind, o.written(was), d.written(now))


def _reading(o: Said, d: Said, idf: dict[str, float], full: bool = True) -> Reading | None:
    """The pair's features for the judge (the rules' verdict among them) and the value the
    newer gives anew; not ``full``, a pair the rules turn down gets its verdict alone."""
    changes = value_changes(o, d)
    ruled = _compare(o, d, idf, changes)
    taken = ruled is not None and ruled[1] is not None
    loose = False
    if not changes:
        changes = loose_change(o, d, idf)
        loose = bool(changes)
    moved = {v for _, was, now in changes for v in (*was, *now)}
    shared = (o.stems & d.stems) - moved
    if not shared:
        return None
    weight = sum(word_weight(w, idf) for w in shared)
    mine = sum(word_weight(w, idf) for w in d.stems - moved) or 1.0
    theirs = sum(word_weight(w, idf) for w in o.stems - moved) or 1.0
    cover = max(weight / mine, weight / theirs)
    change, f = None, {"rules": float(taken), "cover": cover}
    if changes and changes[0][1]:
        kind, was, now = changes[0]
        f["named_old"] = float(bool(d.left & was))
        f[kind_feature(kind)] = 1.0
        change = (kind, o.written(was), d.written(now))
    elif d.negated and not o.negated and d.changed:
        change = ("negated", o.written(o.value_stems), "no longer")
    elif changes:
        f["only_new"] = 1.0
    if not (full or taken):
        return Reading(change, f)
    labels = (o.stems - o.slot if o.slot else set()) | (d.stems - d.slot if d.slot else set())
    f.update(describe(o, d))
    f.update({
        "cover_both": min(weight / mine, weight / theirs),
        "one_word": float(len(shared) == 1),
        "words": min(len(shared), 4) / 4,
        "value_word": float(len(shared) == 1 and shared <= o.value_stems | d.value_stems),
        "label_only": float(bool(shared) and shared <= labels),
        "same_label": float(bool(o.slot and d.slot)
                            and same_label(o.stems - o.slot, d.stems - d.slot)),
        "owners_apart": float(bool(o.owners and d.owners and not o.owners & d.owners)),
        "told_apart": float(_told_apart(o, d, shared)),
        "named_apart": float(bool(names_of(d) - o.stems and names_of(o) - d.stems)),
        "new_share": sum(word_weight(w, idf) for w in d.stems - o.stems - moved) / mine,
        "gone_share": sum(word_weight(w, idf) for w in o.stems - d.stems - moved) / theirs,
        "several": float(len(changes) > 1),
        "loose": float(loose),
    })  # fmt: skip
    return Reading(change, f)


def _one_subject(o: Said, d: Said, shared: set[str], cover: float, shaped: bool = False) -> bool:
    """Whether the shared words (values aside) make one subject; ``shaped``: a value changed."""
    if not shared or (len(shared) == 1 and not shared <= names_of(o) | names_of(d) | d.owners
                      and shared <= o.value_stems | d.value_stems):  # fmt: skip
        return False  # one number, time or date in common ("15") is no subject
    if shaped and _topical(o, d, shared):
        return True  # (where no value of a shape changed, a topic may be a frame: "Customer:")
    if cover < _COVER:
        return False
    labels = (o.stems - o.slot if o.slot else set()) | (d.stems - d.slot if d.slot else set())
    # One word in common: only when it is nearly all one of them is about, and never a
    # label alone ("Repo:", "Model:" over lines about different things).
    return not (len(shared) == 1 and (cover < _WHOLE or shared <= labels))


def _topical(o: Said, d: Said, shared: set[str]) -> bool:
    """Whether both open with a shared word, the head of one opening: what both are about
    ("School pickup is at 3:15", "Pickup moved to 2:50"). One that only modifies each
    ("annual fee", "annual insurance") names two things; two labels alone name none."""
    if not (o.topic and d.topic) or (o.slot and d.slot):
        return False
    both = shared & set(o.topic) & set(d.topic) - LIGHT
    return o.topic[-1] in both or d.topic[-1] in both


def _told_apart(o: Said, d: Said, shared: set[str]) -> bool:
    """Whether a word both say is modified differently in each: the word before it in one
    is not said at all in the other, and the other way round (two items framed alike)."""
    heads = {o.last, d.last} if d.changed else set()  # a value's own head ("blue cluster")
    for w in shared - heads:
        a, b = o.before.get(w), d.before.get(w)
        if a and b and a != b and a not in d.stems and b not in o.stems:
            return True
    return False


def _text(s: Statement) -> str:
    """The statement with its label: a key memd stores, or a bold one ("**Bank:** Monzo")."""
    if s.key:
        return f"{s.key}: {s.text}"
    if s.speaker:
        return f"{s.speaker}: {s.text}"
    return s.text
