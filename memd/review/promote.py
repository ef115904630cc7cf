"""Promotions: durable statements of daily notes that MEMORY.md does not hold yet.

A statement qualifies when two readings agree: its form (``memd.review.lasting``: a
fitted model of what a person keeps, coming back on two or more days among its features)
and its words (``memd.review.durable``'s cues); it is left out when
MEMORY.md already says it, in words (most of its content words in one of MEMORY.md's
statements) or in meaning (the embedder's cosine, when there is one, high on the model's
own scale).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass

import memd.embed.numpy_lazy as np
from memd.review.durable import could_be_durable, durability
from memd.review.lasting import lasting
from memd.review.statements import Statement, content_words

# Two readings weigh a line: its form (``lasting``, fitted) and the cue lists
# (``durable``). A line is proposed only where both clear their own bars, ranked by their
# mean: either alone was wrong more often than both together (measured on the labelled
# promotions' report half and on the agents' workspaces; their mean over the mean of the
# bars sat between the two).
_CUE_AT = 0.5  # the cue lists' own bar
_REPEATED = 0.3  # what saying it on another day adds to the cue lists' score
_SAME_WORDS = 0.6  # share of its content words MEMORY.md must hold for "already there"
_SAME_MEANING = 0.85  # cosine on the model's 0-1 scale for "already there in meaning"
MEANING_CHECKED = 200  # the best candidates checked by meaning (one embedding call each)

# Texts to unit vectors (rows), or None: keyword evidence only.
Embed = Callable[[list[str]], "np.ndarray"]


@dataclass
class Promotion:
    """A statement worth keeping, with every day it was said on."""

    said: list[Statement]  # oldest first; the newest is the wording kept
    score: float
    why: list[str]

    @property
    def newest(self) -> Statement:
        return self.said[-1]


def promotions(
    daily: Sequence[Statement],
    core: Sequence[Statement],
    turns: Set[tuple[str, int]] = frozenset(),
) -> list[Promotion]:
    """Durable statements of ``daily`` that ``core`` (MEMORY.md) does not hold in words,
    best first (``known_in_meaning`` checks meaning); ``turns``: the (path, line) of those
    that are turns of a conversation (``memd.review.lasting.dialogue``)."""
    groups: dict[frozenset[str], list[Statement]] = defaultdict(list)
    for s in daily:
        if s.key is None and not s.task:
            groups[frozenset(content_words(s.text))].append(s)
    held = _WordsHeld([frozenset(content_words(s.text)) for s in core])
    found = []
    for words, said in groups.items():
        if len(words) < 2:
            continue
        newest = said[-1]
        days = len({s.date for s in said})
        if days < 2 and not could_be_durable(newest.text, newest.heading):
            continue  # no cue, said once: the cue lists cannot reach their bar (most lines)
        cue, cued = durability(newest.text, newest.heading)
        if days >= 2 and len(words) >= 3:
            cue = min(cue + _REPEATED, 1.0)
        if cue < _CUE_AT:
            continue
        turn = (newest.path, newest.line) in turns
        form, why = lasting(newest, days if len(words) >= 3 else 1, turn)
        if not why or held.holds(words):
            continue
        score = (form + cue) / 2
        why = [f"said on {days} days" if w == "said again on another day" else w for w in why]
        why = list(dict.fromkeys([*cued, *why]))[:3]
        found.append(Promotion(said, round(score, 3), why))
    found.sort(key=lambda p: (-p.score, p.newest.date or "", p.newest.line))
    return found


class _WordsHeld:
    """Whether some statement holds most of a set of words (an inverted index: MEMORY.md
    has hundreds of lines, daily notes hundreds of thousands)."""

    def __init__(self, sets: list[frozenset[str]]) -> None:
        self._sets = sets
        self._by_word: dict[str, list[int]] = defaultdict(list)
        for n, words in enumerate(sets):
            for w in words:
                self._by_word[w].append(n)

    def holds(self, words: frozenset[str]) -> bool:
        shared: dict[int, int] = defaultdict(int)
        for w in words:
            for n in self._by_word.get(w, ()):
                shared[n] += 1
        return any(count >= _SAME_WORDS * len(words) for count in shared.values())


def known_in_meaning(
    texts: Sequence[str], core: Sequence[str], embed: Embed, band: tuple[float, float]
) -> set[int]:
    """Which of ``texts`` (the best ``MEANING_CHECKED``) one of ``core``'s lines already says
    in other words: a cosine high on the model's own scale."""
    checked = list(texts[:MEANING_CHECKED])
    if not checked or not core:
        return set()
    vectors = embed([*checked, *core])
    mine, theirs = vectors[: len(checked)], vectors[len(checked) :]
    lo, hi = band
    closest = ((mine @ theirs.T).max(axis=1) - lo) / (hi - lo)
    return {n for n, c in enumerate(closest) if c >= _SAME_MEANING}
