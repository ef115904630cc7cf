"""The daemon's life under faults: stopping while an endpoint hangs, many reloads, and
worker processes that must not outlive a killed parent."""

import contextlib
import os
import signal
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


def resources(pid: int) -> tuple[int, int, int]:
    """(open fds, inotify instances, threads) of a process (Linux /proc)."""
    fds = os.listdir(f"/proc/{pid}/fd")
    inotify = 0
    for fd in fds:
        with contextlib.suppress(OSError):
            inotify += "inotify" in os.readlink(f"/proc/{pid}/fd/{fd}")
    return len(fds), inotify, len(os.listdir(f"/proc/{pid}/task"))


def reload(d, n: int) -> None:
    """A changed config (atomically replaced), then SIGHUP."""
    text = d.config_path.read_text().split("search:")[0]
    tmp = d.config_path.with_suffix(".tmp")
    tmp.write_text(text + f"search: {{max_results: {n % 7 + 1}}}\n")
    os.replace(tmp, d.config_path)
    d.proc.send_signal(signal.SIGHUP)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
def test_reloads_release_what_the_old_config_held(serve, notes, ws):
    """Each SIGHUP used to leave 2 watchers (inotify instances and threads) and the old
    index connections behind; after ~60 reloads edits were no longer seen."""
    d = serve()
    d.wait_for(lambda: d.search("postgres"), what="start-up index")
    inotify_at_start = resources(d.proc.pid)[1]
    for n in range(3):  # warm up: pools and connections made once
        reload(d, n)
        d.wait_for(lambda n=n: d.log().count('"config_reloaded"') == n + 1, what="a reload")
    d.wait_for(lambda: d.search("postgres"), what="index after the reloads")
    fds, inotify, threads = resources(d.proc.pid)
    for n in range(20):  # signals that arrive together may count as one, as for any daemon
        reload(d, n + 3)
        time.sleep(0.05)  # some arrive while the previous reload is still under way
    d.wait_for(lambda: d.log().count('"config_reloaded"') > 3, what="the reloads")
    d.wait_for(lambda: d.call("status")["watcher"] == "running", what="watching again")
    d.wait_for(lambda: resources(d.proc.pid)[0] <= fds, what=f"fds back to {fds}")
    d.wait_for(lambda: resources(d.proc.pid)[1] == inotify == inotify_at_start, what="inotify")
    ws.write("memory/2026-02-01.md", "# 2026-02-01\nthe okapi arrived\n")
    d.wait_for(lambda: d.search("okapi"), what="an edit indexed after the reloads")
    # A stopped watch's worker thread may idle a while before it ends (anyio); 40 stay for
    # good when watches are leaked.
    d.wait_for(lambda: resources(d.proc.pid)[2] <= threads + 2, timeout=20, what="threads")
