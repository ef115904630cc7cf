import time

from memd.search.bounds import MAX_QUERY_CHARS, MAX_QUERY_TERMS, bound_query


def test_a_short_query_is_untouched():
    assert bound_query("which database did we pick") == ("which database did we pick", None)


def test_a_query_is_cut_to_its_first_distinct_terms():
    words = [f"w{i}" for i in range(200)]
    query = " ".join(["the", "w0", "w0", *words])
    kept, warning = bound_query(query)
    assert kept.split()[-1] == f"w{MAX_QUERY_TERMS - 1}"  # repeats and stopwords are free
    assert "first 67 of 203 words" in warning


def test_a_long_word_is_cut_to_the_character_bound():
    kept, warning = bound_query("x" * 1_000_000)
    assert len(kept) == MAX_QUERY_CHARS and "characters" in warning


def test_a_huge_query_is_answered_quickly_with_a_warning(memory, ws):
    ws.write("memory/2026-01-02.md", "# Notes\nThe w17 project uses Postgres.\n")
    memory.index()
    query = " ".join(f"w{i}" for i in range(60_000))  # 1 MB of distinct words
    started = time.perf_counter()
    answer = memory.search(query, min_score=0)
    assert time.perf_counter() - started < 1.0
    assert [r.path for r in answer.results] == ["memory/2026-01-02.md"]
    assert "query cut to its first 64 of 60000 words" in answer.warning
