"""The pure stages of ranking: scores into [0, 1], fusion, temporal decay, diversity.

Each stage takes candidates (a chunk with the evidence each side found for it) and
returns or annotates them; nothing here touches the database or the embedder, so every
stage has its own small tests.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.config import Search
from memd.records import SearchResult
from memd.store.rows import Hit

SNIPPET_CHARS = 700
RRF_K = 60


@dataclass
class Candidate:
    """A chunk proposed by either side, with the evidence each side found for it."""

    hit: Hit
    per_term: float = 0.0  # BM25 over the query's idf (0: no keyword match)
    coverage: float = 0.0  # idf-weighted share of the query's terms the chunk holds
    titled: float = 0.0  # ... that its section's own heading holds
    cosine: float | None = None  # None: the chunk has no vector (yet)
    vector: float = 0.0  # the cosine on memd's 0-1 scale
    parts: dict[int, float] = field(default_factory=dict, repr=False)  # passage cosines
    agreement: float | None = None  # best passage on meaning and words together
    interim: bool = False  # its vector is the interim tier's (memd.index.interim)
    superseded_by: str | None = None  # a later statement replaced the one it matched on
    superseded_how: str | None = None  # "confirmed", "stated" or "likely"
    superseded_now: str | None = None  # what the later statement says
    more_chunks: int = 0  # other chunks of its note folded into it (memd.search.collapse)
    relevance: float = 0.0  # after fusion
    score: float = 0.0  # after decay: what results are ordered by
    vec: np.ndarray | None = field(default=None, repr=False)

    def text(self, exponent: float, half: float = 1.0) -> float:
        """Keyword evidence in [0, 1): BM25 squashed (``half`` is where it reaches 0.5),
        times how much of the query matched."""
        return self.coverage**exponent * self.per_term / (self.per_term + half)


# Hybrid relevance: ``1 - AGREEMENT`` of the chunk's vector and keyword evidence, and
# ``AGREEMENT`` of its best passage judged on both at once (``AGREEMENT_VECTOR`` its cosine,
# the rest the square root of its share of the query's terms): a chunk whose nearest
# passage also holds the question's words beats one that has them in another turn.
# Measured on locomo-dev and SciFact (README).
AGREEMENT, AGREEMENT_VECTOR = 0.35, 0.7

# How far a section whose own heading holds the query's terms ("## Database" for "which
# database did we pick") moves toward 1: it is about them, where another section only
# mentions them. Measured on the demo, locomo-dev and the vault bench (README).
TITLED = 0.15

# How much a chunk's share of the query's terms counts, and where squashed BM25 reaches
# half: beside a vector score, and when keywords are all the evidence there is (then a
# lower half point puts a good keyword match on the same 0-1 scale as a hybrid one).
# Measured on locomo-dev and SciFact (README).
COVERAGE_HYBRID, COVERAGE_KEYWORD = 0.5, 0.25
HALF_HYBRID, HALF_KEYWORD = 1.0, 0.5


# A cosine alone (vector mode, or a ``text_weight`` of 0) on the floor's scale. The floor
# is where about 5 % of questions no note answers still get a result: keyword and hybrid
# relevance reach that at 0.366 and 0.373, so one floor (0.38) serves both. A cosine on its
# model's band reaches it only at 0.608 (locomo-dev's 75 unanswerable questions, e5-small,
# ``bench/floor_bench.py --mode vector``): at 0.38 itself, 61 % of them got a strong result.
# So that point is moved to where the floor is, 0 and 1 staying put; the order is unchanged.
VECTOR_ALONE_AT, FLOOR_AT = 0.608, 0.38


def vector_alone(score: float) -> float:
    """A cosine's score (``cosine_score``) as relevance when it is all the evidence."""
    if score <= VECTOR_ALONE_AT:
        return score * FLOOR_AT / VECTOR_ALONE_AT
    return FLOOR_AT + (score - VECTOR_ALONE_AT) * (1 - FLOOR_AT) / (1 - VECTOR_ALONE_AT)


def idf(n: int, total: int) -> float:
    """FTS5's idf of a term found in ``n`` of ``total`` chunks (clamped as FTS5 does)."""
    # ``n`` can pass ``total`` when the two were counted on either side of a write.
    return max(math.log((max(total - n, 0) + 0.5) / (n + 0.5)), 1e-6)


def per_term(raw: float, query_idf: float) -> float:
    """BM25 per unit of the query's idf: how much a chunk is about the query's terms.

    Dividing by the whole query's idf keeps BM25's order within a query while making the
    value read alike in workspaces of 10 and of 100,000 chunks (raw BM25 grows with the
    idf, and FTS5 clamps it to ~0 in a tiny one).
    """
    return max(raw, 0.0) / max(query_idf, 1e-6)


def coverage(weights: list[float], held: list[bool]) -> float:
    """The idf-weighted share of query terms held: a speaker's name found in every chunk
    counts ~0, the one rare word that matters counts most."""
    total = sum(weights)
    if total <= 0:
        return 0.0
    return sum(w for w, h in zip(weights, held, strict=True) if h) / total


def cosine_score(cosine: float, band: tuple[float, float]) -> float:
    """A cosine on a 0-1 scale fixed per model: ``band`` is (unrelated, clearly related).

    Embedding models keep cosines in a narrow band (e5: unrelated text ~0.75, a clear
    match ~0.9); a fixed mapping keeps a score meaning the same whatever else was found.
    """
    lo, hi = band
    return min(max((cosine - lo) / (hi - lo), 0.0), 1.0)


def passage_agreement(
    cosines: dict[int, float], shares: dict[int, float], band: tuple[float, float]
) -> float:
    """The best passage judged on meaning and words together: its cosine on the model's
    scale and the square root of its share of the query's terms, ``AGREEMENT_VECTOR`` to
    the rest."""
    return max(
        (
            AGREEMENT_VECTOR * cosine_score(cosine, band)
            + (1 - AGREEMENT_VECTOR) * math.sqrt(shares.get(part, 0.0))
            for part, cosine in cosines.items()
        ),
        default=0.0,
    )


def merge(*sides: list[Candidate]) -> list[Candidate]:
    """One candidate per chunk, carrying each side's score."""
    merged: dict[int, Candidate] = {}
    for side in sides:
        for c in side:
            have = merged.get(c.hit.chunk_id)
            if have is None:
                merged[c.hit.chunk_id] = c
            else:
                have.per_term = max(have.per_term, c.per_term)
                have.coverage = max(have.coverage, c.coverage)
                have.titled = max(have.titled, c.titled)
                if have.cosine is None:
                    have.cosine = c.cosine
    return list(merged.values())


def fuse_weighted(cands: list[Candidate], vector_weight: float, text_weight: float) -> None:
    """relevance = weighted sum of the vector score and the keyword evidence.

    A chunk with no vector yet is ranked on the keyword evidence it has, as in keyword
    mode, rather than losing the vector's share; keyword mode is ``vector_weight`` 0.
    """
    total = vector_weight + text_weight or 1.0
    for c in cands:
        if text_weight == 0:
            c.relevance = vector_alone(c.vector)
        elif vector_weight == 0 or c.cosine is None:
            c.relevance = c.text(COVERAGE_KEYWORD, HALF_KEYWORD)
        else:
            text = c.text(COVERAGE_HYBRID, HALF_HYBRID)
            c.relevance = (vector_weight * c.vector + text_weight * text) / total
            if c.agreement is not None:
                c.relevance = (1 - AGREEMENT) * c.relevance + AGREEMENT * c.agreement
            if c.interim:  # weaker vectors than the floor was set for: they add, never take
                c.relevance = max(c.relevance, c.text(COVERAGE_KEYWORD, HALF_KEYWORD))
        if text_weight and c.titled:
            c.relevance += TITLED * c.titled * (1 - c.relevance)


def fuse_rrf(cands: list[Candidate], k: int = RRF_K) -> None:
    """Reciprocal rank fusion, scaled so that first on both sides is 1."""
    for c in cands:
        c.relevance = 0.0
    sides = {"text": lambda c: c.text(COVERAGE_HYBRID, HALF_HYBRID), "vector": lambda c: c.vector}
    for key in sides.values():
        ranked = sorted((c for c in cands if key(c) > 0), key=lambda c: -key(c))
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
    cands: list[Candidate],
    max_results: int,
    min_score: float,
    settings: Search,
    today: dt.date,
    adjust: Callable[[list[Candidate]], object] | None = None,
    fill: int = 0,
) -> list[SearchResult]:
    """The best ``max_results`` at or above ``min_score`` (strong), decayed and
    diversified, in score order; then, while fewer than ``fill`` are strong, the best of
    those below it (weak), labelled so.

    ``min_score`` applies to relevance before decay, so decay reorders but never filters;
    diversity chooses which results are shown, never the order they are shown in.
    """
    # Compared as printed: a score read off a result, given back as min_score, keeps it.
    kept = [c for c in cands if round(c.relevance, 4) >= min_score]
    for c in cands:
        factor = 1.0
        if settings.decay:
            factor = decay_factor(
                c.hit.date, today, settings.half_life_days, settings.decay_floor,
                settings.decay_weight,
            )  # fmt: skip
        c.score = c.relevance * factor
    if adjust is not None:  # soft preferences on the scores (memd.search.timerank)
        adjust(kept)
    if settings.mmr and any(c.vec is not None for c in kept):
        kept = mmr(kept, settings.mmr_lambda, max_results)
    strong = sorted(kept, key=lambda c: (-c.score, c.hit.chunk_id))[:max_results]
    results = [_result(c) for c in strong]
    wanted = min(fill, max_results) - len(strong)
    if wanted > 0:
        # Below the floor, but with some evidence: a candidate at 0 is no match at all.
        weak = [c for c in cands if 0 < round(c.relevance, 4) < min_score]
        if adjust is not None:
            adjust(weak)
        weak.sort(key=lambda c: (-c.score, c.hit.chunk_id))
        results += [_result(c, "weak") for c in weak[:wanted]]
    return results


def floored(cands: list[Candidate], min_score: float) -> tuple[int | None, float | None]:
    """How many candidates ``min_score`` dropped and the best relevance among them
    (``None, None`` when there were none): why an empty answer is empty."""
    below = [c.relevance for c in cands if round(c.relevance, 4) < min_score]
    if not below:
        return None, None
    return len(below), round(max(below), 4)


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The chunk text, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def citation(path: str, start_line: int, end_line: int) -> str:
    """``path#Lstart-Lend``, always as a range so agents parse one form."""
    return f"{path}#L{start_line}-L{end_line}"


def _result(c: Candidate, match: str = "strong") -> SearchResult:
    hit = c.hit
    return SearchResult(
        path=hit.path,
        start_line=hit.start_line,
        end_line=hit.end_line,
        score=round(c.score, 4),
        snippet=snippet(hit.text),
        heading=hit.heading,
        source=hit.source,
        citation=citation(hit.path, hit.start_line, hit.end_line),
        match=match,
        host=hit.host,
        workspace=hit.workspace,
        superseded_by=c.superseded_by,
        superseded=c.superseded_how,
        now=c.superseded_now,
        more_chunks=c.more_chunks or None,
    )
