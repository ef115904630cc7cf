"""A compound word holds its parts: "Tagesgeldkonto" is about "Tagesgeld", and
"Flüssigstickstoff-Tank" about "Flüssigstickstoff".

German joins the words of a subject into one ("Tagesgeldkonto", "Kaffeemaschinenwartung"),
and a later note may name it by one part ("Tagesgeld liegt jetzt bei ..."); any language
joins them with a hyphen. Without a dictionary the parts are not known, but the words of
the other statements are: a long word that begins or ends with one of them, or joins it
with a hyphen, holds it as a word of its subject too (``memd.review.updates``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from memd.review.values import Said

_PART = 5  # letters a part has at least ("Konto" is one, "Amt" is too short to tell)
_REST = 3  # letters the rest of the compound has at least


def with_parts(taken: list[tuple[object, Said]]) -> list[tuple[object, Said]]:
    """``taken`` with each statement's compounds' parts among its stems, where a part is a
    word another statement says (a word alone, not a part of a compound: no chains)."""
    # Only German text and hyphens make compounds: most workspaces have few, and every
    # refresh pairs all statements (a quarter of a second on 5,000 notes with none).
    joined = [i for i, (_, d) in enumerate(taken) if d.german or "-" in d.text]
    if not joined:
        return taken
    words = {w for _, d in taken for w in d.stems if w.isalpha()}
    out = list(taken)
    for i in joined:
        s, d = taken[i]
        parts = {p for w in d.stems if len(w) >= _PART + _REST for p in _parts(w, words, d.german)}
        parts -= d.stems
        if parts:
            out[i] = (s, replace(d, stems=d.stems | parts))
    return out


def _parts(word: str, words: set[str], german: bool) -> Iterable[str]:
    """The words of ``words`` that ``word`` joins with a hyphen, or (in German, where
    compounds are written as one word) begins or ends with."""
    if "-" in word:
        yield from (p for p in word.split("-") if len(p) >= _PART and p in words)
        return
    if not (german and word.isalpha()):
        return  # "countdown" is no count, "Cyclescheme" a name
    for cut in range(_PART, len(word) - _REST + 1):
        head, tail = word[:cut], word[cut:]
        if head in words:
            yield head
        if len(tail) >= _PART and tail in words:
            yield tail
