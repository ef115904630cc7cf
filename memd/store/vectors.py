"""Nearest chunks by meaning: an in-memory float32 matrix, top-k by dot product.

Each row is one passage of a chunk (memd.sources.passages); a chunk is as near as its nearest
passage. Vectors are normalised, so the dot product is the cosine. Brute force is fast to ~10^5
chunks; ``VectorIndex`` is the one seam an ANN index would replace. It loads rows it has
not seen yet from the store (by row id), so keeping it current costs only the new rows.
Chunks that were deleted stay in the matrix until the next compaction; search results are
looked up in the store, which drops them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.log import get_logger
from memd.store.base import Store

log = get_logger()

_GROWTH = 1.5
_PAGE = 16384  # rows read from the database at a time
_COMPACT_AT = 1.25  # rebuild when the matrix holds a quarter more rows than live vectors


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


@dataclass
class Nearness:
    """How near a query one chunk is: its best passage's cosine and vector (what diversity
    ranking compares), and every passage's cosine by its number."""

    cosine: float
    vector: np.ndarray
    parts: dict[int, float] = field(default_factory=dict)


class VectorIndex:
    """The vectors of one embedder key, in memory, shared by every searching thread.

    ``dims`` tells the size the embedder returns now (None until it has embedded once):
    vectors of another size were made by a model that changed under the same name and are
    left out; NaN or infinite ones are left out too. ``on_stale`` is called when a query
    shows that the vectors in memory are of the old size (someone should embed again).
    """

    def __init__(
        self,
        model: str,
        dims: Callable[[], int | None] | None = None,
        on_stale: Callable[[], None] | None = None,
    ) -> None:
        self.model = model
        self._dims = dims or (lambda: None)
        self._on_stale = on_stale
        self._ids: np.ndarray | None = None  # made with the first vectors: numpy until then
        self._parts: np.ndarray | None = None  # each row's passage number in its chunk
        self._matrix: np.ndarray | None = None
        self._size = 0
        self._expect = 0  # rows the current refresh will hold: the matrix is made that big
        self._last_row = 0
        self._lock = threading.Lock()
        self._notice: str | None = None

    def __len__(self) -> int:
        return self._size

    def refresh(self, store: Store) -> None:
        """Load the vectors added since the last refresh; drop dead ones when they pile up."""
        dims = self._dims()
        with self._lock:
            if dims and self._size and self._matrix.shape[1] != dims:
                self._reset()  # loaded under the old size: start over with the new one
            added = store.count_vectors_after(self.model, self._last_row)
            if not added:
                return
            live = store.count_vector_rows(self.model)
            if self._size + added > live * _COMPACT_AT + 1024:
                # Edited chunks get new ids; the old vectors are dead weight: start over.
                self._size, self._last_row = 0, 0
                added = live
            self._expect = self._size + added
            # In pages: a whole index at once would hold every row twice, as bytes and array.
            while rows := store.vectors_after(self.model, self._last_row, _PAGE):
                self._last_row = rows[-1][0]
                self._load(rows, dims)

    def add(self, ids: np.ndarray, parts: np.ndarray, vectors: np.ndarray) -> None:
        """Hold these rows too (vectors made in memory, not read from the store)."""
        with self._lock:
            self._append(ids, parts, vectors)

    def holds(self, chunk_ids: list[int]) -> set[int]:
        """Which of ``chunk_ids`` have a vector here."""
        with self._lock:
            if self._size == 0:
                return set()
            ids = self._ids[: self._size]
            wanted = np.array(chunk_ids, dtype=np.int64)
            return {int(i) for i in wanted[np.isin(wanted, ids)]}

    def _load(self, rows: list[tuple[int, int, int, bytes]], dims: int | None) -> None:
        width = dims or (self._matrix.shape[1] if self._size else len(rows[-1][3]) // 4)
        sized = [row for row in rows if len(row[3]) == width * 4]
        if not sized:
            return
        new = np.frombuffer(b"".join(row[3] for row in sized), dtype="<f4").reshape(
            len(sized), width
        )
        ids = np.array([row[1] for row in sized], dtype=np.int64)
        parts = np.array([row[2] for row in sized], dtype=np.int32)
        finite = np.isfinite(new).all(axis=1)  # stored before memd refused NaN and inf
        self._append(ids[finite], parts[finite], new[finite])

    def _reset(self) -> None:
        self._size, self._last_row = 0, 0
        self._ids, self._parts, self._matrix = None, None, None

    def take_notice(self) -> str | None:
        """Why the last search found no vectors to compare with, once."""
        notice, self._notice = self._notice, None
        return notice

    def _append(self, ids: np.ndarray, parts: np.ndarray, vectors: np.ndarray) -> None:
        need = self._size + len(ids)
        if self._size == 0 and (self._matrix is None or self._matrix.shape[1] != vectors.shape[1]):
            self._matrix = np.zeros((0, vectors.shape[1]), dtype=np.float32)
            self._ids = np.zeros(0, dtype=np.int64)
            self._parts = np.zeros(0, dtype=np.int32)
        if need > len(self._ids):
            capacity = max(need, int(len(self._ids) * _GROWTH), 1024, self._expect)
            matrix = np.zeros((capacity, vectors.shape[1]), dtype=np.float32)
            matrix[: self._size] = self._matrix[: self._size]
            id_array = np.zeros(capacity, dtype=np.int64)
            id_array[: self._size] = self._ids[: self._size]
            part_array = np.zeros(capacity, dtype=np.int32)
            part_array[: self._size] = self._parts[: self._size]
            self._matrix, self._ids, self._parts = matrix, id_array, part_array
        self._matrix[self._size : need] = vectors
        self._ids[self._size : need] = ids
        self._parts[self._size : need] = parts
        self._size = need

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` chunks nearest ``query``, each with its best passage's cosine, best
        first."""
        with self._lock:
            if self._size == 0 or k <= 0:
                return []
            held = self._matrix.shape[1]
            if query.shape[0] != held:
                self._reset()
                self._notice = (
                    f"the embedding model now returns {query.shape[0]} dimensions where the "
                    f"index holds {held}: every chunk is embedded again; ran keyword search"
                )
            else:
                scores = self._matrix[: self._size] @ query.astype(np.float32)
                # A compaction rewrites ``_ids`` in place: copy while no one can.
                ids = self._ids[: self._size].copy()
        if query.shape[0] != held:
            log.warning("embedding_dimensions_stale", model=self.model, held=held,
                        now=int(query.shape[0]))  # fmt: skip
            if self._on_stale is not None:
                self._on_stale()
            return []
        # A chunk has several rows: take more rows until ``k`` distinct chunks are in.
        want = min(len(scores), 4 * k + 16)
        while True:
            top = np.argpartition(-scores, want - 1)[:want] if want < len(scores) else None
            order = np.argsort(-scores) if top is None else top[np.argsort(-scores[top])]
            best: dict[int, float] = {}
            for i in order:
                best.setdefault(int(ids[i]), float(scores[i]))
                if len(best) == k:
                    return list(best.items())
            if top is None:
                return list(best.items())
            want = min(len(scores), want * 4)

    def nearest_parts(self, chunk_ids: list[int], query: np.ndarray) -> dict[int, Nearness]:
        """For each given chunk in memory: how near ``query`` each of its passages is."""
        with self._lock:
            if self._size == 0 or query.shape[0] != self._matrix.shape[1]:
                return {}
            ids = self._ids[: self._size]
            rows = np.nonzero(np.isin(ids, np.array(chunk_ids, dtype=np.int64)))[0]
            matrix = self._matrix[rows]
            owners = ids[rows].copy()
            parts = self._parts[rows].copy()
        scores = matrix @ query.astype(np.float32)
        out: dict[int, Nearness] = {}
        for j in np.argsort(-scores):
            chunk_id, cosine = int(owners[j]), float(scores[j])
            near = out.get(chunk_id)
            if near is None:
                out[chunk_id] = near = Nearness(cosine, matrix[j])
            near.parts[int(parts[j])] = cosine
        return out
