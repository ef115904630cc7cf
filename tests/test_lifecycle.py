"""The daemon's life under faults: stopping while an endpoint hangs, many reloads, and
worker processes that must not outlive a killed parent."""

import time

import pytest


@pytest.fixture
def notes(ws):
    ws.write(
        "memory/2026-01-20.md", "# 2026-01-20\n\n## Storage\nWe picked Postgres for storage.\n"
    )
    ws.write("MEMORY.md", "# Memory\n\n## Interface\nThe public API is REST.\n")


def test_sigterm_while_the_embedding_endpoint_hangs_exits_within_5_s(
    serve, embed_server, notes, ws
):
    d = serve(
        "embeddings: {provider: openai, model: concepts-1, base_url: "
        f"'{embed_server.url}', retries: 3, timeout_s: 60, query_timeout_s: 0.5, "
        "debounce_ms: 0}\n"
    )
    d.wait_for(lambda: d.call("status")["embedded_chunks"] == 2, what="back-fill")
    embed_server.delay = 120  # from now on it answers long after anyone waits
    calls = embed_server.requests
    ws.write("memory/2026-01-21.md", "# 2026-01-21\nWe shipped the release.\n")
    d.wait_for(lambda: embed_server.requests > calls, what="the back-fill to call the endpoint")
    answer = d.call("memory_search", query="postgres")  # its query embedding hangs too
    assert answer["mode"] == "keyword" and "took over 0.5 s" in answer["warning"]
    started = time.monotonic()
    assert d.stop(timeout=10) == 0
    assert time.monotonic() - started < 5
    assert '"daemon_stopped"' in d.log()
