"""An embedding endpoint that misbehaves: NaN or inf vectors, a model that changes size
under the same name. Against the real OpenAI-protocol test server."""

import math

import numpy as np
import pytest

from memd.embed.providers import make_embedder
from memd.errors import BackendUnavailable
from memd.memory import Memory
from memd.search.request import SearchRequest

PARAPHRASE = "which datastore did we select"


@pytest.fixture
def notes(ws):
    ws.write(
        "memory/2026-01-20.md", "# 2026-01-20\n\n## Storage\nWe picked Postgres for storage.\n"
    )
    ws.write("memory/2026-01-21.md", "# 2026-01-21\n\n## Lunch\nTried the new ramen place.\n")
    ws.write("MEMORY.md", "# Memory\n\n## Interface\nThe public API is REST.\n")


@pytest.mark.parametrize("poison", [math.nan, math.inf, -math.inf])
def test_non_finite_vectors_are_an_endpoint_error(openai_config, embed_server, poison):
    embed_server.poison = poison
    with pytest.raises(BackendUnavailable, match="NaN or infinite"):
        make_embedder(openai_config().embeddings).embed(["we picked postgres"])


def test_a_nan_query_vector_is_not_cached_and_nan_vectors_are_not_stored(
    openai_config, embed_server, notes
):
    with Memory(openai_config()) as m:
        m.index()
        embed_server.poison = math.nan
        with pytest.raises(BackendUnavailable):
            m.embed_all()
        assert m.db.vector_counts() == (0, 3)
        (cached,) = m.db.store.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        assert cached == 0
        embed_server.poison = None
        assert m.embed_all() == 3
        embed_server.poison = math.nan
        answer = m.search(SearchRequest(PARAPHRASE, min_score=0)).as_dict()
        assert answer["mode"] == "keyword" and "NaN" in answer["warning"]
        embed_server.poison = None  # the bad query vector was not kept: meaning works again
        answer = m.search(SearchRequest(PARAPHRASE)).as_dict()
        assert answer["mode"] == "hybrid" and "warning" not in answer
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"


def test_nan_vectors_already_stored_are_left_out_of_search(openai_config, embed_server, notes):
    with Memory(openai_config()) as m:
        m.index()
        m.embed_all()
        bad = np.full(64, np.nan, dtype="<f4").tobytes()
        with m.db.store.transaction():
            m.db.store.db.execute("UPDATE vectors SET vector = ? WHERE id = 1", (bad,))
        answer = m.search(SearchRequest(PARAPHRASE)).as_dict()
        assert answer["mode"] == "hybrid"
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"
        assert len(m.db.vectors) == 2


def test_a_model_that_changes_size_in_a_running_process(openai_config, embed_server, notes):
    with Memory(openai_config()) as m:
        m.index()
        m.embed_all()
        assert m.search(SearchRequest(PARAPHRASE)).mode == "hybrid"
        embed_server.dims = 32  # another model behind the same name
        answer = m.search(SearchRequest("postgres")).as_dict()
        assert answer["mode"] == "keyword" and "32 dimensions" in answer["warning"]
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"
        assert m.db.vector_counts() == (0, 3)  # the old vectors count as missing
        assert m.search(SearchRequest("postgres")).mode == "keyword"  # never an error
        assert m.embed_all() == 3
        answer = m.search(SearchRequest(PARAPHRASE)).as_dict()
        assert answer["mode"] == "hybrid" and "warning" not in answer
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"


def test_a_model_that_changed_size_across_a_restart_and_full_reindex(
    openai_config, embed_server, notes
):
    """The cache must not put the old model's vectors back."""
    cfg = openai_config()
    with Memory(cfg) as m:
        m.index()
        m.embed_all()
    embed_server.dims = 32
    with Memory(cfg) as m:  # a restart: nothing pending, the change shows on the first query
        answer = m.search(SearchRequest("postgres")).as_dict()
        assert answer["mode"] == "keyword" and "dimensions" in answer["warning"]
        assert answer["results"]
    sent = len(embed_server.texts)
    with Memory(cfg) as m:  # `memd index --full`
        m.index(full=True)
        assert m.embed_all() == 3
        assert len(embed_server.texts) == sent + 1 + 3  # the size probe, then all three again
        answer = m.search(SearchRequest(PARAPHRASE)).as_dict()
        assert answer["mode"] == "hybrid" and "warning" not in answer
        assert answer["results"][0]["path"] == "memory/2026-01-20.md"
        probe = np.ones(32, dtype=np.float32) / np.sqrt(32)
        held = m.db.vectors.nearest_parts(list(range(1, 20)), probe)
        assert held and {len(near.vector) for near in held.values()} == {32}


def test_the_daemon_re_embeds_after_a_size_change_and_answers_meanwhile(serve, embed_server, notes):
    d = serve(
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 0, debounce_ms: 100}}\n"
    )
    d.wait_for(lambda: d.call("status")["embedded_chunks"] == 3, what="back-fill")
    assert d.call("memory_search", query=PARAPHRASE)["mode"] == "hybrid"
    embed_server.dims = 32
    answer = d.call("memory_search", query="postgres")  # an answer, never an error
    assert answer["results"][0]["path"] == "memory/2026-01-20.md"
    assert answer["mode"] == "keyword" and "dimensions" in answer["warning"]

    def meaning_again():
        answer = d.call("memory_search", query=PARAPHRASE)
        return answer["mode"] == "hybrid" and "warning" not in answer and answer

    answer = d.wait_for(meaning_again, what="re-embedded under the new size")
    assert answer["results"][0]["path"] == "memory/2026-01-20.md"
    assert d.call("status")["embedded_chunks"] == 3
    assert '"embedding_dimensions_stale"' in d.log()
