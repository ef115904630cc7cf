"""Nearest chunks by meaning: an in-memory float32 matrix, top-k by dot product.

Vectors are normalised, so the dot product is the cosine. Brute force is fast to ~10^5
chunks; ``VectorIndex`` is the one seam an ANN index would replace. It loads rows it has
not seen yet from the store (by row id), so keeping it current costs only the new rows.
Chunks that were deleted stay in the matrix until the next compaction; search results are
looked up in the store, which drops them.
"""

from __future__ import annotations

import threading

import memd.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.store import Store

_GROWTH = 1.5
_COMPACT_AT = 1.25  # rebuild when the matrix holds a quarter more rows than live vectors


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


class VectorIndex:
    """The vectors of one embedder key, in memory, shared by every searching thread."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._ids: np.ndarray | None = None  # made with the first vectors: numpy until then
        self._matrix: np.ndarray | None = None
        self._size = 0
        self._last_row = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._size

    def refresh(self, store: Store) -> None:
        """Load the vectors added since the last refresh; drop dead ones when they pile up."""
        with self._lock:
            rows = store.vectors_after(self.model, self._last_row)
            if not rows:
                return
            live, _ = store.count_vectors(self.model)
            if self._size + len(rows) > live * _COMPACT_AT + 1024:
                # Edited chunks get new ids; the old vectors are dead weight: start over.
                self._size, self._last_row = 0, 0
                rows = store.vectors_after(self.model, 0)
            new = np.stack([from_blob(blob) for _, _, blob in rows])
            self._append(np.array([chunk_id for _, chunk_id, _ in rows], dtype=np.int64), new)
            self._last_row = rows[-1][0]

    def _append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        need = self._size + len(ids)
        if self._size == 0 and (self._matrix is None or self._matrix.shape[1] != vectors.shape[1]):
            self._matrix = np.zeros((0, vectors.shape[1]), dtype=np.float32)
            self._ids = np.zeros(0, dtype=np.int64)
        if need > len(self._ids):
            capacity = max(need, int(len(self._ids) * _GROWTH), 1024)
            matrix = np.zeros((capacity, vectors.shape[1]), dtype=np.float32)
            matrix[: self._size] = self._matrix[: self._size]
            id_array = np.zeros(capacity, dtype=np.int64)
            id_array[: self._size] = self._ids[: self._size]
            self._matrix, self._ids = matrix, id_array
        self._matrix[self._size : need] = vectors
        self._ids[self._size : need] = ids
        self._size = need

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` chunk ids nearest ``query`` with their cosine, best first."""
        with self._lock:
            if self._size == 0 or k <= 0:
                return []
            scores = self._matrix[: self._size] @ query.astype(np.float32)
            # A compaction rewrites ``_ids`` in place: copy while no one can.
            ids = self._ids[: self._size].copy()
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def vectors_of(self, chunk_ids: list[int]) -> dict[int, np.ndarray]:
        """The vectors of the given chunks that are in memory (for diversity ranking)."""
        with self._lock:
            if self._size == 0:
                return {}
            ids = self._ids[: self._size]
            wanted = np.isin(ids, np.array(chunk_ids, dtype=np.int64))
            rows = np.nonzero(wanted)[0]
            return {int(ids[i]): self._matrix[i].copy() for i in rows}
