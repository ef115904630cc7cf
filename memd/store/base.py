"""The storage seam: everything indexing and search ask of one workspace's index store.

SQLite (``memd.store.sqlite``) is the one backend today; a backend passes the contract
suite in ``tests/test_store_contract.py``. Writes happen inside ``transaction`` on the
one writer; any number of ``reader`` stores serve other threads. Raises ``StoreError``
when the store cannot be used and ``IndexCorrupt`` when it is damaged.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from memd.sources.chunker import Chunk
from memd.store.fts import MatchQuery
from memd.store.rows import ChunkRow, FileMeta, FileRow, Hit, SessionState, Supersession


class Store(Protocol):
    """One workspace's index: files and their stamps, chunks with keyword data and
    passage vectors, the embedding cache, session read positions, and named values."""

    # -- the store itself ------------------------------------------------------------------

    def reader(self) -> Store:
        """A read-only store on the same data, for another thread."""
        ...

    def replace_damaged(self, reason: str) -> Store:
        """Set this damaged store aside (kept for inspection) and return an empty one in
        its place; this one is closed."""
        ...

    def check(self) -> None:
        """Read everything once; raises ``IndexCorrupt`` on damage (slow on big stores)."""
        ...

    def size_bytes(self) -> int:
        """What the store takes on disk."""
        ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Writes inside land together or not at all."""
        ...

    def bulk(self) -> AbstractContextManager[None]:
        """Hold while many files are written in several transactions (a first index):
        write settings that suit that, put back after."""
        ...

    def tidy(self) -> None:
        """Compact what many files written again left behind (after a ``bulk`` pass)."""
        ...

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """A named value (generations, the embedding model in use, clocks)."""
        ...

    def set_meta(self, key: str, value: str) -> None: ...

    # -- files and chunks (the indexer) ----------------------------------------------------

    def files(self) -> dict[str, FileRow]:
        """Every indexed file's stamp (size, mtime, hash), by result path."""
        ...

    def files_at(self, paths: Sequence[str]) -> dict[str, FileRow]:
        """The stamps of just these paths (those indexed)."""
        ...

    def file_realpath(self, path: str) -> str | None: ...

    def linked_files(self) -> list[tuple[str, str]]:
        """``(abspath, realpath)`` of indexed files reached through a symlink."""
        ...

    def has_files_under(self, folder: str) -> bool:
        """Whether any indexed file lies below ``folder`` (a result-path prefix)."""
        ...

    def file_tags(self) -> list[tuple[int, str, list[str]]]:
        """``(id, path, tags)`` of every file, for filtering searches."""
        ...

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        """A new size and mtime for a file whose content did not change."""
        ...

    def add_files(self, files: Sequence[tuple[FileMeta, Sequence[ChunkRow]]]) -> None:
        """Insert files the store does not hold yet, with their chunks (inside
        ``transaction``)."""
        ...

    def replace_file(self, meta: FileMeta, rows: Sequence[ChunkRow]) -> int:
        """Insert or replace a file and all its chunks; returns the file's id."""
        ...

    def replace_tail(self, meta: FileMeta, from_line: int, rows: Sequence[ChunkRow]) -> int:
        """Replace a file's chunks from ``from_line`` on (unchanged ones keep their
        vectors) and its facts; returns the file's id."""
        ...

    def append_chunks(self, file_id: int, rows: Sequence[ChunkRow]) -> None:
        """Add chunks to a file, keeping those it has (a transcript that grew)."""
        ...

    def first_chunk(self, file_id: int) -> tuple[int, Chunk]:
        """The id and content of a file's first chunk."""
        ...

    def replace_fts(self, chunk_id: int, fts: Sequence[str]) -> None:
        """New keyword columns for one chunk."""
        ...

    def delete_files(self, file_ids: Sequence[int]) -> None:
        """Forget files and every chunk and vector of theirs."""
        ...

    def file_meta(self, path: str) -> FileMeta | None:
        """A file's facts as they were written (None: not indexed)."""
        ...

    def file_chunks(self, file_id: int) -> list[tuple[int, Chunk]]:
        """A file's chunks in order, each with its id (their keyword columns follow from
        them: ``rows.chunk_rows``)."""
        ...

    # -- session transcripts ---------------------------------------------------------------

    def session_files(self) -> dict[str, SessionState]:
        """How far each session transcript has been read, by result path."""
        ...

    def save_session(self, state: SessionState, skipped: int = 0) -> None:
        """Record how far a transcript was read (and its file's new stamp)."""
        ...

    # -- what later notes superseded (memd.review.currency) ---------------------------------

    def replace_superseded(self, rows: Sequence[Supersession]) -> None:
        """Every superseded statement, in place of all the store had (a backend that keeps
        none, as a team database, ignores them)."""
        ...

    def superseded_at(self, paths: Sequence[str] | None = None) -> list[Supersession]:
        """The superseded statements of these files (all, with None; their digests are
        the reader's to check)."""
        ...

    def statements_seen(self) -> dict[tuple[str, str], str]:
        """``{(path, digest): first seen}`` of undated notes' statements ({} if none kept)."""
        ...

    def save_seen(self, rows: Sequence[tuple[str, str, str]], gone: Sequence[str]) -> None:
        """Keep when undated notes' statements were first seen; forget files ``gone``."""
        ...

    def superseded_in(self, chunk_ids: Sequence[int]) -> dict[int, list[Supersession]]:
        """``{chunk id: superseded statements whose lines lie within it}`` (whether the
        lines still say what was reviewed is the reader's to check: ``lines_digest``)."""
        ...

    # -- reading (search) ------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """``{"files": n, "chunks": n}``."""
        ...

    def keyword_search(
        self,
        match: MatchQuery,
        limit: int,
        since: str | None = None,
        until: str | None = None,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks holding any of the query's terms, best first by a BM25-like score,
        optionally within dates and files."""
        ...

    def term_counts(self, match: MatchQuery) -> tuple[int, list[int]]:
        """How many chunks there are, and how many hold each of the query's terms (for
        its idf; a backend may estimate the count of a term very many chunks hold)."""
        ...

    def term_holders(self, match: MatchQuery, chunk_ids: Sequence[int]) -> list[set[int]]:
        """For each of the query's terms, which of ``chunk_ids`` hold it."""
        ...

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Hit]:
        """Live chunks among ``ids`` (with no keyword score)."""
        ...

    def dated_chunks(
        self,
        since: str | None,
        until: str | None,
        limit: int,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks of files dated in the range (either end open), newest file first."""
        ...

    # -- vectors and the embedding cache ---------------------------------------------------

    def pending_chunks(
        self,
        model: str,
        limit: int,
        quiet_since: float | None = None,
        nbytes: int | None = None,
        edited_since: float | None = None,
    ) -> list[tuple[int, str, str, str | None, str]]:
        """``(chunk id, heading, text, date, path)`` of chunks with no vector for ``model``
        (of ``nbytes``, when given), only from files indexed before ``quiet_since``; people's
        first: files indexed after ``edited_since`` (edits), the core file, notes newest
        first (by date, else mtime), then session transcripts."""
        ...

    def count_vectors(self, model: str, nbytes: int | None = None) -> tuple[int, int]:
        """``(chunks with vectors for model, chunks without)``."""
        ...

    def paths_without_vectors(self, model: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` still have a chunk with no vector for ``model``."""
        ...

    def count_vector_rows(self, model: str) -> int:
        """Passage vectors stored for ``model``."""
        ...

    def cached_vectors(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """Vectors embedded before, by cache key (content hash and model)."""
        ...

    def save_vectors(
        self, model: str, rows: Sequence[tuple[int, int, bytes, bytes, str]], cache_size: int
    ) -> None:
        """Store ``(chunk id, passage, cache key, vector, terms)`` rows, remember them in
        the cache, and trim the cache to about ``cache_size`` entries, least recent first
        (the ``cache_size`` most recent always stay; a backend may trim in batches)."""
        ...

    def cache_vectors(self, entries: Sequence[tuple[bytes, bytes]], cache_size: int) -> None:
        """Remember ``(cache key, vector)`` pairs in the cache alone (texts no chunk holds,
        as a review's statements), trimmed as ``save_vectors`` trims it."""
        ...

    def vectors_after(
        self, model: str, after_id: int, limit: int = -1
    ) -> list[tuple[int, int, int, bytes]]:
        """``(row id, chunk id, passage, vector)`` added after row ``after_id``, in order
        (a generation: load once, then only what is new)."""
        ...

    def count_vectors_after(self, model: str, after_id: int) -> int:
        """How many rows ``vectors_after`` would return."""
        ...

    def passage_terms(self, model: str, chunk_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        """``{(chunk id, passage): term string}`` of the chunks' vectors."""
        ...

    def chunk_vectors(
        self, model: str, chunk_ids: Sequence[int]
    ) -> dict[int, list[tuple[int, bytes, str]]]:
        """``{chunk id: [(passage, vector, terms), ...]}`` in passage order."""
        ...
