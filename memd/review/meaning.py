"""How alike two statements are in meaning: the second signal for updates.

Words find an update; meaning confirms one. For a stated update, the finder asks how
alike the newer statement is to each of its candidates; where the older one is the
nearest, the two signals agree and the relation is ``confirmed``. The answer is the
cosine of their vectors placed on the model's band (0: unrelated, 1: related). Vectors
come through the index's embedding cache, so a statement is embedded once, across
restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import memd.embed.numpy_lazy as np
from memd.errors import MemdError
from memd.log import get_logger

if TYPE_CHECKING:
    from memd.index.index import Index

log = get_logger()

_BATCH = 256  # texts embedded per refresh at most: a large vault's first pass spreads out


class Meaning:
    """``near(a, b)`` for ``memd.review.updates``: known texts answer at once; unknown
    ones answer None and are embedded by the next ``fill``."""

    def __init__(self, index: Index, keep: Callable[[Sequence[tuple[bytes, bytes]]], None]):
        self._index, self._keep = index, keep
        self._vectors: dict[str, np.ndarray] = {}
        self.wanted: set[str] = set()
        low, high = index.embedder.cosine_band  # Currency asks only an embedder with one
        self._low, self._span = low, max(high - low, 1e-6)

    def __call__(self, a: str, b: str) -> float | None:
        va, vb = self._vectors.get(a), self._vectors.get(b)
        if va is None or vb is None:
            self.wanted.update(t for t, v in ((a, va), (b, vb)) if v is None)
            return None
        return (float(va @ vb) - self._low) / self._span

    def fill(self) -> bool:
        """Embed a batch of the texts asked about; whether any were (a dead embedder costs
        the second signal, logged, never the relations words alone find)."""
        texts = sorted(self.wanted)[:_BATCH]
        self.wanted.difference_update(texts)
        if not texts:
            return False
        try:
            vectors, entries = self._index.embed_cached(texts, "passage")
            self._keep(entries)
        except MemdError as exc:
            log.warning("meaning_unavailable", error=str(exc))
            self.wanted.clear()
            return False
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, 1e-12)
        self._vectors.update(zip(texts, vectors, strict=True))
        return True

    @property
    def pending(self) -> bool:
        """Whether texts wait to be embedded (the next refresh pairs again)."""
        return bool(self.wanted)
