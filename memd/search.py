"""Query → ranked chunks: candidates → fusion → temporal decay → diversity → results.

Keyword candidates come from FTS5 (BM25 mapped into [0, 1]), vector candidates from the
in-memory matrix (cosine). Each stage is a small pure function with its own tests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from memd.config import Search
from memd.fts import match_query
from memd.globs import GlobSet
from memd.store import Hit, Store
from memd.vectors import VectorIndex

SNIPPET_CHARS = 700
RRF_K = 60


@dataclass(frozen=True)
class SearchRequest:
    """What to search for and how to filter; defaults come from the config."""

    query: str
    max_results: int = 6
    min_score: float = 0.35
    mode: str = "auto"
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """One result as SPEC section 3 shows it."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    heading: str
    source: str
    citation: str

    def as_dict(self) -> dict:
        return asdict(self)


def bm25_score(raw: float, terms: int) -> float:
    """Map FTS5's BM25 (0 = no evidence, unbounded above) into [0, 1).

    BM25 sums over query terms, so it is taken per term before squashing: a chunk that
    matches one term of five weakly does not outscore a strong one-term match.
    """
    per_term = max(raw, 0.0) / max(terms, 1)
    return per_term / (per_term + 0.5)


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The chunk text, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def citation(path: str, start_line: int, end_line: int) -> str:
    """``path#Lstart-Lend``, always as a range so agents parse one form."""
    return f"{path}#L{start_line}-L{end_line}"


def file_filter(
    store: Store, paths: tuple[str, ...], tags: tuple[str, ...]
) -> dict[int, str] | None:
    """``{id: path}`` of files passing the ``paths`` globs and carrying one of ``tags``;
    None when there is no such filter."""
    if not paths and not tags:
        return None
    globs = GlobSet(paths)
    wanted = {t.lower().lstrip("#") for t in tags}
    allowed = {}
    for file_id, path, file_tags in store.file_tags():
        if globs and not globs.match(path):
            continue
        if wanted and not wanted & {t.lower() for t in file_tags}:
            continue
        allowed[file_id] = path
    return allowed


@dataclass
class Candidate:
    """A chunk proposed by either side, with each side's score in [0, 1]."""

    hit: Hit
    text: float = 0.0
    vector: float = 0.0  # cosine, normalised over the query's candidates
    cosine: float | None = None
    relevance: float = 0.0  # after fusion
    score: float = 0.0  # after decay: what results are ordered by
    vec: np.ndarray | None = field(default=None, repr=False)


def keyword_candidates(
    store: Store, req: SearchRequest, limit: int, allowed: Mapping[int, str] | None
) -> list[Candidate]:
    """Chunks matching any query word, best first, scored by ``keyword_score``."""
    match = match_query(req.query)
    if match is None or allowed == {}:
        return []
    hits = store.keyword_search(
        match.expression,
        limit=limit,
        since=req.since,
        until=req.until,
        file_ids=None if allowed is None else list(allowed),
    )
    best = max((h.bm25 for h in hits), default=0.0)
    return [Candidate(h, text=keyword_score(h.bm25, best, match.terms)) for h in hits]


def vector_candidates(
    store: Store,
    index: VectorIndex,
    query: np.ndarray,
    req: SearchRequest,
    limit: int,
    allowed: Mapping[int, str] | None,
) -> list[Candidate]:
    """The chunks nearest ``query`` that pass the request's filters, best first."""
    if allowed == {}:
        return []
    paths = None if allowed is None else set(allowed.values())
    filtered = paths is not None or req.since or req.until
    # Deleted chunks and filtered-out ones take places in the top k: ask for more.
    nearest = index.search(query, limit * (8 if filtered else 2))
    hits = store.chunks_by_id([chunk_id for chunk_id, _ in nearest])
    out = []
    for chunk_id, cosine in nearest:
        hit = hits.get(chunk_id)
        if hit is None or (paths is not None and hit.path not in paths):
            continue
        if (req.since or req.until) and not _in_range(hit.date, req.since, req.until):
            continue
        out.append(Candidate(hit, cosine=cosine))
        if len(out) == limit:
            break
    return out


def _in_range(date: str | None, since: str | None, until: str | None) -> bool:
    if date is None:
        return False
    return (since is None or date >= since) and (until is None or date <= until)


def merge(*sides: list[Candidate]) -> list[Candidate]:
    """One candidate per chunk, carrying each side's score."""
    merged: dict[int, Candidate] = {}
    for side in sides:
        for c in side:
            have = merged.get(c.hit.chunk_id)
            if have is None:
                merged[c.hit.chunk_id] = c
            else:
                have.text = max(have.text, c.text)
                if have.cosine is None:
                    have.cosine = c.cosine
    return list(merged.values())


def fuse_weighted(cands: list[Candidate], vector_weight: float, text_weight: float) -> None:
    """relevance = weighted mean of the two scores (a side that did not propose counts 0)."""
    total = vector_weight + text_weight or 1.0
    for c in cands:
        c.relevance = (vector_weight * c.vector + text_weight * c.text) / total


def fuse_rrf(cands: list[Candidate], k: int = RRF_K) -> None:
    """Reciprocal rank fusion, scaled so that first on both sides is 1."""
    for c in cands:
        c.relevance = 0.0
    for attr in ("text", "vector"):
        ranked = sorted((c for c in cands if getattr(c, attr) > 0), key=lambda c: -getattr(c, attr))
        for rank, c in enumerate(ranked, start=1):
            c.relevance += 1.0 / (k + rank)
    for c in cands:
        c.relevance /= 2.0 / (k + 1)


def decay_factor(
    date: str | None, today: dt.date, half_life_days: float, floor: float, weight: float
) -> float:
    """``floor + weight × 2^(-age / half_life)`` for a dated note; 1 for undated files.

    The floor keeps decay a preference among near-equals: a year-old note that answers
    clearly better still outranks last week's weak match.
    """
    if date is None:
        return 1.0
    age = max((today - dt.date.fromisoformat(date)).days, 0)
    return floor + weight * 2.0 ** (-age / half_life_days)


def mmr(cands: list[Candidate], lam: float, n: int) -> list[Candidate]:
    """Maximal marginal relevance: pick by ``lam × score − (1 − lam) × similarity`` to what
    is already picked. Candidates without a vector count as dissimilar to everything."""
    pool = sorted(cands, key=lambda c: -c.score)
    if not pool:
        return []
    dims = next((len(c.vec) for c in pool if c.vec is not None), 1)
    vectors = np.zeros((len(pool), dims), dtype=np.float32)
    has_vector = np.zeros(len(pool), dtype=bool)
    for i, c in enumerate(pool):
        if c.vec is not None:
            vectors[i], has_vector[i] = c.vec, True
    scores = np.array([c.score for c in pool])
    closest = np.zeros(len(pool))  # each candidate's highest similarity to a pick so far
    open_ = np.ones(len(pool), dtype=bool)
    picked: list[int] = []
    for _ in range(min(n, len(pool))):
        value = np.where(open_, lam * scores - (1 - lam) * closest, -np.inf)
        best = int(np.argmax(value))  # ties go to the higher score: the pool is sorted
        picked.append(best)
        open_[best] = False
        if has_vector[best]:
            closest = np.maximum(closest, np.where(has_vector, vectors @ vectors[best], 0.0))
    return [pool[i] for i in picked]


def rank(
    cands: list[Candidate], req: SearchRequest, settings: Search, today: dt.date, fusion: str
) -> list[SearchResult]:
    """Fuse, drop what is below ``min_score``, decay, diversify, cut to ``max_results``.

    ``min_score`` applies to relevance before decay, so decay reorders but never filters.
    """
    if fusion == "rrf":
        fuse_rrf(cands)
    else:
        fuse_weighted(cands, settings.vector_weight, settings.text_weight)
    kept = [c for c in cands if c.relevance >= req.min_score]
    for c in kept:
        factor = 1.0
        if settings.decay:
            factor = decay_factor(
                c.hit.date, today, settings.half_life_days, settings.decay_floor,
                settings.decay_weight,
            )  # fmt: skip
        c.score = c.relevance * factor
    if settings.mmr and any(c.vec is not None for c in kept):
        ordered = mmr(kept, settings.mmr_lambda, req.max_results)
    else:
        ordered = sorted(kept, key=lambda c: (-c.score, c.hit.chunk_id))[: req.max_results]
    return [_result(c.hit, c.score) for c in ordered]


def keyword_search(store: Store, req: SearchRequest) -> list[SearchResult]:
    """Keyword-only search ranked by text score alone (no vectors, no decay)."""
    settings = Search(decay=False, vector_weight=0.0, text_weight=1.0)
    cands = keyword_candidates(store, req, req.max_results * settings.candidate_multiplier, None)
    return rank(cands, req, settings, dt.date.today(), "weighted")


def attach_vectors(cands: list[Candidate], index: VectorIndex, query: np.ndarray) -> None:
    """Give every candidate its vector, and its cosine if only keywords proposed it."""
    vectors = index.vectors_of([c.hit.chunk_id for c in cands])
    for c in cands:
        c.vec = vectors.get(c.hit.chunk_id)
        if c.vec is not None and c.cosine is None:
            c.cosine = float(c.vec @ query)


def normalise_cosines(cands: list[Candidate]) -> None:
    """Vector score = cosine scaled from the weakest to the strongest candidate (0 to 1).

    Embedding models keep cosines in a narrow band (for e5, unrelated text is ~0.75 and a
    good match ~0.85), so a raw cosine makes every weak match look strong. Relative to
    the query's own candidates, the background level goes to 0.
    """
    cosines = [c.cosine for c in cands if c.cosine is not None]
    if not cosines:
        return
    lo, hi = min(cosines), max(cosines)
    for c in cands:
        if c.cosine is None:
            c.vector = 0.0
        elif hi > lo:
            c.vector = (c.cosine - lo) / (hi - lo)
        else:
            c.vector = 1.0 if c.cosine > 0 else 0.0


def keyword_score(raw: float, best: float, terms: int) -> float:
    """Half relative to the query's best hit, half absolute (``bm25_score``).

    BM25 alone says nothing in a small workspace: a term found in half the chunks or more
    has an idf of ~0 (FTS5 clamps it), so a one-note workspace would never clear
    ``min_score``. The relative half keeps the best match at 0.5 or more; the absolute
    half keeps a strong match above a weak one across queries.
    """
    relative = raw / best if best > 0 else 0.0
    return 0.5 * relative + 0.5 * bm25_score(raw, terms)


def _result(hit: Hit, score: float) -> SearchResult:
    return SearchResult(
        path=hit.path,
        start_line=hit.start_line,
        end_line=hit.end_line,
        score=round(score, 4),
        snippet=snippet(hit.text),
        heading=hit.heading,
        source=hit.source,
        citation=citation(hit.path, hit.start_line, hit.end_line),
    )
