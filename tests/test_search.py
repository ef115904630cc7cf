import numpy as np
import pytest

from memd.errors import InvalidParams
from memd.memory import Memory
from memd.search.candidates import attach_agreement, attach_vectors, query_terms
from memd.search.ranking import Candidate, citation, snippet
from memd.search.request import SearchRequest
from memd.sources.chunker import Chunk
from memd.store.rows import FileMeta, chunk_rows
from memd.store.sqlite import SqliteStore
from memd.store.vectors import VectorIndex, to_blob


def unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def config(make_config):
    """Keyword ranking tests: no decay or newer-first, so dates in the notes do not move
    results."""
    return make_config(search={"decay": False, "newer_first": False})


@pytest.fixture
def notes(ws, memory):
    ws.write(
        "MEMORY.md",
        """\
        # Memory

        ## Decisions
        - We use Postgres 16 for the main database.
        - The public API is REST.
        """,
    )
    ws.write(
        "memory/2026-01-20.md",
        """\
        # 2026-01-20

        ## Database
        Benchmarked Postgres against MySQL for the order service.

        ## Lunch
        Tried the new ramen place.
        """,
    )
    ws.write("memory/2026-02-03.md", "# 2026-02-03\n\n## 会议\n我们决定使用Postgres数据库。\n")
    ws.write(
        "memory/projects.md",
        "---\ntags: [planning, atlas]\naliases: [Roadmap]\n---\n"
        "# Projects\n\nAtlas ships in March.\n",
    )
    memory.index()
    return memory


def search(memory, query, **kw):
    kw.setdefault("min_score", 0.0)
    return memory.search(SearchRequest(query, **kw)).as_dict()


def test_result_shape_matches_the_contract(notes):
    answer = search(notes, "ramen")
    assert answer["mode"] == "keyword" and answer["provider"] == "none"
    assert set(answer["index"]) == {
        "generation",
        "pending_files",
        "pending_embeddings",
        "stale",
        "last_indexed_at",
    }
    (hit,) = answer["results"]
    assert hit == {
        "path": "memory/2026-01-20.md",
        "start_line": 6,
        "end_line": 7,
        "score": hit["score"],
        "snippet": "## Lunch\nTried the new ramen place.",
        "heading": "# 2026-01-20 > ## Lunch",
        "source": "daily",
        "citation": "memory/2026-01-20.md#L6-L7",
        "match": "strong",
    }
    assert 0 < hit["score"] <= 1


def test_citations_are_line_exact(notes, ws):
    """The cited lines of the file are exactly the snippet's text."""
    for hit in search(notes, "postgres", max_results=10)["results"]:
        lines = (ws.root / hit["path"]).read_text(encoding="utf-8").split("\n")
        assert "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]]) == hit["snippet"]


def test_scores_are_sorted_and_in_range(notes):
    results = search(notes, "postgres database", max_results=10)["results"]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    # the chunk whose heading says Database outranks a passing mention
    assert results[0]["heading"].endswith("## Database")


def test_heading_matches_weigh_more_than_body(ws, memory):
    ws.write("memory/a.md", "# Other\nWe talked about the deployment briefly.\n")
    ws.write("memory/b.md", "# Deployment\nNotes from the meeting.\n")
    memory.index()
    assert search(memory, "deployment")["results"][0]["path"] == "memory/b.md"


def test_max_results_and_min_score(notes):
    assert len(search(notes, "postgres", max_results=1)["results"]) == 1
    every = search(notes, "postgres", max_results=10)["results"]
    assert len(every) >= 3
    cut = every[1]["score"]
    assert every[-1]["score"] < cut
    kept = search(notes, "postgres", max_results=10, min_score=cut)["results"]
    assert [r["citation"] for r in kept] == [r["citation"] for r in every if r["score"] >= cut]
    assert len(kept) < len(every)
    assert search(notes, "postgres", min_score=1.0)["results"] == []


def test_paths_filter(notes):
    found = search(notes, "postgres", paths=("memory/*.md",), max_results=10)["results"]
    assert found and all(r["path"].startswith("memory/") for r in found)
    assert search(notes, "postgres", paths=("nothing/**",))["results"] == []


def test_since_until_filter_daily_notes(notes):
    got = search(notes, "postgres", since="2026-02-01", max_results=10)["results"]
    assert [r["path"] for r in got] == ["memory/2026-02-03.md"]
    got = search(notes, "postgres", until="2026-01-31", max_results=10)["results"]
    assert [r["path"] for r in got] == ["memory/2026-01-20.md"]


def test_tags_and_aliases(notes):
    assert search(notes, "roadmap")["results"][0]["path"] == "memory/projects.md"
    assert search(notes, "atlas", tags=("planning",))["results"][0]["path"] == "memory/projects.md"
    assert search(notes, "postgres", tags=("planning",))["results"] == []


def test_cjk_query(notes):
    (hit,) = search(notes, "数据库")["results"]
    assert hit["path"] == "memory/2026-02-03.md"
    assert "我们决定使用Postgres数据库" in hit["snippet"]


def test_punctuation_and_fts_syntax_are_safe(notes):
    for q in ['"unclosed', "NEAR(a b)", "(", "^x", "col:postgres*"]:
        assert search(notes, q)["results"] == []  # col:postgres is one word, not a column
    for q in ["-postgres", "postgres?!", "postgres AND OR NOT"]:
        found = search(notes, q, max_results=10)["results"]
        assert found and all("Postgres" in r["snippet"] for r in found)


def test_queries_without_words_return_nothing(notes):
    assert search(notes, "...")["results"] == []


def test_vector_mode_without_embeddings_warns(notes):
    answer = search(notes, "postgres", mode="vector")
    assert answer["mode"] == "keyword" and "needs embeddings" in answer["warning"]
    assert answer["results"]


def test_default_min_score_keeps_a_clear_match(notes):
    """With default settings a natural question still finds the note that answers it."""
    answer = notes.search(SearchRequest("which database do we use")).as_dict()
    paths = {r["path"] for r in answer["results"]}
    assert "MEMORY.md" in paths


def test_a_one_note_workspace_finds_its_note_with_default_settings(ws, memory):
    """Tiny workspaces have no useful idf; the best match still clears min_score."""
    ws.write("MEMORY.md", "# Memory\n- We use Postgres 16.\n")
    memory.index()
    (hit,) = memory.search(SearchRequest("postgres")).as_dict()["results"]
    assert hit["path"] == "MEMORY.md" and hit["score"] >= 0.5


def test_snippet_and_citation():
    assert snippet("x" * 700) == "x" * 700
    long = snippet("y" * 2000)
    assert len(long) == 700 and long.endswith("…")
    assert citation("memory/a.md", 3, 3) == "memory/a.md#L3-L3"


def test_search_on_empty_index(memory):
    assert search(memory, "anything")["results"] == []


def test_library_and_socket_take_the_same_defaults(ws, make_config):
    """``search.max_results`` applies to a library search that sets none, as on the socket."""
    for n in range(5):
        ws.write(f"memory/n{n}.md", f"# Note {n}\nPostgres note number {n}.\n")
    with Memory(make_config(search={"max_results": 1})) as m:
        m.index()
        assert len(m.search("postgres").results) == 1
        assert len(m.search(SearchRequest("postgres")).results) == 1
        assert len(m.search("postgres", max_results=3).results) == 3


def test_unknown_mode_is_an_error_naming_the_modes(notes):
    with pytest.raises(InvalidParams, match="auto, hybrid, keyword, vector") as err:
        notes.search("postgres", mode="semantic")
    assert err.value.param == "mode"


def test_a_chunk_is_judged_by_the_passage_that_is_near_and_holds_the_words(tmp_path):
    """Two chunks, each holding 'lisbon' and 'hotel' and each with a passage as near the
    question: the one whose near passage is the one holding the words ranks higher."""
    store = SqliteStore.open(tmp_path / "a.sqlite")
    meta = FileMeta("memory/a.md", "/a", "/a", "memory", None, 1, 1, "h", 2)
    texts = ["The hotel in Lisbon was booked\nWe walked a lot",
             "We walked a lot in the old town\nLisbon, then a hotel"]  # fmt: skip
    chunks = [Chunk(n, n + 1, "", text, 9) for n, text in enumerate(texts, start=1)]
    with store.transaction():
        store.replace_file(meta, chunk_rows(meta, chunks))
    together, apart = [r[0] for r in store.db.execute("SELECT id FROM chunks ORDER BY id")]
    near, far = unit(1, 0.1), unit(0.1, 1)
    rows = [
        (together, 0, b"t0", to_blob(near), " the hotel in lisbon wa book "),
        (together, 1, b"t1", to_blob(far), " we walk a lot "),
        (apart, 0, b"a0", to_blob(near), " we walk a lot in the old town "),
        (apart, 1, b"a1", to_blob(far), " lisbon then a hotel "),
    ]
    with store.transaction():
        store.save_vectors("m", rows, cache_size=10)
    index = VectorIndex("m")
    index.refresh(store)
    terms = query_terms(store, "which hotel in lisbon")
    hits = store.chunks_by_id([together, apart])
    cands = [Candidate(hits[together]), Candidate(hits[apart])]
    attach_vectors(cands, index, unit(1, 0), (0.75, 0.9))
    assert cands[0].cosine == cands[1].cosine  # as near in meaning
    attach_agreement(store, "m", cands, terms, (0.75, 0.9))
    assert cands[0].agreement == pytest.approx(1.0)
    assert cands[1].agreement < 0.9
