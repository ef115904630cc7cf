"""The embedding queue serves people first (issue 32): the core file, then the newest
notes, then the rest; an edit jumps the queue. A real daemon and a real embeddings server
that records what it embeds, in order."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from memd.memory import Memory


def _sections(word: str, n: int) -> str:
    return "".join(
        f"## Part {i}\n\n{word}{i} " + " ".join(f"{word}{i}x{k}" for k in range(60)) + "\n\n"
        for i in range(n)
    )


def _first(texts: list[str], word: str) -> int:
    return next(i for i, t in enumerate(texts) if word in t)


def _last(texts: list[str], word: str) -> int:
    return max(i for i, t in enumerate(texts) if word in t)


def test_core_file_then_newest_notes_then_older_and_an_edit_jumps_ahead(
    serve, embed_server, openai_config, ws
):
    # Indexed earlier (no vectors yet): an old note with many chunks, an older one, the
    # newest note, and a topic file touched long ago; MEMORY.md appears afterwards, so its
    # chunks have the highest ids and the queue in id order would take it last.
    ws.write("memory/2019-03-01.md", "# 2019-03-01\n\n" + _sections("olderword", 2))
    ws.write("memory/2020-01-05.md", "# 2020-01-05\n\n" + _sections("oldword", 120))
    ws.write("memory/2026-02-01.md", "# 2026-02-01\n\n" + _sections("newword", 2))
    topic = ws.write("memory/topic.md", "# Topic\n\n" + _sections("topicword", 2))
    long_ago = 1420070400  # 2015-01-01: older than every dated note
    os.utime(topic, (long_ago, long_ago))
    with Memory(openai_config()) as m:
        m.index()
    ws.write("MEMORY.md", "# Memory\n\n" + _sections("coreword", 2))
    assert embed_server.texts == []

    embed_server.delay = 1.0  # one batch a second: the queue is still long when we edit
    d = serve(
        "watch: {debounce_ms: 50}\n"
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 0, debounce_ms: 0, batch_size: 8}}\n"
    )
    d.wait_for(lambda: embed_server.texts, timeout=30, what="the first batch")
    with (ws.root / "memory/2019-03-01.md").open("a") as f:
        f.write("## Late\n\nzebraword came up again today.\n")
    d.wait_for(lambda: d.search("zebraword", mode="keyword"), timeout=30, what="edit indexed")
    embed_server.delay = 0.0
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, timeout=120, what="done")

    texts = list(embed_server.texts)
    core, new = _first(texts, "coreword"), _first(texts, "newword")
    assert core == 0 and _last(texts, "coreword") < new
    assert _last(texts, "newword") < _first(texts, "oldword")
    # Undated: by its mtime, older than every dated note.
    assert _last(texts, "oldword") < _first(texts, "topicword")
    # The edit came while the old note waited: it went first, not after everything.
    assert _first(texts, "zebraword") < _last(texts, "oldword")


def test_status_shows_embedding_progress_with_a_rate_and_time_left(
    serve, embed_server, ws, tmp_path
):
    ws.write("memory/2026-01-05.md", "# 2026-01-05\n\n" + _sections("word", 80))
    embed_server.delay = 0.3  # slow enough to watch the back-fill, never asserted on
    d = serve(
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 0, debounce_ms: 0, batch_size: 8}}\n"
    )
    status = d.wait_for(
        lambda: (s := d.call("status")).get("embedding", {}).get("per_s") and s,
        timeout=60,
        what="a measured rate",
    )
    e = status["embedding"]
    assert e["total"] == status["chunks"] and e["done"] == status["embedded_chunks"]
    assert 0 < e["done"] < e["total"] and e["per_s"] > 0
    assert e["eta_s"] == round((e["total"] - e["done"]) / e["per_s"])

    # The same numbers for people and for scripts: `memd status` and `memd status --json`.
    env = {**os.environ, "HOME": str(tmp_path)}
    memd = [sys.executable, "-m", "memd", "--config", str(d.config_path), "status"]
    shown = json.loads(subprocess.run([*memd, "--json"], env=env, capture_output=True,
                                      text=True, timeout=60, check=True).stdout)  # fmt: skip
    assert set(shown["embedding"]) == {"done", "total", "per_s", "eta_s", "recent"}
    human = subprocess.run(memd, env=env, capture_output=True, text=True, timeout=60, check=True)
    line = next(x for x in human.stdout.splitlines() if x.startswith("embedding "))
    assert re.search(r"\d+/\d+ chunks, [\d.]+/s, about \d+ (s|min|h)", line), line

    embed_server.delay = 0.0
    d.wait_for(lambda: d.call("status")["pending_embeddings"] == 0, timeout=120, what="done")
    assert "embedding" not in d.call("status")  # nothing waits: no progress to show


def test_a_search_while_back_filling_says_what_share_was_searched_by_meaning(openai_config, ws):
    """Results from files whose chunks have no vector yet were found by keyword alone:
    the answer says what share of the results' files had vectors (the queue takes
    MEMORY.md first, so one embedding step gives it its vector and the old note none)."""
    ws.write("MEMORY.md", "# Memory\n\n## Storage\nWe keep the ledger in Postgres.\n")
    old = "".join(f"## Part {n}\n\nThe ledger export number {n} ran.\n\n" for n in range(4))
    ws.write("memory/2020-01-05.md", f"# 2020-01-05\n\n{old}")
    with Memory(openai_config()) as m:
        m.index()
        assert m.embed_step(1) == 1
        answer = m.search("ledger", min_score=0)
        assert answer.mode == "hybrid"
        assert {r.path for r in answer.results} == {"MEMORY.md", "memory/2020-01-05.md"}
        assert answer.index.pending_embeddings > 0
        assert answer.index.meaning_share == 0.5
        assert answer.as_dict()["index"]["meaning_share"] == 0.5
        while m.embed_step(32):
            pass
        assert "meaning_share" not in m.search("ledger", min_score=0).as_dict()["index"]


def test_notes_written_together_queue_by_their_dates_not_their_equal_mtimes(openai_config, ws):
    """After a git checkout every note has the same mtime: the dated notes come first,
    newest first, not the undated ones that the checkout made look newest."""
    checkout = 1_760_000_000
    for rel in ["a/topic.md", "memory/2026-02-01.md", "memory/2025-01-01.md", "z/other.md"]:
        path = ws.write(rel, f"# {rel}\n\nwords of {rel}\n")
        os.utime(path, (checkout, checkout))
    config = openai_config(extra_paths=[str(ws.root / "a"), str(ws.root / "z")])
    with Memory(config) as memory:
        memory.index()
        queue = memory.db.read(
            lambda store: store.pending_chunks(memory.db.vector_key, 10, None, None)
        )
    paths = [row[4] for row in queue]
    assert paths[:2] == ["memory/2026-02-01.md", "memory/2025-01-01.md"], paths
