import datetime as dt

import numpy as np
import pytest

from memd.config import Search
from memd.search.ranking import (
    VECTOR_ALONE_AT,
    Candidate,
    cosine_score,
    coverage,
    decay_factor,
    fuse,
    fuse_rrf,
    fuse_weighted,
    idf,
    merge,
    mmr,
    passage_agreement,
    per_term,
    select,
    vector_alone,
)
from memd.store.rows import Hit


def rank(cands, max_results, min_score, settings, today, fusion):
    """What ``Searcher`` does between candidates and results, when nothing reranks."""
    fuse(cands, settings, fusion)
    return select(cands, max_results, min_score, settings, today)


TODAY = dt.date(2026, 11, 21)


def hit(chunk_id, path="MEMORY.md", date=None):
    return Hit(chunk_id, path, 1, 2, "", f"text {chunk_id}", "daily" if date else "core", date, 0)


def days_ago(n):
    return (TODAY - dt.timedelta(days=n)).isoformat()


def vector_only(settings=None):
    return settings or Search(vector_weight=1.0, text_weight=0.0, mmr=False, decay=True)


def test_fuse_weighted():
    a = Candidate(hit(1), per_term=1.0, coverage=1.0, cosine=0.8, vector=0.5)
    b = Candidate(hit(2), cosine=0.9, vector=1.0)
    fuse_weighted([a, b], 0.4, 0.6)
    assert a.relevance == pytest.approx(0.4 * 0.5 + 0.6 * 0.5) and b.relevance == pytest.approx(0.4)
    fuse_weighted([a], 2.0, 3.0)  # weights are normalised
    assert a.relevance == pytest.approx(0.5)


def test_hybrid_blends_the_best_passage_on_meaning_and_words_together():
    band = (0.75, 0.9)
    # Passage 0 is nearest in meaning; passage 1 holds the question's words.
    split = passage_agreement({0: 0.9, 1: 0.8}, {1: 1.0}, band)
    assert split == pytest.approx(max(0.7 * 1.0, 0.7 * (0.05 / 0.15) + 0.3 * 1.0))
    # One passage both near in meaning and holding the words: the most a chunk can have.
    together = passage_agreement({0: 0.9, 1: 0.8}, {0: 1.0}, band)
    assert together == pytest.approx(1.0) and together > split
    assert passage_agreement({}, {}, band) == 0.0
    a = Candidate(hit(1), per_term=1.0, coverage=1.0, cosine=0.825, vector=0.5, agreement=0.9)
    fuse_weighted([a], 0.4, 0.6)
    assert a.relevance == pytest.approx(0.65 * (0.4 * 0.5 + 0.6 * 0.5) + 0.35 * 0.9)
    fuse_weighted([a], 0.0, 1.0)  # keyword mode has no passages to judge
    assert a.relevance == pytest.approx(1.0 / 1.5)


def test_a_chunk_without_a_vector_keeps_its_keyword_evidence():
    """Hybrid never loses to keyword: no vector yet means ranked as keyword mode ranks it."""
    pending = Candidate(hit(1), per_term=3.0, coverage=1.0)
    fuse_weighted([pending], 0.4, 0.6)
    assert pending.relevance == pytest.approx(3.0 / 3.5)
    fuse_weighted([pending], 0.0, 1.0)
    assert pending.relevance == pytest.approx(3.0 / 3.5)


def test_an_interim_vector_adds_to_the_keyword_evidence_and_never_takes_from_it():
    """Early in a back-fill a chunk's vector may come from words alone: a weak cosine on it
    must not make a clear keyword match read as weak (the floor was set without them)."""
    keywords = 3.0 / 3.5  # what keyword mode gives this chunk
    weak = Candidate(hit(1), per_term=3.0, coverage=1.0, cosine=0.1, vector=0.05, interim=True)
    full = Candidate(hit(2), per_term=3.0, coverage=1.0, cosine=0.1, vector=0.05)
    near = Candidate(hit(3), cosine=1.8, vector=0.9, interim=True)  # no keyword match
    fuse_weighted([weak, full, near], 0.4, 0.6)
    assert weak.relevance == pytest.approx(keywords)
    assert full.relevance < keywords  # the full model's weak cosine still counts against it
    assert near.relevance == pytest.approx(0.4 * 0.9)  # and one found by meaning alone ranks


def test_coverage_weighs_rare_terms():
    common, rare = idf(90, 100), idf(2, 100)
    assert common < 0.1 < rare
    assert coverage([common, rare], [False, True]) > 0.9  # the name everywhere hardly counts
    assert coverage([common, rare], [True, False]) < 0.1
    assert coverage([], []) == 0.0


def test_scores_read_alike_in_small_and_large_workspaces():
    """A one-chunk workspace (FTS5 idf ~0) and a big one give a good match the same score."""
    tiny = per_term(1e-6 * 1.5, 1e-6)
    big = per_term(idf(1, 50_000) * 1.5, idf(1, 50_000))
    assert tiny == pytest.approx(big) == pytest.approx(1.5)


def test_cosine_score_is_fixed_per_model():
    assert cosine_score(0.70, (0.75, 0.9)) == 0.0
    assert cosine_score(0.825, (0.75, 0.9)) == pytest.approx(0.5)
    assert cosine_score(0.95, (0.75, 0.9)) == 1.0


def test_fuse_rrf():
    a = Candidate(hit(1), per_term=9.0, coverage=1.0, vector=0.8)  # first on both sides
    b = Candidate(hit(2), per_term=1.0, coverage=1.0, vector=0.0)  # second on text only
    fuse_rrf([a, b])
    assert a.relevance == pytest.approx(1.0)
    assert b.relevance == pytest.approx((1 / 62) / (2 / 61))


def test_decay_factor():
    assert decay_factor(None, TODAY, 30, 0.6, 0.4) == 1.0  # evergreen
    assert decay_factor(days_ago(0), TODAY, 30, 0.6, 0.4) == pytest.approx(1.0)
    assert decay_factor(days_ago(30), TODAY, 30, 0.6, 0.4) == pytest.approx(0.8)
    assert decay_factor(days_ago(3650), TODAY, 30, 0.6, 0.4) == pytest.approx(0.6)
    assert decay_factor(days_ago(-5), TODAY, 30, 0.6, 0.4) == pytest.approx(1.0)  # future


def test_a_year_old_clear_answer_outranks_last_weeks_weak_match():
    """Decay prefers recent notes among near-equals; it does not bury a clearly better one."""
    old = Candidate(hit(1, "memory/2025-11-21.md", days_ago(365)), vector=0.9)
    recent = Candidate(hit(2, "memory/2026-11-14.md", days_ago(7)), vector=0.45)
    results = rank([recent, old], 6, 0.0, vector_only(), TODAY, "weighted")
    assert [r.path for r in results] == ["memory/2025-11-21.md", "memory/2026-11-14.md"]


def test_an_evergreen_weak_match_does_not_bury_a_strong_daily_one():
    evergreen = Candidate(hit(1, "MEMORY.md"), vector=0.45)
    daily = Candidate(hit(2, "memory/2026-01-20.md", days_ago(305)), vector=0.9)
    results = rank([evergreen, daily], 6, 0.0, vector_only(), TODAY, "weighted")
    assert results[0].path == "memory/2026-01-20.md"


def test_decay_breaks_near_ties_toward_recent_notes():
    older = Candidate(hit(1, "memory/2026-08-01.md", days_ago(112)), vector=0.8)
    newer = Candidate(hit(2, "memory/2026-11-19.md", days_ago(2)), vector=0.78)
    results = rank([older, newer], 6, 0.0, vector_only(), TODAY, "weighted")
    assert results[0].path == "memory/2026-11-19.md"
    off = rank(
        [older, newer],
        6,
        0.0,
        Search(vector_weight=1, text_weight=0, mmr=False, decay=False),
        TODAY,
        "weighted",
    )
    assert off[0].path == "memory/2026-08-01.md"


def test_min_score_is_applied_before_decay():
    """An old note above min_score stays in the results though decay lowers its score."""
    old = Candidate(hit(1, "memory/2020-01-01.md", "2020-01-01"), vector=0.8)
    results = rank([old], 6, 0.4, vector_only(), TODAY, "weighted")
    assert len(results) == 1 and results[0].score == pytest.approx(
        0.6 * vector_alone(0.8), abs=1e-4
    )


def test_a_cosine_alone_is_strong_only_where_it_is_as_sure_as_the_floor():
    """Vector-only relevance puts the cosine score that leaves as few unanswered questions
    a result as the floor does on the other scales at the floor; 0 and 1 and the order
    stay."""
    assert vector_alone(0.0) == 0.0 and vector_alone(1.0) == pytest.approx(1.0)
    assert vector_alone(VECTOR_ALONE_AT) == pytest.approx(Search().min_score)
    scores = [i / 100 for i in range(101)]
    mapped = [vector_alone(s) for s in scores]
    assert mapped == sorted(mapped) and len(set(mapped)) == len(mapped)
    # A cosine of 0.5 on the band, strong before, is weak now; one of 0.7 still strong.
    for vector, match in ((0.5, []), (0.7, ["strong"])):
        c = Candidate(hit(1), cosine=0.8, vector=vector)
        found = rank([c], 6, Search().min_score, vector_only(), TODAY, "weighted")
        assert [r.match for r in found] == match


def test_mmr_prefers_diverse_results():
    same = np.array([1.0, 0.0], dtype=np.float32)
    other = np.array([0.0, 1.0], dtype=np.float32)
    a = Candidate(hit(1), score=0.9, vec=same)
    b = Candidate(hit(2), score=0.88, vec=same)  # a near-duplicate of a
    c = Candidate(hit(3), score=0.8, vec=other)
    assert [x.hit.chunk_id for x in mmr([a, b, c], 0.7, 2)] == [1, 3]
    assert [x.hit.chunk_id for x in mmr([a, b, c], 1.0, 2)] == [1, 2]  # lambda 1: relevance


def test_merge_keeps_both_scores():
    kw = [Candidate(hit(1), per_term=2.0, coverage=0.5)]
    vec = [Candidate(hit(1), cosine=0.9), Candidate(hit(2), cosine=0.7)]
    merged = {c.hit.chunk_id: c for c in merge(kw, vec)}
    assert (merged[1].per_term, merged[1].coverage, merged[1].cosine) == (2.0, 0.5, 0.9)
    assert merged[2].per_term == 0.0
