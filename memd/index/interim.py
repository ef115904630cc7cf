"""The interim tier of one workspace's vectors, while the full model back-fills them.

Made once a back-fill is large (``memd.embed.interim``): every chunk the full model has not
reached gets passage vectors from its words, newest notes first, held in memory only (they
are made again in minutes after a restart, and dropped when the back-fill ends).
"""

from __future__ import annotations

import threading
from collections.abc import Collection

import memd.embed.numpy_lazy as np
from memd.embed.interim import INTERIM_BAND, WORD_BATCH, WordVectors, words
from memd.embed.providers import Embedder
from memd.sources.passages import passages
from memd.store.vectors import VectorIndex

_SLICE = 400  # chunks made searchable at a time


class InterimTier:
    """Interim passage vectors of the chunks that had no full vector when it was made."""

    band = INTERIM_BAND

    def __init__(self, embedder: Embedder, hide: Collection[str]) -> None:
        dims = embedder.dimensions or 0
        self.words = WordVectors(
            lambda batch, first: embedder.embed(batch, "passage", WORD_BATCH, first), dims
        )
        self.vectors = VectorIndex("interim")
        self._hide = hide
        self.done = 0  # chunks with interim vectors
        self.total = 0  # chunks it is making them for

    def build(self, chunks: list[tuple], cancel: threading.Event) -> None:
        """Vectors for ``chunks`` (``Store.pending_chunks`` rows, in its order), a slice at
        a time, each searchable as soon as it is made; stops early when ``cancel`` is set.
        Embeds (slow: minutes for a large vault); may raise ``BackendUnavailable``."""
        self.total = len(chunks)
        # The words' idf over the whole back-fill, as FTS5's is over the index; passages
        # are cut a slice at a time (cutting 40k chunks at once took a minute and 300 MB).
        self.words.count(words(f"{heading}\n{body}") for _, heading, body, _, _ in chunks)
        for start in range(0, len(chunks), _SLICE):
            if cancel.is_set():
                return
            rows = [
                (chunk_id, n, words(text))
                for chunk_id, heading, body, date, path in chunks[start : start + _SLICE]
                for n, text in enumerate(passages(heading, body, date, path, self._hide))
            ]
            self.words.learn(bag for _, _, bag in rows)
            self.vectors.add(
                np.array([r[0] for r in rows], dtype=np.int64),
                np.array([r[1] for r in rows], dtype=np.int32),
                self.words.compose([r[2] for r in rows]),
            )
            self.done = min(start + _SLICE, len(chunks))

    def query(self, text: str) -> np.ndarray | None:
        """The question's interim vector, its words not in the workspace embedded now
        (they carry its meaning most: "hobbies" for notes that say "painting"); None when
        it has no word. May raise ``BackendUnavailable``."""
        bag = words(text)
        self.words.learn([bag], first=True)
        vector = self.words.compose([bag])[0]
        return vector if vector.any() else None
