"""A search from request to ranked results: the one pipeline every shell uses.

``Searcher`` resolves a ``SearchRequest`` against the config (``memd.search.request``:
defaults filled in once, every value checked), gathers candidates from FTS5 and from the
in-memory vectors (``memd.search.candidates``), and hands them to the ranking stages in
``memd.search.ranking``. It reads through whatever connection it is given; it never writes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.config import Search
from memd.embed.providers import Embedder
from memd.embed.rerank import Reranker
from memd.errors import MemdError
from memd.log import get_logger
from memd.records import SearchResult, TimeWindow
from memd.search.candidates import (
    anchored,
    attach_agreement,
    attach_vectors,
    file_filter,
    holds_notes,
    keyword_candidates,
    lift,
    named,
    query_terms,
    stubs_linked,
    vector_candidates,
)
from memd.search.collapse import one_per_note
from memd.search.ranking import Candidate, floored, fuse, merge, select
from memd.search.request import SearchRequest, parse_now, resolve
from memd.search.superseded import demote, mark_superseded
from memd.search.timerank import (
    AHEAD_POOL,
    AHEAD_WRITTEN_DAYS,
    LISTING_POOL,
    adjust,
    answer_ahead,
    asks_only_when,
    lift_listing,
    listing,
    names_of,
    naming,
    on_topic,
    prefer,
    window_filter,
)
from memd.search.timewords import TimeReading, names_a_time, read_time
from memd.search.unheld import best_unsaid, names_unheld
from memd.sources.chunker import model_text
from memd.store.base import Store
from memd.store.fts import match_query
from memd.store.vectors import VectorIndex

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

T = TypeVar("T")

log = get_logger()

_QUERY_CACHE = 256  # query vectors kept: agents repeat questions


@dataclass(frozen=True)
class Ranked:
    """What a search found and what really ran."""

    results: list[SearchResult]
    mode: str
    warning: str | None = None
    time: TimeReading | None = None  # how the query's time words were read
    time_empty: bool = False  # the window held no notes: searched without it
    below_floor: int | None = None  # an answer the floor emptied: how many it dropped
    best_score: float | None = None  # ... and the best of them

    def meaning_paths(self) -> list[str]:
        """The local results' files, when the answer was searched by meaning at all."""
        if self.mode == "keyword":
            return []
        return [r.path for r in self.results if not r.host]

    def window(self) -> TimeWindow | None:
        """How the query's time words were read, as answers show it."""
        if self.time is None:
            return None
        shown = self.time.as_dict()
        empty = self.time_empty or None
        return TimeWindow(shown["from"], shown["to"], shown["matched"], empty, shown["ahead"])


class Interim(Protocol):
    """What search needs of the interim tier (``memd.index.interim``)."""

    band: tuple[float, float]
    vectors: VectorIndex

    def query(self, text: str) -> np.ndarray | None: ...


class Searcher:
    """Runs searches for one workspace: its settings, embedder and vectors."""

    def __init__(
        self,
        settings: Search,
        embedder: Embedder,
        vectors: Callable[[], VectorIndex],
        today: Callable[[], dt.date],
        query_timeout_s: float,
        reranker: Reranker | None = None,
        rerank_top_n: int = 20,
        clock: Callable[[], dt.datetime] | None = None,
        interim: Callable[[], Interim | None] = lambda: None,
    ) -> None:
        self.settings = settings
        self._interim = interim  # vectors from words while the full model back-fills
        self.reranker = reranker or Reranker()
        self._rerank_top_n = rerank_top_n
        self.embedder = embedder
        self._vectors = vectors
        self._today = today
        self._clock = clock or (lambda: dt.datetime.combine(today(), dt.time(12)).astimezone())
        self._query_timeout = query_timeout_s
        self._pool: ThreadPoolExecutor | None = None  # made by the first embedding or rerank
        self._cache: dict[str, np.ndarray] = {}  # recent query vectors, oldest first
        self._cache_lock = threading.Lock()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        """Run ``fn`` on the query pool (so a caller can stop waiting for it)."""
        with self._cache_lock:
            if self._pool is None:
                # Here: a keyword search never embeds or reranks, nor loads the pool's modules.
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memd-query")
        return self._pool.submit(fn, *args)

    def resolve(self, request: SearchRequest) -> SearchRequest:
        """The request with every default filled in from the config; raises
        ``InvalidParams`` naming the first bad value."""
        return resolve(request, self.settings, self._clock)

    def search(self, store: Store, request: SearchRequest) -> Ranked:
        """Rank the chunks of ``store`` for ``request`` (resolved here if it is not)."""
        req = self.resolve(request)
        # Time words set a soft window and are not searched for (memd.search.timerank).
        now = parse_now(req.now, self._clock)
        reading = read_time(req.query, now) if self.settings.time_words else None
        allowed = file_filter(store, req.paths, req.tags, req.sources)
        if reading is not None and named(store, req, allowed):
            reading = None  # a note's name ("Yesterday", "History Today"): that note is asked
        if reading is None:
            return self._rank(store, req, None, allowed)
        if reading.start is not None and reading.end is not None and reading.start > now.date():
            # A time still to come: notes about it were written before it, so it filters
            # nothing; the notes that name it come first ("next month", "in December").
            ahead = dataclasses.replace(reading, ahead=True)
            # "what happens next month": what the notes call that month is the question.
            only_when = asks_only_when(reading.query)
            words = " ".join(names_of(ahead)) if only_when else reading.query
            ranked = self._rank(store, dataclasses.replace(req, query=words), None, allowed,
                                ahead=ahead)  # fmt: skip
            return dataclasses.replace(ranked, time=ahead)
        window = window_filter(reading, req.since, req.until)
        if window is None or not holds_notes(store, window, allowed):
            # Nothing was written then: the window points at no note. A named time ("in
            # June" of a year with no June notes) may still be words of the notes, so the
            # question is searched as written; "this week" is not, so it is searched without.
            a_time = names_a_time(reading.matched)
            if not a_time and asks_only_when(reading.query):  # "what happened this week"
                return Ranked([], "keyword", None, reading, time_empty=True)
            asked = req if a_time else dataclasses.replace(req, query=reading.query)
            ranked = self._rank(store, asked, None, allowed)
            return dataclasses.replace(ranked, time=reading, time_empty=True)
        if asks_only_when(reading.query):
            return self._listing(store, req, reading, window, allowed)
        return self._rank(store, req, reading, allowed, window)

    def _rank(
        self,
        store: Store,
        req: SearchRequest,
        reading: TimeReading | None,
        allowed: dict[int, str] | None,
        window: tuple[str | None, str | None] | None = None,
        ahead: TimeReading | None = None,
    ) -> Ranked:
        """Candidates from both sides, fused, floored and ordered; ``reading`` is a time
        window that holds notes, ``ahead`` one still to come."""
        assert req.max_results is not None and req.min_score is not None
        now = parse_now(req.now, self._clock)
        asked = dataclasses.replace(req, query=reading.query) if reading else req
        in_window = dataclasses.replace(asked, since=window[0], until=window[1]) if window else None
        query_vector, warning, tier, interim_vector = None, None, None, None
        # Stopwords alone ("the", "who am I") ask for nothing: their vector is near every
        # note a little, which is no answer in any mode.
        if req.mode != "keyword" and (ahead is not None or match_query(asked.query)):
            with self.embedder.searching():  # a back-fill's next batch waits for these
                query_vector, warning = self._query_vector(asked, store)
                tier = self._interim()
                if tier is not None and len(tier.vectors):
                    interim_vector, why = self._embed_query(
                        tier.query, asked.query, asked.embed_wait_s
                    )
                    if query_vector is None:
                        warning = why if interim_vector is None else None
        mode = "keyword"
        if query_vector is not None or interim_vector is not None:
            mode = "vector" if req.mode == "vector" else "hybrid"
        settings = self.settings
        limit = req.max_results * settings.candidate_multiplier
        requests = (asked,) if in_window is None else (asked, in_window)
        sides = []
        terms = query_terms(store, asked.query) if mode != "vector" else None
        if terms is not None:
            sides += [keyword_candidates(store, r, terms, limit, allowed) for r in requests]
        vectors = self._vectors()
        if query_vector is not None:
            sides += [
                vector_candidates(store, vectors, query_vector, r, limit, allowed) for r in requests
            ]
        if interim_vector is not None:  # only chunks the full model has not reached
            for r in requests:
                found = vector_candidates(store, tier.vectors, interim_vector, r, limit, allowed)
                full = vectors.holds([c.hit.chunk_id for c in found])
                sides.append([c for c in found if c.hit.chunk_id not in full])
        cands = merge(*sides)
        if query_vector is not None:
            attach_vectors(cands, vectors, query_vector, self.embedder.cosine_band)
            if mode == "hybrid" and terms is not None:
                attach_agreement(store, vectors.model, cands, terms, self.embedder.cosine_band)
        if interim_vector is not None:  # chunks the full model has not reached yet
            # No best-passage part for these: judged on their weaker vectors, it reordered
            # keyword matches for the worse (measured on locomo-dev and SciFact).
            missed = [c for c in cands if c.vec is None]
            attach_vectors(missed, tier.vectors, interim_vector, tier.band)
            for c in missed:
                c.interim = c.vec is not None
        weights = {
            "hybrid": {},
            "keyword": {"vector_weight": 0.0, "text_weight": 1.0},
            "vector": {"vector_weight": 1.0, "text_weight": 0.0},
        }[mode]
        ranking = dataclasses.replace(settings, **weights)
        fuse(cands, ranking, settings.fusion if mode == "hybrid" else "weighted")
        ahead_named: set[int] = set()
        listing_ahead = ahead is not None and asks_only_when(ahead.query)
        if ahead is not None:  # notes name the days still to come they are about
            cands = merge(cands, self._written_before(store, now.date(), allowed))
            ahead_named = naming(cands, ahead, now.date())
            answer_ahead(cands, ahead_named, listing_ahead)
        if self.reranker.enabled and cands:
            cands, failed = self._rerank(asked, cands)
            warning = "; ".join(w for w in (warning, failed) if w) or None
        if reading is not None:  # the question says when: recency no longer matters
            ranking = dataclasses.replace(ranking, decay=False)
            if req.narrow_window:
                cands = on_topic(cands, req.min_score)
        # A note named by the query, or by the words of links to it, is what it asks for.
        names: dict[int, float] = {}
        if not listing_ahead:  # a time's names as words ("friday") name no note
            by_name = named(store, asked, allowed)
            names = {hit.chunk_id: relevance for hit, relevance in by_name}
            cands = lift(cands, [*anchored(store, asked, allowed, cands), *by_name])
        mark_superseded(store, cands, asked.query)  # what later notes replaced, labelled
        if not req.all_chunks:  # one note, one place in the list
            cands = one_per_note(cands, req.min_score)
        n, query = req.max_results, asked.query

        def order(kept: list[Candidate]) -> object:
            demote(adjust(prefer(kept, ahead_named), reading, ranking, query, n))
            for c in kept:  # a note named by the query stays first: no preference moves it
                c.score = names.get(c.hit.chunk_id, c.score)
            return kept

        floor = req.min_score
        said = (reading or ahead or asked).query  # what is asked, without when
        embed = None if query_vector is None else self._vector_of(asked, store)
        if floor > 0 and (names_unheld(store, said) or best_unsaid(store, said, cands, embed)):
            floor = math.inf  # it names what no note holds, or the best match means it not
        results = select(cands, n, floor, ranking, now.date(), order, fill=req.min_results or 0)
        results = stubs_linked(store, results)
        below, best = floored(cands, floor) if not results else (None, None)
        return Ranked(results, mode, warning, reading, below_floor=below, best_score=best)

    def _written_before(
        self, store: Store, today: dt.date, allowed: dict[int, str] | None
    ) -> list[Candidate]:
        """The latest notes (up to now), as candidates with no evidence yet: a question
        about days still to come reads them for the days they name."""
        since = (today - dt.timedelta(days=AHEAD_WRITTEN_DAYS)).isoformat()
        ids = None if allowed is None else list(allowed)
        hits = store.dated_chunks(since, today.isoformat(), AHEAD_POOL, ids)
        return [Candidate(h) for h in hits]

    def _listing(
        self,
        store: Store,
        req: SearchRequest,
        reading: TimeReading,
        window: tuple[str | None, str | None],
        allowed: dict[int, str] | None,
    ) -> Ranked:
        """A question that names only a time: the chunks of that window, newest first,
        those that hold what is left of the question ("decide") before the others."""
        assert req.max_results is not None and req.min_score is not None
        ids = None if allowed is None else list(allowed)
        cands = listing(store.dated_chunks(window[0], window[1], LISTING_POOL, ids))
        terms = query_terms(store, reading.query)
        if terms is not None:
            inside = dataclasses.replace(req, since=window[0], until=window[1])
            found = keyword_candidates(store, inside, terms, LISTING_POOL, allowed)
            lift_listing(cands, found)
        mark_superseded(store, cands, reading.query)
        plain = dataclasses.replace(self.settings, decay=False, mmr=False)
        results = select(cands, req.max_results, req.min_score, plain, dt.date.today(), demote)
        return Ranked(results, "keyword", None, reading)

    def _rerank(self, req: SearchRequest, cands: list[Candidate]) -> tuple[list, str | None]:
        """The best candidates, scored again by the reranker; on failure, unchanged and why."""
        assert req.max_results is not None
        top = sorted(cands, key=lambda c: -c.relevance)[: max(self._rerank_top_n, req.max_results)]
        texts = [model_text(c.hit.heading, c.hit.text) for c in top]
        budget = self.reranker.timeout_s
        future = self._submit(self.reranker.rerank, req.query, texts)
        try:
            scores = future.result(timeout=budget)
        except TimeoutError:
            return cands, f"reranking took over {budget:g} s; results in fusion order"
        except MemdError as exc:
            return cands, f"reranking failed ({exc}); results in fusion order"
        for c, score in zip(top, scores, strict=True):
            c.relevance = score
        return top, None

    def _vector_of(self, req: SearchRequest, store: Store) -> Callable[[str], np.ndarray | None]:
        """Any text's vector as the request's query (cached alike), or None."""
        return lambda text: self._query_vector(dataclasses.replace(req, query=text), store)[0]

    def _query_vector(self, req: SearchRequest, store: Store) -> tuple:
        """The query's vector, or None and the reason (never a silent downgrade)."""
        if not self.embedder.enabled:
            if req.mode in ("vector", "hybrid"):
                return None, (
                    f"mode '{req.mode}' needs embeddings, which are not configured "
                    "(embeddings.provider is none); ran keyword search"
                )
            return None, None
        vectors = self._vectors()
        vectors.refresh(store)
        if len(vectors) == 0:
            return None, "no chunk has a vector yet (embedding in progress); ran keyword search"
        with self._cache_lock:
            cached = self._cache.get(req.query)
        if cached is not None and len(cached) == self.embedder.dimensions:
            return cached, None
        return self._embed_query(self._embed_and_keep, req.query, req.embed_wait_s)

    def _embed_and_keep(self, query: str) -> np.ndarray:
        """The query's vector, cached here, on the pool: a search that stopped waiting for
        it (over its time budget, on a busy machine) finds it ready when asked again."""
        vector = self.embedder.embed([query], "query", first=True)[0]
        with self._cache_lock:
            self._cache[query] = vector
            while len(self._cache) > _QUERY_CACHE:
                self._cache.pop(next(iter(self._cache)))
        return vector

    def _embed_query(
        self, embed: Callable[[str], np.ndarray | None], query: str, wait: float | None = None
    ) -> tuple:
        """``embed(query)`` within the query time budget (``wait`` when given), or None and
        why not; logs how long it took (bench/query_embed_bench.py reads it)."""
        budget = self._query_timeout if wait is None else min(wait, self._query_timeout)
        asked = time.perf_counter()
        future = self._submit(embed, query)
        try:
            vector = future.result(timeout=budget)
        except TimeoutError:
            return None, f"query embedding took over {budget:g} s; ran keyword search"
        except MemdError as exc:
            return None, f"query embedding failed ({exc}); ran keyword search"
        log.debug("query_embedded", ms=round((time.perf_counter() - asked) * 1000, 1))
        return vector, None
