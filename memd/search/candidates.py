"""Candidates from the store: what FTS5 and the vectors find for a query under the
request's filters, and the evidence (terms, best passage) that the ranking stages weigh."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.records import SearchResult
from memd.search.ranking import (
    Candidate,
    citation,
    cosine_score,
    coverage,
    idf,
    passage_agreement,
    per_term,
)
from memd.search.request import SearchRequest
from memd.sources.chunker import is_stub
from memd.sources.globs import GlobSet
from memd.sources.layout import is_session_path
from memd.sources.markdown import links
from memd.sources.names import NAMED_SOURCES, name_key, name_token, note_name
from memd.store.base import Store
from memd.store.fts import NOSPACE_RUN, MatchQuery, TermMatcher, match_query
from memd.store.rows import Hit
from memd.store.vectors import VectorIndex

# A note's name (its file name or an alias) typed as the whole query: the reader means that
# note, as Obsidian's quick switcher takes them. It ranks first in every mode.
NAMED_RELEVANCE = 1.0
# Several notes of one folded name (a drawing or a canvas named as a note, '🗂️ Publish
# Sites' beside 'Publish sites', one note's alias another's name) rank by how closely each
# matches what was typed, each a step below the closer one: too small a step to show.
_NAME_STEP = 1e-6
_NAME_WORDS = 12  # a longer query is no note's name
_NAMED_LIMIT = 50  # notes of one name looked at (one name's, not its words': no pool)
_ANCHOR_POOL = 20  # the best candidates whose links are read
_ANCHOR_TARGETS = 3  # notes linked to with the query's words, looked up
_WORD = re.compile(r"\w+")


def holds_notes(
    store: Store, window: tuple[str | None, str | None], allowed: Mapping[int, str] | None
) -> bool:
    """Whether any dated chunk that passes the request's filters lies in ``window``."""
    if allowed == {}:
        return False
    ids = None if allowed is None else list(allowed)
    return bool(store.dated_chunks(window[0], window[1], 1, ids))


def file_filter(
    store: Store, paths: tuple[str, ...], tags: tuple[str, ...], sources: tuple[str, ...] = ()
) -> dict[int, str] | None:
    """``{id: path}`` of files passing the ``paths`` globs, carrying one of ``tags`` and
    of one of ``sources``; None when there is no such filter."""
    one_source = sources[0] if len(set(sources)) == 1 else None
    if not paths and not tags and one_source is None:
        return None
    globs = GlobSet(paths)
    wanted = {t.lower().lstrip("#").rstrip("/") for t in tags}
    allowed = {}
    for file_id, path, file_tags in store.file_tags():
        if one_source is not None and (one_source == "sessions") != is_session_path(path):
            continue
        if globs and not globs.match(path):
            continue
        if wanted and not wanted & _tag_paths(file_tags):
            continue
        allowed[file_id] = path
    return allowed


def _tag_paths(tags: Sequence[str]) -> set[str]:
    """Tags and their parents, lower-case: ``#a/b/c`` is also ``a/b`` and ``a``, as
    Obsidian's nested tags are."""
    out = set()
    for tag in tags:
        parts = tag.lower().split("/")
        out.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return out


def named(
    store: Store, req: SearchRequest, allowed: Mapping[int, str] | None
) -> list[tuple[Hit, float]]:
    """First chunks of notes whose file name or an alias is the query itself (its words
    in order, any case and punctuation), each at ``NAMED_RELEVANCE``, the closest first
    (``closeness``)."""
    typed = req.query.strip().casefold()
    return [
        (hit, NAMED_RELEVANCE - _NAME_STEP * closeness(store, hit, typed))
        for hit in _named(store, name_key(req.query), req, allowed)
    ]


def closeness(store: Store, hit: Hit, typed: str) -> int:
    """How a note named by ``typed`` (lower-case) is named so, closest first: 0 its name
    as Obsidian lists it (``Plan.canvas`` and ``Plan.excalidraw`` for a canvas and a
    drawing, so ``[[Plan]]``'s note comes first), 1 an alias as typed, 2 its name folded,
    3 an alias folded."""
    if PurePosixPath(hit.path).name.removesuffix(".md").casefold() == typed:
        return 0
    meta = store.file_meta(hit.path) if hit.host is None else None
    aliases = meta.aliases if meta is not None else ()
    if any(alias.strip().casefold() == typed for alias in aliases):
        return 1
    return 2 if name_key(note_name(hit.path)) == name_key(typed) else 3


def anchored(
    store: Store, req: SearchRequest, allowed: Mapping[int, str] | None, cands: list[Candidate]
) -> list[tuple[Hit, float]]:
    """Notes that the candidates link to with the query's words (``[[Target|words]]``:
    anchor text, as web search reads it), each at the relevance of its best linking chunk."""
    key = name_key(req.query)
    targets: dict[str, float] = {}
    for c in sorted(cands, key=lambda c: -c.relevance)[:_ANCHOR_POOL]:
        for target, shown in links(c.hit.text):
            if key and target and f" {key} " in f" {name_key(shown)} ":
                targets[target] = max(targets.get(target, 0.0), c.relevance)
    best = sorted(targets.items(), key=lambda t: -t[1])[:_ANCHOR_TARGETS]
    return [
        (hit, relevance)
        for target, relevance in best
        for hit in _named(store, name_key(target), req, allowed)
    ]


def _named(
    store: Store, key: str, req: SearchRequest, allowed: Mapping[int, str] | None
) -> list[Hit]:
    """First chunks of the notes named ``key`` (a ``name_key``) that pass the filters."""
    if not key or allowed == {} or len(key.split()) > _NAME_WORDS:
        return []
    # Each name is one word of its note's first chunk's meta column (memd.store.rows):
    # an exact probe, however many notes carry the name's words in tags or text.
    token = name_token(key)
    phrase = f'meta : "{token}"'
    hits = store.keyword_search(
        MatchQuery(phrase, (phrase,), ((token,),)),
        limit=_NAMED_LIMIT,
        since=req.since,
        until=req.until,
        file_ids=None if allowed is None else list(allowed),
    )
    out = []
    for hit in hits:
        if hit.source not in NAMED_SOURCES:
            continue
        # Aliases are read from this host's index only: a team hit is named by its title.
        local = hit.host is None
        if name_key(note_name(hit.path)) == key or (local and _has_alias(store, hit.path, key)):
            out.append(hit)
    return out


def backlinks(store: Store, path: str, limit: int = 50) -> list[str]:
    """Citations of the chunks that link to the note at ``path`` (by its file name), at
    most ``limit``."""
    title = note_name(path)
    key = name_key(title)
    if not key or NOSPACE_RUN.search(key):
        return []
    # A link's target is in its chunk's body words (memd.store.fts.fts_row): ask for those.
    phrase = f'body : "{key}"'
    hits = store.keyword_search(MatchQuery(phrase, (phrase,), ((key,),)), limit=limit)
    return [
        citation(hit.path, hit.start_line, hit.end_line)
        for hit in sorted(hits, key=lambda h: (h.path, h.start_line))
        if hit.path != path and any(name_key(target) == key for target, _ in links(hit.text))
    ]


def stubs_linked(store: Store, results: list[SearchResult]) -> list[SearchResult]:
    """``results`` with what links to each stub among them: a note with no body is its
    name, aliases, tags and the notes that link to it, as Obsidian lists it."""
    out = []
    for r in results:
        local = r.host is None and r.source in NAMED_SOURCES  # another host's: not read here
        if local and is_stub(note_name(r.path), r.start_line, r.heading, r.snippet):
            r = dataclasses.replace(r, backlinks=backlinks(store, r.path) or None)
        out.append(r)
    return out


def _has_alias(store: Store, path: str, key: str) -> bool:
    meta = store.file_meta(path)
    return meta is not None and any(name_key(alias) == key for alias in meta.aliases)


def lift(cands: list[Candidate], lifts: list[tuple[Hit, float]]) -> list[Candidate]:
    """The candidates with each chunk of ``lifts`` at least at its relevance (added when
    neither side proposed it)."""
    if not lifts:
        return cands
    by_id = {c.hit.chunk_id: c for c in cands}
    out = list(cands)
    for hit, relevance in lifts:
        c = by_id.get(hit.chunk_id)
        if c is None:
            c = by_id[hit.chunk_id] = Candidate(hit)
            out.append(c)
        c.relevance = max(c.relevance, relevance)
    return out


@dataclass(frozen=True)
class QueryTerms:
    """A query's terms and each one's idf weight."""

    match: MatchQuery
    weights: list[float]
    found: list[float]  # ``weights``, 0 for a term no chunk holds

    def titled(self, heading: str) -> float:
        """The idf-weighted share of the terms some chunk holds that the section's own
        heading holds: a section titled "Database" is about databases."""
        own = set(_WORD.findall(heading.rsplit(">", 1)[-1].lower()))
        held = [
            any(set(_WORD.findall(form.lower())) <= own for form in forms)
            for forms in self.match.words
        ]
        return coverage(self.found, held)

    def held(self, store: Store, chunk_ids: Sequence[int]) -> dict[int, list[bool]]:
        """For each of ``chunk_ids``, which of the terms it holds."""
        holders = store.term_holders(self.match, chunk_ids)
        return {i: [i in chunks for chunks in holders] for i in chunk_ids}


def query_terms(store: Store, query: str) -> QueryTerms | None:
    """The terms of ``query`` as the index sees them; None if it has no words."""
    match = match_query(query)
    if match is None:
        return None
    total, counts = store.term_counts(match)
    weights = [idf(n, total) for n in counts]
    return QueryTerms(
        match, weights, [w if n else 0.0 for w, n in zip(weights, counts, strict=True)]
    )


def keyword_candidates(
    store: Store,
    req: SearchRequest,
    terms: QueryTerms,
    limit: int,
    allowed: Mapping[int, str] | None,
) -> list[Candidate]:
    """Chunks matching any query word, best first, scored on BM25 per term and coverage."""
    if allowed == {}:
        return []
    hits = store.keyword_search(
        terms.match,
        limit=limit,
        since=req.since,
        until=req.until,
        file_ids=None if allowed is None else list(allowed),
    )
    query_idf = sum(terms.weights)
    held = terms.held(store, [h.chunk_id for h in hits])
    return [
        Candidate(
            h,
            per_term(h.bm25, query_idf),
            coverage(terms.weights, held[h.chunk_id]),
            titled=terms.titled(h.heading),
        )
        for h in hits
    ]


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


def attach_vectors(
    cands: list[Candidate], index: VectorIndex, query: np.ndarray, band: tuple[float, float]
) -> None:
    """Give every candidate its best passage's vector, cosine and vector score."""
    nearest = index.nearest_parts([c.hit.chunk_id for c in cands], query)
    for c in cands:
        found = nearest.get(c.hit.chunk_id)
        if found is not None:
            c.vec, c.parts = found.vector, found.parts
            if c.cosine is None:
                c.cosine = found.cosine
            c.vector = cosine_score(c.cosine, band)


def attach_agreement(
    store: Store, model: str, cands: list[Candidate], terms: QueryTerms, band: tuple[float, float]
) -> None:
    """Give every candidate with passage vectors its best passage on meaning and words
    together (``memd.search.ranking.passage_agreement``)."""
    holds = terms.held(store, [c.hit.chunk_id for c in cands if c.parts])
    held = {chunk_id: [i for i, h in enumerate(has) if h] for chunk_id, has in holds.items()}
    # A passage holds only terms its chunk holds: a chunk holding none needs no text.
    words = store.passage_terms(model, [chunk_id for chunk_id, ts in held.items() if ts])
    matcher = TermMatcher(terms.match, terms.weights)
    for c in cands:
        if c.parts:
            among = held[c.hit.chunk_id]
            shares = {
                part: matcher.share(words[c.hit.chunk_id, part], among)
                for part in c.parts
                if (c.hit.chunk_id, part) in words
            }
            c.agreement = passage_agreement(c.parts, shares, band)
