import datetime as dt

import numpy as np
import pytest

from memd.config import Search
from memd.ranking import (
    Candidate,
    decay_factor,
    fuse_rrf,
    fuse_weighted,
    merge,
    mmr,
    normalise_cosines,
    rank,
)
from memd.schema import Hit

TODAY = dt.date(2026, 11, 21)


def hit(chunk_id, path="MEMORY.md", date=None):
    return Hit(chunk_id, path, 1, 2, "", f"text {chunk_id}", "daily" if date else "core", date, 0)


def days_ago(n):
    return (TODAY - dt.timedelta(days=n)).isoformat()


def vector_only(settings=None):
    return settings or Search(vector_weight=1.0, text_weight=0.0, mmr=False)


def test_fuse_weighted():
    a, b = Candidate(hit(1), text=1.0, vector=0.5), Candidate(hit(2), text=0.0, vector=1.0)
    fuse_weighted([a, b], 0.7, 0.3)
    assert a.relevance == pytest.approx(0.65) and b.relevance == pytest.approx(0.7)
    fuse_weighted([a], 2.0, 2.0)  # weights are normalised
    assert a.relevance == pytest.approx(0.75)


def test_fuse_rrf():
    a = Candidate(hit(1), text=0.9, vector=0.8)  # first on both sides
    b = Candidate(hit(2), text=0.5, vector=0.0)  # second on text only
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
    old = Candidate(hit(1, "memory/2020-01-01.md", "2020-01-01"), vector=0.5)
    results = rank([old], 6, 0.4, vector_only(), TODAY, "weighted")
    assert len(results) == 1 and results[0].score == pytest.approx(0.3, abs=0.01)


def test_mmr_prefers_diverse_results():
    same = np.array([1.0, 0.0], dtype=np.float32)
    other = np.array([0.0, 1.0], dtype=np.float32)
    a = Candidate(hit(1), score=0.9, vec=same)
    b = Candidate(hit(2), score=0.88, vec=same)  # a near-duplicate of a
    c = Candidate(hit(3), score=0.8, vec=other)
    assert [x.hit.chunk_id for x in mmr([a, b, c], 0.7, 2)] == [1, 3]
    assert [x.hit.chunk_id for x in mmr([a, b, c], 1.0, 2)] == [1, 2]  # lambda 1: relevance


def test_normalise_cosines():
    cands = [
        Candidate(hit(1), cosine=0.85),
        Candidate(hit(2), cosine=0.75),
        Candidate(hit(3), cosine=0.80),
        Candidate(hit(4)),
    ]
    normalise_cosines(cands)
    assert [c.vector for c in cands] == pytest.approx([1.0, 0.0, 0.5, 0.0])


def test_merge_keeps_both_scores():
    kw = [Candidate(hit(1), text=0.8)]
    vec = [Candidate(hit(1), cosine=0.9), Candidate(hit(2), cosine=0.7)]
    merged = {c.hit.chunk_id: c for c in merge(kw, vec)}
    assert merged[1].text == 0.8 and merged[1].cosine == 0.9
    assert merged[2].text == 0.0
