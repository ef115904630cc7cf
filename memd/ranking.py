"""The pure stages of ranking: scores into [0, 1], fusion, temporal decay, diversity.

Each stage takes candidates (a chunk with the evidence each side found for it) and
returns or annotates them; nothing here touches the database or the embedder, so every
stage has its own small tests.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from memd.config import Search
from memd.records import SearchResult
from memd.schema import Hit

SNIPPET_CHARS = 700
RRF_K = 60


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


def bm25_score(raw: float, terms: int) -> float:
    """Map FTS5's BM25 (0 = no evidence, unbounded above) into [0, 1).

    BM25 sums over query terms, so it is taken per term before squashing: a chunk that
    matches one term of five weakly does not outscore a strong one-term match.
    """
    per_term = max(raw, 0.0) / max(terms, 1)
    return per_term / (per_term + 0.5)


def keyword_score(raw: float, best: float, terms: int) -> float:
    """Half relative to the query's best hit, half absolute (``bm25_score``).

    BM25 alone says nothing in a small workspace: a term found in half the chunks or more
    has an idf of ~0 (FTS5 clamps it), so a one-note workspace would never clear
    ``min_score``. The relative half keeps the best match at 0.5 or more; the absolute
    half keeps a strong match above a weak one across queries.
    """
    relative = raw / best if best > 0 else 0.0
    return 0.5 * relative + 0.5 * bm25_score(raw, terms)


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


def fuse(cands: list[Candidate], settings: Search, fusion: str) -> None:
    """Give every candidate its ``relevance`` from the evidence each side found."""
    if fusion == "rrf":
        fuse_rrf(cands)
    else:
        fuse_weighted(cands, settings.vector_weight, settings.text_weight)


def select(
    cands: list[Candidate], max_results: int, min_score: float, settings: Search, today: dt.date
) -> list[SearchResult]:
    """Drop what is below ``min_score``, decay, diversify, and return the best
    ``max_results`` in score order.

    ``min_score`` applies to relevance before decay, so decay reorders but never filters;
    diversity chooses which results are shown, never the order they are shown in.
    """
    # Compared as printed: a score read off a result, given back as min_score, keeps it.
    kept = [c for c in cands if round(c.relevance, 4) >= min_score]
    for c in kept:
        factor = 1.0
        if settings.decay:
            factor = decay_factor(
                c.hit.date, today, settings.half_life_days, settings.decay_floor,
                settings.decay_weight,
            )  # fmt: skip
        c.score = c.relevance * factor
    if settings.mmr and any(c.vec is not None for c in kept):
        kept = mmr(kept, settings.mmr_lambda, max_results)
    ordered = sorted(kept, key=lambda c: (-c.score, c.hit.chunk_id))[:max_results]
    return [_result(c.hit, c.score) for c in ordered]


def rank(
    cands: list[Candidate],
    max_results: int,
    min_score: float,
    settings: Search,
    today: dt.date,
    fusion: str,
) -> list[SearchResult]:
    """``fuse`` then ``select``: the ranking when nothing reranks in between."""
    fuse(cands, settings, fusion)
    return select(cands, max_results, min_score, settings, today)


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The chunk text, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def citation(path: str, start_line: int, end_line: int) -> str:
    """``path#Lstart-Lend``, always as a range so agents parse one form."""
    return f"{path}#L{start_line}-L{end_line}"


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
