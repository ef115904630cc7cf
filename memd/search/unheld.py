"""A question that names something no note holds: nothing answers it surely.

"What did Lena decide about the Spain section?" over notes that never say "Spain" may still
match a note about another section's decision, on its other words or its meaning; that note
is not the answer. A name (a capitalised word inside a sentence: "Spain", "Kenyan",
"Paddle") that no chunk of the index holds makes every result weak, whatever else matches.

Any other word no chunk holds ("ballet" in "what time is Ada's ballet class?" over notes
about her piano lesson) may still be said in other words ("dance class"), so it is judged
by meaning: a result holds the word's meaning when the question is nearer to it with the
word than without it. A note about the piano lesson is as near to "what time is Ada's
class?" as to the question; one about her dance class is nearer to the question. When the
best result does not hold it, every result is weak (judging each result alone reordered
the list and cost locomo-dev 0.015 of R@1). The question is read without its time words,
which say when, not what.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.search.ranking import Candidate
from memd.store.base import Store
from memd.store.fts import match_query

_ENDS = (".", "?", "!", ":", ";")  # after these a capital starts a sentence, names nothing
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
_POSSESSIVE = re.compile(r"['’]s?$")
_ABBREVIATION = re.compile(r"[A-Z][a-z]{0,2}\.")  # "Dr.", "Mrs.", "St.": a title, no name
_POSSESSIVE_INSIDE = re.compile(r"(?<=\w)['’]s\b")

# How much nearer a result must be to the question than to the question without its
# unheld words (a cosine difference) to hold their meaning. Set on the tune halves of
# tests/data/timeq and bench/time_questions_more.json, checked on locomo-dev
# (docs/benchmarks.md).
HOLDS_MEANING = 0.0
# How far the question's vector moves when its unheld words are left out (1 - cosine) for
# them to matter: "what happened to the bucket?" hardly moves without "happened".
MATTERS = 0.03


def names(question: str) -> list[str]:
    """The capitalised words inside the question's sentences (not their first words, nor
    "I"), as written."""
    found = []
    words = question.split()
    for before, word in zip([".", *words], words, strict=False):
        bare = _POSSESSIVE.sub("", _EDGE.sub("", word))  # "Caroline's" names Caroline
        inside = not before.endswith(_ENDS) and not _ABBREVIATION.fullmatch(word)
        if inside and bare[:1].isupper() and bare not in ("I", "I'm", "I've", "I'd", "I'll"):
            found.append(bare)
    return found


def names_unheld(store: Store, question: str) -> bool:
    """Whether the question names something no chunk of the index holds."""
    named = names(question)
    match = match_query(" ".join(named)) if named else None
    if match is None:
        return False
    return 0 in store.term_counts(match)[1]


def unheld_words(store: Store, question: str) -> list[tuple[str, ...]]:
    """The question's words (not its stopwords) that no chunk of the index holds, each as
    its word forms; "John's" is John's word (notes say "John:", never "John's")."""
    match = match_query(_POSSESSIVE_INSIDE.sub("", question))
    if match is None:
        return []
    counts = store.term_counts(match)[1]
    return [forms for forms, n in zip(match.words, counts, strict=True) if n == 0]


def without(question: str, words: Sequence[tuple[str, ...]]) -> str:
    """The question with ``words`` left out (a word as written: "ballet", "Ada's")."""
    unheld = set(words)

    def kept(token: str) -> bool:
        match = match_query(_POSSESSIVE_INSIDE.sub("", token))
        return match is None or not all(forms in unheld for forms in match.words)

    return " ".join(t for t in question.split() if kept(t))


def best_unsaid(
    store: Store,
    question: str,
    cands: list[Candidate],
    embed: Callable[[str], np.ndarray | None] | None,
) -> bool:
    """Whether the best candidate leaves out the meaning of a question's word no chunk
    holds; then nothing answers the question surely. Without vectors (``embed`` is None,
    or the best has none) it cannot be told: keyword evidence already weighs the word
    it lacks, and judging every such question unanswered cost more answers than it saved
    (bench/time_questions_bench.py)."""
    if embed is None or not cands:
        return False
    best = max(cands, key=lambda c: c.relevance)
    words = unheld_words(store, question) if best.vec is not None else []
    rest = without(question, words)
    if not words or not rest.strip():
        return False
    whole, short = embed(question), embed(rest)
    if whole is None or short is None:
        return False
    if 1 - float(whole @ short) < MATTERS:  # the words hardly change what is asked
        return False
    return float(best.vec @ whole) - float(best.vec @ short) <= HOLDS_MEANING
