"""A question that names something no note holds: nothing answers it surely.

"What did Lena decide about the Spain section?" over notes that never say "Spain" may still
match a note about another section's decision, on its other words or its meaning; that note
is not the answer. A name (a capitalised word inside a sentence: "Spain", "Kenyan",
"Paddle") that no chunk of the index holds makes every result weak, whatever else matches.
The question is read without its time words, which say when, not what.
"""

from __future__ import annotations

import re

from memd.store.base import Store
from memd.store.fts import match_query

_ENDS = (".", "?", "!", ":", ";")  # after these a capital starts a sentence, names nothing
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
_POSSESSIVE = re.compile(r"['’]s?$")
_ABBREVIATION = re.compile(r"[A-Z][a-z]{0,2}\.")  # "Dr.", "Mrs.", "St.": a title, no name


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
