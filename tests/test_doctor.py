"""`memd doctor` finds what users get wrong and says what to do about it."""

import json
import os
import socket
import subprocess
import sys

from memd.cli import doctor


def checks(config_path, env=None, workspace=None) -> dict:
    env = {**os.environ, **(env or {})}
    return {c.name: c for c in doctor.run_checks(str(config_path), workspace, env)}


def write_config(path, text):
    path.write_text(text)
    return path


def test_a_healthy_setup_with_its_daemon(serve, ws):
    ws.write("MEMORY.md", "# Memory\n- fine\n")
    d = serve()
    d.wait_for(lambda: d.call("status")["watcher"] == "running", what="watcher")
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "doctor"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(ws.root.parent)},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = {
        line.split()[1]: line for line in out.stdout.splitlines() if line[:4] in ("ok  ", "warn")
    }
    assert lines["daemon"].startswith("ok") and f"pid {d.proc.pid}" in lines["daemon"]
    assert "serving this config" in lines["daemon"]
    assert lines["watcher"].startswith("ok") and "running" in lines["watcher"]
    assert lines["config"].startswith("ok") and str(d.config_path) in lines["config"]
    assert "no problems found" in out.stdout


def test_each_problem_is_named_with_what_to_do(tmp_path):
    not_a_folder = tmp_path / "state-file"
    not_a_folder.write_text("")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    config = write_config(
        tmp_path / "c.yaml",
        f"workspace: {tmp_path / 'gone'}\nstate_dir: {not_a_folder}\n"
        f"socket: {tmp_path / 'run' / 'memd.sock'}\n"
        f"embeddings: {{provider: openai, model: m, base_url: 'http://127.0.0.1:{port}/v1', "
        "retries: 0, timeout_s: 2}\n",
    )
    found = checks(config)
    assert found["workspace default"].state == "fail"
    assert f"mkdir -p {tmp_path / 'gone' / 'memory'}" in found["workspace default"].fix
    assert (
        found["state folder"].state == "fail" and "is not a folder" in found["state folder"].detail
    )
    assert found["daemon"].state == "warn" and "memd serve" in found["daemon"].fix
    assert found["embeddings"].state == "fail" and f"127.0.0.1:{port}" in found["embeddings"].fix
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "doctor", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 1
    assert json.loads(out.stdout)["ok"] is False


def test_a_bad_config_stops_the_checks(tmp_path):
    config = write_config(tmp_path / "c.yaml", "chunking: {tokenz: 5}\n")
    found = checks(config)
    assert list(found) == ["config"]
    assert found["config"].state == "fail" and "chunking.tokenz" in found["config"].detail


def test_the_daemon_of_another_config_is_a_problem(serve, ws, tmp_path):
    d = serve()
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    config = write_config(
        tmp_path / "other.yaml",
        f"workspace: {other}\nstate_dir: {tmp_path / 'other-state'}\nsocket: {d.socket}\n"
        "embeddings: {provider: none}\n",
    )
    found = checks(config)
    assert found["daemon"].state == "fail"
    assert f"pid {d.proc.pid}" in found["daemon"].detail
    assert f"state folder {tmp_path / 'state'}" in found["daemon"].detail


def test_too_few_inotify_watches(tmp_path, ws, monkeypatch):
    for n in range(5):
        ws.write(f"memory/f{n}/note.md", "# n\n")
    limits = tmp_path / "inotify"
    limits.mkdir()
    (limits / "max_user_watches").write_text("4\n")
    monkeypatch.setattr(doctor, "_INOTIFY", limits)
    config = write_config(
        tmp_path / "c.yaml",
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 's'}\nembeddings: {{provider: none}}\n",
    )
    check = checks(config)["inotify"]
    assert check.state == "fail" and "7 folders to watch;" in check.detail
    assert "max_user_watches is 4" in check.detail and "sysctl" in check.fix


def test_hand_written_look_alikes_are_named_only_beside_memds_own_key(tmp_path):
    """A person's bold-name list is theirs and no problem to fix (it used to be listed,
    with a fix telling them to mark it); only a line with the key of one memd stored is."""
    (tmp_path / "ws" / "memory").mkdir(parents=True)
    (tmp_path / "ws" / "MEMORY.md").write_text(
        "# Team\n- **Tom**: platform lead\n- **editor**: vim <!-- memd:key -->\n"
    )
    (tmp_path / "ws" / "memory" / "2026-01-02.md").write_text("- **Ana**: billing\n")
    config = write_config(
        tmp_path / "c.yaml",
        f"workspace: {tmp_path / 'ws'}\nstate_dir: {tmp_path / 's'}\n"
        "embeddings: {provider: none}\n",
    )
    assert "keys default" not in checks(config)
    (tmp_path / "ws" / "memory" / "2026-01-02.md").write_text("- **Editor**: emacs\n")
    check = checks(config)["keys default"]
    assert check.state == "warn"
    assert check.detail.startswith(
        "1 hand-written line with the key of one memd stored (memory/2026-01-02.md:1)"
    )
    assert "<!-- memd:key -->" in check.fix


def test_one_note_is_one_file(tmp_path, ws):
    """It printed "(1 Markdown files)": the plural only when the count needs it."""
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n- one note\n")
    config = write_config(
        tmp_path / "c.yaml",
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 's'}\nembeddings: {{provider: none}}\n",
    )
    found = checks(config)
    assert "(1 Markdown file in MEMORY.md and memory/)" in found["workspace default"].detail
    if os.path.exists("/proc/sys/fs/inotify/max_user_watches"):
        assert "2 folders to watch;" in found["inotify"].detail


def test_a_password_written_in_an_endpoints_url_is_never_shown(serve, ws, tmp_path):
    """An attacker who reads doctor's output, status, health or the daemon's log learns no
    password a user wrote into `base_url` (basic auth in the URL)."""
    secret = "planted-pw-7f3a9c"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: every check and every batch fails, and says so
    url = f"http://memd:{secret}@127.0.0.1:{port}/v1"
    ws.write("MEMORY.md", "# Memory\n- the deploy target is staging\n")
    d = serve(
        f"embeddings: {{provider: openai, model: m, base_url: '{url}', retries: 0, "
        "timeout_s: 1, debounce_ms: 0}\n"
        f"rerank: {{provider: http, base_url: '{url}', model: r, timeout_s: 1}}\n"
    )
    d.wait_for(lambda: d.search("deploy target"), timeout=30, what="indexed")
    seen = [json.dumps(d.call("health")), json.dumps(d.call("status")),
            json.dumps(d.call("memory_search", query="deploy target"))]  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path)}
    for command in (["doctor"], ["doctor", "--json"], ["status", "--json"]):
        out = subprocess.run(
            [sys.executable, "-m", "memd", "--config", str(d.config_path), *command],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        seen += [out.stdout, out.stderr]
    assert any(f"127.0.0.1:{port}" in text for text in seen)  # the endpoint is named ...
    d.stop()
    seen.append(d.log())
    assert not [text for text in seen if secret in text]  # ... its password never
