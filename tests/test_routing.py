"""The command line answers from the daemon that serves its config, and only from that one."""

import json
import os
import subprocess
import sys

from tests.conftest import Files


def memd(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "memd", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_a_daemon_of_another_config_is_not_asked(serve, ws, tmp_path):
    """`memd --config other.yaml` must not answer from the daemon already on the socket."""
    ws.write("MEMORY.md", "# Memory\n- The daemon's workspace talks about walruses.\n")
    d = serve()
    d.wait_for(lambda: d.search("walruses"), what="index")
    other = Files(tmp_path / "other")
    other.write("MEMORY.md", "# Memory\n- The other workspace talks about zebras.\n")
    env = {**os.environ, "HOME": str(tmp_path)}

    # Another state folder: that daemon is someone else's; answer here and say so.
    config = tmp_path / "other.yaml"
    config.write_text(
        f"workspace: {other.root}\nstate_dir: {tmp_path / 'other-state'}\n"
        f"socket: {d.socket}\nembeddings: {{provider: none}}\n"
    )
    out = memd("--config", str(config), "search", "zebras", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert [r["path"] for r in json.loads(out.stdout)["results"]] == ["MEMORY.md"]
    assert f"the memd daemon on {d.socket} (pid {d.proc.pid}" in out.stderr
    assert "answering without it" in out.stderr
    out = memd("--config", str(config), "status", env=env)
    assert str(other.root) in out.stdout and "none running" in out.stdout

    # A workspace that does not exist is an error here, not the daemon's answer.
    missing = tmp_path / "missing.yaml"
    missing.write_text(config.read_text().replace(f"workspace: {other.root}", "workspace: nope"))
    out = memd("--config", str(missing), "search", "walruses", env=env)
    assert out.returncode == 1 and "does not exist" in out.stderr and "walruses" not in out.stdout

    # The same state folder but other workspaces: its indexes are not ours to open either.
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        f"workspace: {other.root}\nstate_dir: {tmp_path / 'state'}\n"
        f"socket: {d.socket}\nembeddings: {{provider: none}}\n"
    )
    out = memd("--config", str(shared), "search", "zebras", env=env)
    assert out.returncode == 1
    assert f"serves workspaces default={ws.root}, not default={other.root}" in out.stderr
    assert "give this config its own state_dir" in out.stderr

    # The same state folder and workspace but other embeddings: another config, said so
    # (by a command that loads the config, and by one that remembered it).
    vectors = tmp_path / "vectors.yaml"
    vectors.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\nsocket: {d.socket}\n"
        "embeddings: {provider: openai, model: concepts-1, base_url: 'http://127.0.0.1:9/v1'}\n"
    )
    for command in ("search", "status", "search"):
        out = memd(
            "--config",
            str(vectors),
            command,
            *(["walruses"] if command == "search" else []),
            env=env,
        )
        assert out.returncode == 1 and "serving this config" not in out.stdout, out.stdout
        assert (
            "serves embeddings 'none (keyword search only)', where this config's are "
            "'openai concepts-1 at http://127.0.0.1:9/v1'"
        ) in out.stderr, out.stderr
        assert "give this config its own state_dir" in out.stderr
    out = memd("--config", str(vectors), "doctor", env=env)
    assert "serves embeddings 'none (keyword search only)'" in out.stdout

    # Its own config, even spelled differently: the daemon answers.
    out = memd("--config", str(d.config_path), "status", env=env)
    assert out.returncode == 0 and f"pid {d.proc.pid}, serving this config" in out.stdout
    assert f"socket              {d.socket}" in out.stdout
    assert f"config              {d.config_path}" in out.stdout


def test_a_missing_workspace_folder_is_said_first(serve, ws, tmp_path):
    """No "files 0" and no description of a daemon: the folder is missing, exit 1."""
    env = {**os.environ, "HOME": str(tmp_path)}
    missing = tmp_path / "not-there"
    alone = tmp_path / "alone.yaml"
    alone.write_text(
        f"workspace: {missing}\nstate_dir: {tmp_path / 'alone-state'}\n"
        "embeddings: {provider: none}\n"
    )
    said = f"memd: error: workspace folder {missing} does not exist"
    for command in (["status"], ["search", "walruses"], ["index"]):
        out = memd("--config", str(alone), *command, env=env)
        assert out.returncode == 1 and out.stderr.startswith(said), (command, out.stderr)
        assert "files" not in out.stdout

    # A daemon of another config on the same socket and state folder.
    ws.write("MEMORY.md", "# Memory\n- The daemon's workspace talks about walruses.\n")
    d = serve()
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        f"workspace: {missing}\nstate_dir: {tmp_path / 'state'}\n"
        f"socket: {d.socket}\nembeddings: {{provider: none}}\n"
    )
    for command in (["status"], ["search", "walruses"]):
        out = memd("--config", str(shared), *command, env=env)
        assert out.returncode == 1 and out.stderr.startswith(said), (command, out.stderr)
        assert "serves workspaces" not in out.stderr and "walruses" not in out.stdout
