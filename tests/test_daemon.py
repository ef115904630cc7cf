import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memd.client import Client
from memd.errors import NotFound, UnknownMethod
from memd.sources.entries import UNNAMED


@pytest.fixture
def notes(ws):
    ws.write("MEMORY.md", "# Memory\n\n## Decisions\n- We use Postgres 16.\n")
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\n## API\nWe chose REST over GraphQL.\n")


def paths(results):
    return {r["path"] for r in results}


def test_serves_search_get_status_health(serve, notes):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    (hit,) = d.search("graphql")
    assert hit["citation"] == "memory/2026-01-20.md#L1-L4"
    answer = d.call("memory_search", query="postgres")
    assert answer["index"]["stale"] is False and answer["index"]["generation"] >= 1
    assert d.call("memory_get", path="MEMORY.md", lines=1)["text"] == "# Memory\n"
    status = d.call("status")
    assert status["files"] == 2 and status["watcher"] == "running"
    assert d.call("health")["ok"] is True
    with pytest.raises(UnknownMethod):
        d.call("memory_delete_everything")


def test_socket_and_folder_modes(serve, notes):
    d = serve()
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(d.socket.parent).st_mode) == 0o700


def test_new_and_edited_files_become_searchable(serve, ws, notes):
    d = serve()
    ws.write("memory/2026-01-21.md", "# 2026-01-21\nKubernetes upgrade planned.\n")
    d.wait_for(lambda: d.search("kubernetes"), what="new file")
    ws.write("memory/2026-01-21.md", "# 2026-01-21\nKubernetes upgrade done; etcd restored.\n")
    d.wait_for(lambda: d.search("etcd"), what="edited file")


def test_editor_save_patterns(serve, ws, notes):
    """Write-temp-then-rename, truncate-then-write and delete-then-create all end indexed."""
    d = serve()
    target = ws.root / "memory" / "2026-01-20.md"
    tmp = ws.root / "memory" / ".2026-01-20.md.swp"
    tmp.write_text("# 2026-01-20\nalbatross\n")
    os.replace(tmp, target)
    d.wait_for(lambda: "memory/2026-01-20.md" in paths(d.search("albatross")), what="rename save")
    with open(target, "r+") as f:
        f.truncate(0)
        f.flush()
        time.sleep(0.05)
        f.write("# 2026-01-20\nbarracuda\n")
    d.wait_for(lambda: d.search("barracuda"), what="truncate-then-write")
    target.unlink()
    time.sleep(0.05)
    target.write_text("# 2026-01-20\ncormorant\n")
    d.wait_for(lambda: d.search("cormorant"), what="delete-then-create")
    assert d.search("albatross") == [] and d.search("barracuda") == []


def test_deleted_file_leaves_results(serve, ws, notes):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    (ws.root / "memory" / "2026-01-20.md").unlink()
    d.wait_for(lambda: not d.search("graphql"), what="removal")


def test_folder_renamed_and_editor_stray_files(serve, ws):
    ws.write("memory/projects/atlas.md", "# Atlas\nquokka dashboard\n")
    d = serve()
    d.wait_for(lambda: d.search("quokka"), what="start-up index")
    os.rename(ws.root / "memory" / "projects", ws.root / "memory" / "archive")
    d.wait_for(
        lambda: paths(d.search("quokka")) == {"memory/archive/atlas.md"}, what="folder rename"
    )


def test_only_one_daemon_per_state_folder(serve, notes, tmp_path):
    d = serve()
    second = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "serve"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1
    assert f"already running (pid {d.proc.pid})" in second.stderr
    assert second.stderr.count("already running") == 1  # said once, not as log and text
    assert d.call("health")["ok"]  # the first one is unharmed


def test_a_search_right_after_a_cold_start_waits_for_the_first_pass(serve, ws):
    """An agent started beside the daemon asks at once: it gets the notes, not []."""
    for i in range(800):
        ws.write(f"memory/n{i}.md", f"# N{i}\n\nfiller text {i} " * 20 + "\n")
    ws.write("memory/zz.md", "# Pick\n\nWe picked the okapi logo.\n")
    # Long enough for the first pass over 800 files on a busy machine (3 s by default).
    d = serve("search: {first_pass_wait: 60}\n")
    answer = d.call("memory_search", query="okapi logo")
    assert [r["path"] for r in answer["results"]] == ["memory/zz.md"]
    assert answer["index"]["stale"] is False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_stop_cleanly(serve, notes, sig):
    d = serve()
    started = time.monotonic()
    assert d.stop(sig) == 0
    assert time.monotonic() - started < 5
    assert not d.socket.exists()
    assert '"daemon_stopped"' in d.log()


def test_start_up_pass_reports_progress_and_stale(serve, ws):
    """While the first full pass runs, answers say the index is behind and by how much
    (once the search has waited ``first_pass_wait`` for it)."""
    for i in range(1500):
        ws.write(
            f"memory/n{i}.md", f"# N{i}\n\n" + ("lorem ipsum dolor sit amet " * 40 + "\n\n") * 4
        )
    d = serve("search: {first_pass_wait: 0.2}\n")
    started = time.monotonic()
    index = d.call("memory_search", query="lorem")["index"]
    status = d.call("status")
    assert index["stale"] is True and time.monotonic() - started >= 0.2
    assert status["indexing"] is not None
    if index.get("indexing"):  # once the pass has counted the files
        assert index["indexing"]["total"] == 1500 and index["indexing"]["done"] < 1500
    d.wait_for(
        lambda: not d.call("memory_search", query="x")["index"]["stale"],
        timeout=60,
        what="first pass",
    )
    status = d.call("status")
    assert status["files"] == 1500 and status["indexing"] is None and status["pending_files"] == 0


def test_stop_during_a_long_index_is_prompt(serve, ws, tmp_path):
    """SIGTERM in the middle of indexing ends after the transaction in flight: the pass is
    left unfinished (the next start takes it up), whatever the machine's load."""
    for i in range(1500):
        ws.write(
            f"memory/2025-{i % 12 + 1:02d}-{i % 28 + 1:02d}-n{i}.md",
            f"# N{i}\n\n" + ("lorem ipsum dolor sit amet " * 40 + "\n\n") * 6,
        )
    d = serve()
    d.wait_for(lambda: (d.call("status")["indexing"] or {}).get("done"), what="pass under way")
    assert d.call("status")["files"] < 1500  # still indexing when the signal comes
    started = time.monotonic()
    assert d.stop(timeout=30) == 0  # generous: a stop that waited for the pass fails below
    assert time.monotonic() - started < 30
    db = sqlite3.connect(f"file:{tmp_path / 'state' / 'index-default.sqlite'}?mode=ro", uri=True)
    with contextlib.closing(db):
        [(indexed,)] = db.execute("SELECT count(*) FROM files").fetchall()
    assert 0 < indexed < 1500, f"{indexed} files indexed: the stop waited for the whole pass"
    assert '"daemon_stopped"' in d.log()


def test_kill_9_mid_index_then_restart_matches_the_files(serve, ws):
    for i in range(400):
        ws.write(f"memory/n{i}.md", f"# N{i}\n\nterm{i} " + "filler words " * 50 + "\n")
    d = serve()
    d.wait_for(lambda: children(d.proc.pid), what="parse workers")
    workers = children(d.proc.pid)
    d.kill()  # SIGKILL: no clean-up at all; the socket file stays behind
    assert d.socket.exists()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in workers):
        time.sleep(0.1)
    assert not [p for p in workers if os.path.exists(f"/proc/{p}")], "workers outlived the daemon"
    (ws.root / "memory" / "n0.md").unlink()
    ws.write("memory/late.md", "# Late\nwombat\n")
    d.start()  # replaces the stale socket
    d.wait_for(
        lambda: not d.call("memory_search", query="x")["index"]["stale"],
        timeout=60,
        what="re-index after the kill",
    )
    assert paths(d.search("wombat")) == {"memory/late.md"}
    assert d.search("term0") == []
    assert d.call("status")["files"] == 400
    assert paths(d.search("term399")) == {"memory/n399.md"}


def children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_workspace_deleted_and_recreated(serve, ws, notes):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    import shutil

    shutil.rmtree(ws.root)
    d.wait_for(lambda: d.call("status")["watcher"] != "running", what="watcher to notice")
    assert d.call("health")["ok"]
    ws.write("memory/2026-03-01.md", "# 2026-03-01\nnarwhal sighting\n")
    d.wait_for(lambda: d.search("narwhal"), timeout=15, what="re-created workspace indexed")
    d.wait_for(lambda: not d.search("graphql"), what="old files gone")
    ws.write("memory/2026-03-02.md", "# 2026-03-02\nokapi\n")
    d.wait_for(lambda: d.search("okapi"), what="watching again")


def test_sighup_reloads_config(serve, notes):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    text = d.config_path.read_text()
    d.config_path.write_text(text + "search: {max_results: 1, min_score: 0}\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: '"config_reloaded"' in d.log(), what="reload")
    answer = d.call("memory_search", query="postgres graphql")  # both notes match: cap 1
    assert len(answer["results"]) == 1
    d.config_path.write_text(text + "search: {max_results: many}\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: '"config_reload_failed"' in d.log(), what="bad reload logged")
    assert "search.max_results" in d.log()
    assert d.call("health")["ok"]
    assert len(d.call("memory_search", query="postgres")["results"]) == 1


def test_a_reload_that_keeps_the_embeddings_section_keeps_the_model(serve, notes, embed_server):
    """A reload that changes only a search setting keeps the model (and with it the
    back-fill and the interim tier); one that changes the embeddings section replaces it."""
    embeddings = (
        f"embeddings: {{provider: openai, model: concepts-1, base_url: {embed_server.url}, "
        "retries: 0, timeout_s: 5, debounce_ms: 0"
    )
    d = serve(f"{embeddings}}}\n")
    d.wait_for(lambda: d.call("status")["embedded_chunks"] == 2, 30, "the vectors")
    text = d.config_path.read_text()

    def reload(extra: str, n: int) -> str:
        d.config_path.write_text(text + extra)
        d.proc.send_signal(signal.SIGHUP)
        d.wait_for(lambda: d.log().count('"config_reloaded"') >= n, 30, "a reload")
        return [line for line in d.log().splitlines() if '"config_reloaded"' in line][-1]

    assert '"model": "kept"' in reload("search: {max_results: 2}\n", 1)
    answer = d.call("memory_search", query="which database do we use", min_score=0)
    assert answer["mode"] == "hybrid"
    replaced = text.replace(embeddings, embeddings + ", batch_size: 8")
    d.config_path.write_text(replaced)
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: '"model": "replaced"' in d.log(), 30, "a reload with a new model")
    answer = d.call("memory_search", query="which database do we use", min_score=0)
    assert answer["mode"] == "hybrid"


def test_sd_notify_ready_watchdog_stopping(serve, notes, tmp_path):
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(10)
    d = serve(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
    messages = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any("WATCHDOG=1" in m for m in messages):
        messages.append(sock.recv(4096).decode())
    assert any(m.startswith("READY=1") for m in messages)
    assert any("WATCHDOG=1" in m for m in messages)
    assert d.stop() == 0
    sock.settimeout(2)
    rest = []
    try:
        while True:
            rest.append(sock.recv(4096).decode())
    except TimeoutError:
        pass
    assert "STOPPING=1" in rest
    sock.close()


_PEER_PROBE = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
try:
    s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "health"}\n')
    print("answer" if s.recv(4096) else "closed")
except OSError:
    print("closed")
"""


def test_client_of_another_user_is_refused(serve, notes):
    """Even if the socket's modes were loosened, another uid gets no answer."""
    python = "/usr/bin/python3"  # outside /root, so the other user may run it
    if os.geteuid() != 0 or not os.access(python, os.X_OK):
        pytest.skip("needs root and a system python3 to connect as another user")
    folder = tempfile.mkdtemp(prefix="memd-peer-", dir="/tmp")
    os.chmod(folder, 0o755)
    d = serve(f"socket: {folder}/run/memd.sock\n")
    os.chmod(d.socket.parent, 0o755)
    os.chmod(d.socket, 0o666)
    script = _PEER_PROBE
    out = subprocess.run(
        [python, "-c", script, str(d.socket)],
        capture_output=True,
        text=True,
        timeout=30,
        user=65534,
        group=65534,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "closed"  # no answer, connection ended
    # The log line is copied from the daemon's pipe by this process: it may come a moment later.
    d.wait_for(lambda: '"connection_refused"' in d.log(), what="the refusal logged")
    assert d.call("health")["ok"]


def test_cli_goes_through_the_daemon(serve, notes, ws, tmp_path):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    env = {**d.env, "MEMD_CONFIG": str(d.config_path)}

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "memd", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    out = cli("status", "--json")
    assert out.returncode == 0 and '"watcher": "running"' in out.stdout
    out = cli("search", "graphql")
    assert "memory/2026-01-20.md#L1-L4" in out.stdout
    out = cli("index", "--json")
    assert out.returncode == 0 and '"unchanged": 2' in out.stdout
    out = cli("get", "../x.md")
    assert out.returncode == 1 and "may not contain '..'" in out.stderr
    out = cli("search", "x", "--max-results", "0")
    assert out.returncode == 2 and "max_results" in out.stderr
    assert '"rpc"' in d.log()  # the daemon answered these


def test_client_reuses_one_connection_for_many_requests(serve, notes):
    d = serve()
    with Client(d.socket) as c:
        for _ in range(20):
            assert c.call("health")["ok"]


def test_logs_are_json_lines_with_request_details(serve, notes):
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    with pytest.raises(NotFound):
        d.call("memory_get", path="memory/missing.md")
    d.stop()
    events = [json.loads(line) for line in d.log().splitlines() if line.strip()]
    names = [e["event"] for e in events]
    assert "daemon_started" in names and "daemon_stopped" in names
    passes = [e for e in events if e["event"] == "index_pass"]
    assert passes and {"added", "changed", "removed", "ms"} <= set(passes[0])
    rpcs = [e for e in events if e["event"] == "rpc"]
    assert {"method", "ms", "outcome"} <= set(rpcs[0])
    assert any(e["method"] == "memory_get" and e["outcome"] == "NotFound" for e in rpcs)
    assert all(e["level"] for e in events)


def test_first_start_without_config_creates_the_default_workspace():
    # A short home: the default socket lies four folders below it, and a worker's tmp_path
    # under pytest-xdist is long enough to pass the 104 bytes a socket path may have.
    home = Path(tempfile.mkdtemp(prefix="memd-home-", dir="/tmp"))
    env = {**os.environ, "HOME": str(home)}
    for var in ("MEMD_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        env.pop(var, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memd", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    sock = home / ".local" / "state" / "memd" / "memd.sock"
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        with Client(sock) as c:
            assert c.call("status")["path"] == str(home / "clawd")
        assert (home / "clawd" / "memory").is_dir()
    finally:
        proc.terminate()
        code = proc.wait(10)
        shutil.rmtree(home, ignore_errors=True)
        assert code == 0


def test_periodic_reconcile_catches_what_the_watcher_missed(serve, ws, tmp_path):
    """A write through a hard link outside the workspace raises no event there; the
    periodic sweep still finds it."""
    note = ws.write("memory/linked.md", "# Linked\noriginal text\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.link(note, outside / "linked.md")
    d = serve("watch: {reconcile_minutes: 0.03}\n")  # a sweep every 1.8 s
    d.wait_for(lambda: d.search("original"), what="start-up index")
    with open(outside / "linked.md", "r+") as f:  # same inode, unwatched folder
        f.write("# Linked\nplatypus text\n")
    d.wait_for(lambda: d.search("platypus"), timeout=15, what="periodic reconcile")


def test_state_folder_that_cannot_be_written_then_recovers(serve, ws, notes):
    """While index writes fail (a full or read-only disk), searches go on and the failure
    is logged; once writes work again the pending edits are indexed."""
    import resource

    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    limit = resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (1, limit[1]))  # no file may grow
    try:
        ws.write("memory/2026-01-22.md", "# 2026-01-22\n" + "capybara notes\n" * 2000)
        d.wait_for(lambda: '"index_failed"' in d.log(), what="failure logged")
        assert d.search("graphql")  # reads keep working
        assert d.call("memory_search", query="capybara")["index"]["stale"] is True
    finally:
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, limit)
    d.wait_for(lambda: d.search("capybara"), timeout=20, what="recovery")


def test_flush_over_the_socket_is_searchable_on_the_next_request(serve, notes):
    d = serve()
    with Client(d.socket) as c:
        written = c.call("memory_flush", entries=[{"text": "The capybara migration is done."}])
        (w,) = written["written"]
        hits = c.call("memory_search", query="capybara", min_score=0)["results"]
        assert hits and hits[0]["path"] == w["path"]
        stored = c.call("memory_store", key="editor", content="helix")
        assert c.call("memory_list")["entries"][0]["key"] == "editor"
        assert (
            c.call("memory_search", query="helix", min_score=0)["results"][0]["path"]
            == stored["path"]
        )
        assert c.call("memory_forget", key="editor")["removed"] is True


def test_daemon_killed_mid_flush_leaves_only_whole_entries(serve, ws, notes):
    d = serve()
    stop = threading.Event()

    def flusher(n):
        try:
            with Client(d.socket) as c:
                i = 0
                while not stop.is_set():
                    c.call(
                        "memory_flush",
                        entries=[{"text": f"body {n}-{i} " + "y" * 2000, "title": f"t{n}-{i}"}],
                        date="2026-06-01",
                    )
                    i += 1
        except Exception:
            pass  # the daemon was killed under us

    threads = [threading.Thread(target=flusher, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    note = ws.root / "memory" / "2026-06-01.md"
    # Killed once several entries landed, with more in flight (a wait on what landed, not
    # on the clock: a loaded machine may take seconds for the first).
    d.wait_for(lambda: note.exists() and note.read_text().count("\n## ") >= 4, timeout=60,
               what="entries flushed")  # fmt: skip
    d.kill()
    stop.set()
    for t in threads:
        t.join(10)
    text = (ws.root / "memory" / "2026-06-01.md").read_text()
    body = text.removeprefix("# 2026-06-01\n")
    blocks = re.findall(r"\n## \d\d:\d\d — t(\d+-\d+)\n\nbody (\d+-\d+) y{2000}\n", body)
    assert blocks and all(a == b for a, b in blocks)
    assert (
        "".join(
            m.group(0)
            for m in re.finditer(r"\n## \d\d:\d\d — t\d+-\d+\n\nbody \d+-\d+ y{2000}\n", body)
        )
        == body
    )  # nothing torn
    d.start()  # and a restart indexes every entry that landed
    d.wait_for(
        lambda: not d.call("memory_search", query="x")["index"]["stale"], timeout=60,
        what="catch-up",
    )  # fmt: skip
    assert d.search("body", max_results=1)


def test_no_process_outlives_the_first_pass_that_needed_workers(serve, ws):
    """The parse workers end with the pass, and so does multiprocessing's resource tracker
    (a 13 MB process that used to live as long as the daemon)."""
    for i in range(100):
        ws.write(f"memory/n{i}.md", f"# N{i}\n\nterm{i} " + "filler words " * 50 + "\n")
    d = serve()
    d.wait_for(lambda: children(d.proc.pid), what="parse workers")
    d.wait_for(lambda: d.call("status")["files"] == 100, what="the first pass")
    d.wait_for(lambda: not children(d.proc.pid), what="no child process left")
    assert paths(d.search("term99")) == {"memory/n99.md"}


def test_the_config_file_is_followed_and_drift_is_said(serve, notes):
    """An edit of the config file is loaded without a signal; a file that cannot be loaded,
    or asks for what only a restart changes, is said by status and health (and doctor)."""
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    text = d.config_path.read_text()
    d.config_path.write_text(text + "search: {max_results: 1, min_score: 0}\n")
    d.wait_for(
        lambda: len(d.call("memory_search", query="postgres graphql")["results"]) == 1,
        what="the edited config, loaded without a signal",
    )
    assert "config_drift" not in d.call("status")
    d.config_path.write_text(text + "search: {max_results: many}\n")
    drift = d.wait_for(lambda: d.call("status").get("config_drift"), what="the drift said")
    assert "could not be loaded" in drift and "search.max_results" in drift
    assert d.call("health")["config_drift"] == drift
    assert len(d.call("memory_search", query="postgres graphql")["results"]) == 1  # kept
    from memd.cli import doctor

    checks = {c.name: c for c in doctor.run_checks(str(d.config_path), None, d.env)}
    assert checks["config"].state == "fail" and "search.max_results" in checks["config"].detail
    elsewhere = d.config_path.parent / "elsewhere"
    d.config_path.write_text(re.sub(r"(?m)^state_dir: .*$", f"state_dir: {elsewhere}", text))
    d.wait_for(
        lambda: "take effect when memd restarts" in d.call("status").get("config_drift", ""),
        what="a restart asked for",
    )
    d.config_path.write_text(text)
    d.wait_for(lambda: "config_drift" not in d.call("status"), what="the file and memd agree")


def test_a_mistyped_secret_in_the_followed_config_is_never_shown(serve, notes):
    """A DSN or API key written as a list used to come back whole in the error, which the
    daemon now shows in status, health, its log and doctor."""
    d = serve()
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    secret = "S3cretLeak1"
    text = d.config_path.read_text()
    keyed = text.replace("{provider: none}", f"{{provider: none, api_key: ['{secret}']}}")
    assert keyed != text
    d.config_path.write_text(keyed + f"team: {{dsn: ['postgresql://a:{secret}@127.0.0.1:1/x']}}\n")
    drift = d.wait_for(lambda: d.call("status").get("config_drift"), what="the drift said")
    assert "could not be loaded" in drift
    from memd.cli import doctor

    said = [json.dumps(d.call("status")), json.dumps(d.call("health")), d.log()]
    said += [repr(c) for c in doctor.run_checks(str(d.config_path), None, d.env)]
    assert not [s for s in said if secret in s]


def test_a_file_name_that_is_not_utf8_is_skipped_and_named_and_the_rest_indexed(serve, ws):
    """A name in bytes that are not UTF-8 (os.fsdecode gives lone surrogates): the index
    and the watcher used to crash on it, over and over; now it is named and skipped."""
    memory = os.fsencode(ws.root / "memory")
    ws.write("MEMORY.md", "# Memory\n\nThe deploy runs at noon.\n")
    ws.write("memory/2026-01-20.md", "# Jan 20\n\nThe gateway returned 502s.\n")
    with open(os.path.join(memory, b"odd-\xff.md"), "wb") as f:
        f.write(b"# Odd\n\nkestrel harbor\n")
    os.mkdir(os.path.join(memory, b"folder-\xfa"))
    with open(os.path.join(memory, b"folder-\xfa", b"inside.md"), "wb") as f:
        f.write(b"# Inside\n\nkestrel harbor\n")
    d = serve()
    d.wait_for(lambda: d.search("gateway"), 30, "the other files indexed")
    status = d.wait_for(lambda: (s := d.call("status"))["watcher"] == "running" and s, 30)
    assert status["files"] == 2
    assert status["skipped_files"] == [
        f"memory/folder-\\xfa/inside.md ({UNNAMED})",
        f"memory/odd-\\xff.md ({UNNAMED})",
    ]
    # Edits after the start: a good file is seen by the watcher, a bad one named.
    ws.write("memory/2026-01-21.md", "# Jan 21\n\nThe queue drained overnight.\n")
    d.wait_for(lambda: d.search("drained"), 30, "a later file indexed")
    with open(os.path.join(memory, b"late-\xfe.md"), "wb") as f:
        f.write(b"# Late\n\nkestrel harbor\n")
    d.wait_for(lambda: len(d.call("status").get("skipped_files") or []) == 3, 30, "it named")
    ws.write("memory/2026-01-22.md", "# Jan 22\n\nThe backups moved to Tuesday.\n")
    d.wait_for(lambda: d.search("backups"), 30, "a file after it indexed")
    assert d.call("status")["watcher"] == "running"
    assert d.search("kestrel") == []
    doctor = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "doctor", "--json"],
        capture_output=True, text=True, env=d.env,
    )  # fmt: skip
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "files default"]
    assert check["state"] == "warn" and "memory/late-\\xfe.md" in check["detail"]
    log = d.log()
    assert "task_crashed" not in log and "watcher_failed" not in log, log[-3000:]
