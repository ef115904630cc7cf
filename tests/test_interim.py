"""The interim tier: every chunk searchable by meaning while the full model back-fills."""

import hashlib
import threading

import numpy as np
import pytest

from memd.embed.interim import WordVectors, words
from memd.embed.providers import local_available
from memd.memory import Memory
from memd.records import embedding_progress
from memd.search.request import SearchRequest
from memd.store.vectors import VectorIndex

needs_local = pytest.mark.skipif(not local_available(), reason="memd[local] is not installed")


def hashed(batch: list[str]) -> np.ndarray:
    """A fixed unit vector per word (a stand-in model that always answers alike)."""
    rows = []
    for word in batch:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows)


def test_a_rare_word_weighs_more_than_a_common_one_and_each_word_is_embedded_once():
    asked: list[str] = []
    table = WordVectors(lambda batch, first: asked.extend(batch) or hashed(batch), 16)
    texts = [words(t) for t in ["the cat sat", "the dog ran", "the bird flew", "the zebra"]]
    table.count(texts)
    assert table.learn(texts) == 8 and table.learn(texts) == 0  # nothing embedded twice
    assert sorted(asked) == sorted(set(asked))
    assert table.idf("zebra") > table.idf("the")
    zebra, the = table.compose([["zebra"], ["the"]])
    both = table.compose([["the", "zebra"]])[0]
    assert float(both @ zebra) > float(both @ the)  # the rare word leads the direction
    assert not table.compose([["never", "learned"]]).any()  # unknown words add nothing


def test_the_vector_index_holds_rows_made_in_memory():
    index = VectorIndex("interim")
    assert index.holds([1, 2]) == set()
    index.add(np.array([7, 7, 9]), np.array([0, 1, 0]), np.eye(3, dtype=np.float32))
    assert index.holds([7, 8, 9]) == {7, 9}
    assert [chunk for chunk, _ in index.search(np.array([0, 1, 0], np.float32), 2)] == [7, 9]


def test_status_tells_the_interim_tiers_progress():
    progress = {"done": 300, "total": 1200, "per_s": 30.0, "eta_s": 30}
    recent = {"days": 7.0, "chunks": 10, "full": 4, "interim": 6}
    tier = type("Tier", (), {"progress": lambda self: progress})()
    db = type("Db", (), {"interim": tier, "recent_coverage": lambda self: recent})()
    shown = embedding_progress(40, 1160, 2.0, db)
    assert shown["interim"] == progress and shown["total"] == 1200
    assert shown["recent"] == recent
    assert "interim" not in embedding_progress(40, 1160, 2.0)
    assert embedding_progress(1200, 0, 2.0, db) is None  # nothing waits: nothing shown


@needs_local
def test_notes_are_found_by_meaning_before_the_full_model_reaches_them(make_config, ws):
    ws.write("memory/2026-03-01.md", "# Home\n- We adopted a puppy called Biscuit.\n")
    ws.write("memory/2026-03-02.md", "# Work\n- The database migration moved to Friday.\n")
    ws.write("memory/2026-03-03.md", "# Food\n- Tried a new pasta recipe with basil.\n")
    with Memory(make_config(embeddings={"provider": "local"})) as m:
        m.index()
        question = SearchRequest("which pet animal joined the family", mode="vector")
        before = m.search(question).as_dict()
        assert before["mode"] == "keyword" and "no chunk has a vector" in before["warning"]
        m.db.build_interim(threading.Event())
        assert m.db.vector_counts() == (0, 3)  # not one full vector yet
        answer = m.search(question).as_dict()
        assert answer["mode"] == "vector" and "warning" not in answer
        assert answer["results"][0]["path"] == "memory/2026-03-01.md"
        shown = m.status().embedding["interim"]
        assert (shown["done"], shown["total"], shown["eta_s"]) == (3, 3, 0)
        m.embed_all()  # the full model's vectors take over, chunk by chunk
        hybrid = m.search(SearchRequest("which pet animal joined the family")).as_dict()
        assert hybrid["results"][0]["path"] == "memory/2026-03-01.md"
        assert m.status().embedding is None


def test_the_status_line_shows_the_interim_tier_beside_the_full_model():
    from memd.cli.format import embedding_line

    shown = {"done": 40, "total": 1200, "per_s": 2.0, "eta_s": 580}
    assert embedding_line(shown) == "40/1200 chunks, 2.0/s, about 10 min left"
    shown["interim"] = {"done": 400, "total": 1160, "per_s": None, "eta_s": None}
    assert embedding_line(shown).endswith("; interim vectors 400/1160 chunks")
    shown["interim"] = {"done": 400, "total": 1160, "per_s": 4.0, "eta_s": 190}
    assert embedding_line(shown).endswith("; interim vectors 400/1160 chunks, about 3 min left")


def test_the_vocabulary_leaves_out_numbers_and_hashes_and_keeps_the_most_frequent():
    """A back-fill embeds word-like tokens only, those in two chunks or more first, the
    most frequent first, up to the cap; a search's own words are embedded whatever."""
    from memd.embed.interim import wordlike

    assert all(wordlike(w) for w in ["database", "2fa", "mp3", "k8s", "café"])
    assert not any(
        wordlike(w) for w in ["2026", "42", "d41d8cd98f00b204", "0x7ffe", "192", "sha256", "a" * 30]
    )
    asked: list[str] = []
    table = WordVectors(lambda batch, first: asked.extend(batch) or hashed(batch), 16)
    bags = [words(t) for t in [
        "deploy the cache 9f86d081884c7d65", "deploy the queue 2026", "the cache warms",
        "a zebra",
    ]]  # fmt: skip
    table.count(bags)
    assert table.vocabulary(cap=3) == {"the", "deploy", "cache"}  # in 3, 2 and 2 chunks
    assert "zebra" in table.vocabulary()  # in one chunk: after those, within the cap
    assert table.learn(bags, only=table.vocabulary(cap=3)) == 3
    assert sorted(asked) == ["cache", "deploy", "the"]
    table.learn([["zebra", "2026"]], first=True)  # a question's words: all of them
    assert {"zebra", "2026"} <= set(asked)


def test_equal_mtimes_order_the_interim_tier_by_the_notes_dates_then_their_links():
    """After a git checkout (one mtime for all) the newest dated notes come first, then the
    notes most others link to, not path order; MEMORY.md leads whatever."""
    from memd.index.interim import reading_order

    checkout = 1_760_000_000.0
    files = {
        "MEMORY.md": ("core", None, checkout),
        "a/old.md": ("extra", "2024-01-05", checkout),
        "a/plain.md": ("extra", None, checkout + 1),
        "b/hub.md": ("extra", None, checkout + 2),
        "c/new.md": ("extra", "2025-06-01", checkout + 3),
        "z/linker.md": ("extra", None, checkout + 4),
        "z/linker2.md": ("extra", None, checkout + 5),
    }
    body = {"z/linker.md": "see [[hub]] and [[plain]]", "z/linker2.md": "see [[Hub|the hub]]"}
    chunks = [(n, "", body.get(p, "text"), None, p) for n, p in enumerate(sorted(files))]
    order = [row[4] for row in reading_order(chunks, files)]
    assert order[:4] == ["MEMORY.md", "c/new.md", "a/old.md", "b/hub.md"]
    assert order[4] == "a/plain.md"  # one link, then the unlinked in their first order
    # Mtimes spread over months do order the notes: the newest first.
    spread = {p: (s, d, checkout - n * 86400 * 30) for n, (p, (s, d, _)) in enumerate(
        sorted(files.items()))}  # fmt: skip
    order = [row[4] for row in reading_order(chunks, spread)]
    assert order.index("a/plain.md") < order.index("z/linker.md")


def test_status_says_which_tier_covers_the_newest_week(openai_config, ws):
    """While a back-fill runs, status counts the newest week's chunks with the full model's
    vectors apart from those with only interim vectors; older notes are not counted."""
    import datetime as dt

    today = dt.date.today()
    for n in range(3):
        day = (today - dt.timedelta(days=n)).isoformat()
        ws.write(f"memory/{day}.md", f"# {day}\n\n- note {n} about the deploy\n")
    ws.write("memory/2020-01-01.md", "# 2020-01-01\n\n- an old note\n")
    with Memory(openai_config()) as m:
        m.index()
        assert m.status().embedding["recent"] == {"days": 7.0, "chunks": 3, "full": 0,
                                                  "interim": 0}  # fmt: skip
        m.db.build_interim(threading.Event())
        assert m.status().embedding["recent"]["interim"] == 3
        m.embed_all()
        assert m.status().embedding is None  # nothing waits: nothing shown


def test_a_daemon_makes_the_interim_tier_once_a_back_fill_after_the_newest_week(
    serve, ws, embed_server
):
    """A large back-fill: the full model embeds the newest week first, then the interim
    tier is made once (not again and again while the full model goes on)."""
    import datetime as dt

    today = dt.date.today().isoformat()
    ws.write(f"memory/{today}.md", f"# {today}\n\n- today's note about the harbour\n")
    for n in range(200):  # 800 chunks: a back-fill large enough for the interim tier
        text = "".join(f"## Part {k}\n\nold note {n} part {k} about topic{n}x{k}\n\n"
                       for k in range(4))  # fmt: skip
        ws.write(f"memory/2020-01-{n % 28 + 1:02d}-n{n}.md", f"# Old {n}\n\n{text}")
    embed_server.delay = 0.02  # the full model takes a while: the tier is made meanwhile
    d = serve(
        f"embeddings: {{provider: openai, model: concepts-1, base_url: {embed_server.url}, "
        "retries: 0, timeout_s: 5, debounce_ms: 0, batch_size: 8}\n"
    )
    d.wait_for(lambda: '"interim_vectors_made"' in d.log(), 120, "the interim tier")
    embedding = d.call("status").get("embedding") or {}
    assert embedding.get("recent", {}).get("full") == embedding.get("recent", {}).get("chunks")
    embed_server.delay = 0.0
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, 120, "the full model")
    assert d.log().count('"interim_vectors_made"') == 1


def test_an_answer_during_a_large_back_fill_says_meaning_is_not_ready(openai_config, ws):
    """While most chunks wait for the full model, a hybrid answer says so (with how many,
    and how many the interim tier covers) rather than passing for a search by meaning; a
    small back-fill (an edit) or a finished one says nothing."""
    for n in range(520):  # one chunk each: a back-fill large enough to say so
        ws.write(
            f"memory/2020-02-{n % 28 + 1:02d}-n{n}.md", f"# Note {n}\n\nabout the deploy {n}\n"
        )
    with Memory(openai_config()) as m:
        m.index()
        assert m.embed_step(8) == 8  # the first vectors: the question is embedded, hybrid
        answer = m.search("deploy").as_dict()
        assert answer["mode"] == "hybrid" and answer["index"]["pending_embeddings"] == 512
        assert "meaning not ready: 512 chunks are not embedded yet;" in answer["warning"]
        m.db.build_interim(threading.Event())
        assert "512 of them with interim vectors" in m.search("deploy").as_dict()["warning"]
        assert "warning" not in m.search("deploy", mode="keyword").as_dict()
        while m.db.vector_counts()[1] >= 500:
            m.embed_step(8)
        assert "warning" not in m.search("deploy").as_dict()  # a few left: nothing said
