"""Query → ranked chunks. Keyword search: FTS5 candidates, BM25 normalised into [0, 1].

Each stage is a small function: building the match, scoring, filtering, shaping results.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memd.fts import match_query
from memd.globs import GlobSet
from memd.store import Hit, Store

SNIPPET_CHARS = 700
CANDIDATE_MULTIPLIER = 4


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


def file_filter(store: Store, paths: tuple[str, ...], tags: tuple[str, ...]) -> list[int] | None:
    """Ids of files that pass the ``paths`` globs and carry one of ``tags``; None: no filter."""
    if not paths and not tags:
        return None
    globs = GlobSet(paths)
    wanted = {t.lower().lstrip("#") for t in tags}
    ids = []
    for file_id, path, file_tags in store.file_tags():
        if globs and not globs.match(path):
            continue
        if wanted and not wanted & {t.lower() for t in file_tags}:
            continue
        ids.append(file_id)
    return ids


def keyword_search(store: Store, req: SearchRequest) -> list[SearchResult]:
    """Chunks matching any query term, best first, above ``min_score``."""
    match = match_query(req.query)
    if match is None:
        return []
    file_ids = file_filter(store, req.paths, req.tags)
    if file_ids == []:
        return []
    hits = store.keyword_search(
        match.expression,
        limit=req.max_results * CANDIDATE_MULTIPLIER,
        since=req.since,
        until=req.until,
        file_ids=file_ids,
    )
    best = max((h.bm25 for h in hits), default=0.0)
    results = [_result(h, keyword_score(h.bm25, best, match.terms)) for h in hits]
    return [r for r in results if r.score >= req.min_score][: req.max_results]


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
