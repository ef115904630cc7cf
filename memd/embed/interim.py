"""The interim tier: a passage's vector made from its words' vectors, each word embedded once.

The full model costs a fraction of a second per chunk on a laptop's cores, so a large vault
waits hours to be searchable by meaning. Its vocabulary is far smaller than its text:
embedding each distinct word once (one short input) and summing a passage's words, weighted
by their idf in the workspace and less the words' common direction, gives every chunk a
usable vector in minutes. Measured (docs/benchmarks.md): alone well below the full model;
in hybrid search a little above keyword search alone on conversations (locomo-dev), a
little below it at the top ten on scientific claims (SciFact). The full model's vectors
replace these chunk by chunk as the back-fill reaches them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

import memd.embed.numpy_lazy as np

_WORD = re.compile(r"[^\W_]+")
# Cosines of (unrelated, clearly related) interim vectors: memd's 0-1 vector score, as the
# model's band is for its vectors. Here it is (0, 2): even the same words read 0.5, for
# these vectors are weaker evidence (locomo-dev: unrelated cosines ~0.15, related ~0.47);
# a band of (0.1, 0.9) ranked worse on locomo-dev and SciFact alike.
INTERIM_BAND = (0.0, 2.0)
# One-word inputs per request: as fast per word as 256 with the local model, and a search's
# own embedding waits for one batch at most (256 of them held it for over a second).
WORD_BATCH = 32
# The most words a back-fill's interim tier embeds (the local model: ~8 ms of CPU each, so
# a 10,000-note vault's fits in about 3 CPU-minutes with the rest of the tier's work).
VOCABULARY_CAP = 12_000
_LONGEST_WORD = 24  # longer "words" are hashes, keys or glued URLs
_HEXLIKE = re.compile(r"(?:0x)?[0-9a-f]{4,}")


def words(text: str) -> list[str]:
    """The words of ``text`` as the interim tier counts them: lower-cased letters and digits."""
    return _WORD.findall(text.lower())


def wordlike(word: str) -> bool:
    """Whether a token is a word worth a vector: not a number, a hash, a hex string, an
    address or a key (a security vault's notes had 16,377 distinct such tokens of 33,872,
    and embedding every one kept its interim tier from ever finishing). A few digits in a
    short word stay (``2fa``, ``mp3``, ``k8s``)."""
    if len(word) > _LONGEST_WORD:
        return False
    digits = sum(c.isdigit() for c in word)
    if not digits:
        return True
    if _HEXLIKE.fullmatch(word):  # 0x7ffe, ab12cd: hex with a digit
        return False
    return digits <= 2 and len(word) <= 8 and len(word) - digits >= 2


class WordVectors:
    """Each word's vector (from ``embed``, once), the idf of words over a set of texts and
    the words' mean direction; composes a text's vector from them."""

    def __init__(self, embed: Callable[[list[str], bool], np.ndarray], dims: int) -> None:
        self._embed = embed
        self.dims = dims
        self.table: dict[str, np.ndarray] = {}
        self._df: Counter[str] = Counter()
        self._texts = 0
        self._center: np.ndarray | None = None

    def count(self, texts: Iterable[list[str]]) -> None:
        """Count each text's distinct words into the document frequencies."""
        for bag in texts:
            self._texts += 1
            self._df.update(set(bag))

    def vocabulary(self, cap: int = VOCABULARY_CAP) -> set[str]:
        """The words counted that a back-fill embeds: word-like ones (``wordlike``), those
        in two texts or more before those in one, the most frequent first, at most ``cap``.
        A word left out adds nothing to a passage's vector (the keyword side still finds
        it); a search's own words are embedded whatever they are."""
        ranked = sorted((w for w in self._df if wordlike(w)), key=lambda w: (-self._df[w], w))
        return set(ranked[:cap])

    def learn(
        self, bags: Iterable[list[str]], first: bool = False, only: set[str] | None = None
    ) -> int:
        """Embed the words of ``bags`` not seen before (``first``: for a search, ahead of
        any back-fill; ``only``: just these words); how many were new."""
        seen = {w for bag in bags for w in bag}
        new = sorted((seen if only is None else seen & only) - self.table.keys())
        for i in range(0, len(new), WORD_BATCH):
            part = new[i : i + WORD_BATCH]
            vectors = self._embed(part, first)
            self.dims = vectors.shape[1]  # a provider tells its size on its first answer
            self.table.update(zip(part, vectors, strict=True))
        if new and self._center is None:
            # The common direction of word vectors: fixed once, so vectors made before
            # and after more words arrive stay comparable.
            self._center = np.mean(np.stack(list(self.table.values())), axis=0)
        return len(new)

    def idf(self, word: str) -> float:
        return math.log((self._texts + 1) / (self._df.get(word, 0) + 0.5))

    def compose(self, bags: list[list[str]]) -> np.ndarray:
        """Normalised vectors of ``bags``; a word never learned adds nothing (a bag with
        none gives a zero vector, near nothing)."""
        out = np.zeros((len(bags), self.dims), dtype=np.float32)
        center = self._center if self._center is not None else 0.0
        for row, bag in enumerate(bags):
            for word, n in Counter(bag).items():
                vector = self.table.get(word)
                if vector is not None:
                    out[row] += n * self.idf(word) * (vector - center)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)
