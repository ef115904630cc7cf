"""The thin client: a read answered by a running daemon loads no config, parser tree or index."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# What a command answered by a daemon must not load: the config's YAML and dataclasses,
# the full command line, the router and everything behind it.
HEAVY = [
    "yaml", "memd.config", "memd.configfile", "memd.serve.router", "memd.memory",
    "memd.serve.methods", "numpy", "apsw", "structlog", "markdown_it", "asyncio", "difflib",
    "hashlib",
]  # fmt: skip


def run(tmp_path, daemon, *argv: str, stdin: str = "") -> dict:
    """Run ``memd ARGV`` in a fresh interpreter as the shell would (the daemon's HOME);
    its exit code, output and which of ``HEAVY`` it loaded."""
    code = f"""
import contextlib, io, json, sys
from memd.cli.thin import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main({["--config", str(daemon.config_path), *argv]!r})
print(json.dumps({{"code": code, "out": out.getvalue(), "err": err.getvalue(),
                   "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, input=stdin
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def config_for(path, workspace, socket):
    """A keyword-only config at ``path`` (its state folder beside it), as ``run`` takes a
    daemon: something with a ``config_path``."""
    state = path.with_name(f"{path.stem}-state")
    path.write_text(f"workspace: {workspace}\nstate_dir: {state}\nsocket: {socket}\n"
                    "embeddings: {provider: none}\n")  # fmt: skip
    return type("Config", (), {"config_path": path})()


def test_reads_answered_by_a_daemon_load_only_the_socket_client(tmp_path, ws, serve):
    """search, get, status, context and recall through a daemon import nothing heavy, and
    answer as the full command line does."""
    ws.write("MEMORY.md", "# Memory\n- The database migration runs on Fridays.\n")
    daemon = serve()
    daemon.wait_for(lambda: daemon.call("status")["files"] == 1, 20, "the first pass")
    found = run(tmp_path, daemon, "search", "database migration", "--json")
    assert found["code"] == 0, found
    assert found["loaded"] == []
    assert json.loads(found["out"])["results"][0]["path"] == "MEMORY.md"
    got = run(tmp_path, daemon, "get", "MEMORY.md")
    assert (got["code"], got["loaded"]) == (0, [])
    assert "Fridays" in got["out"]
    status = run(tmp_path, daemon, "status")
    assert (status["code"], status["loaded"]) == (0, [])
    assert "serving this config" in status["out"]
    recall = run(tmp_path, daemon, "recall", "when", "does", "the", "database", "migration", "run")
    assert (recall["code"], recall["loaded"]) == (0, [])
    assert "Fridays" in recall["out"]
    context = run(tmp_path, daemon, "context", "--hook", stdin='{"source": "startup"}')
    assert (context["code"], context["loaded"]) == (0, [])
    assert "Fridays" in context["out"]
    socket = run(tmp_path, daemon, "status", "--socket", "--json")
    assert json.loads(socket["out"]) == {"socket": str(daemon.socket)}


def test_an_edited_config_is_loaded_again_and_a_wrong_workspace_is_named(tmp_path, ws, serve):
    """A config file changed since it was remembered is read again (its key missed), and
    what the thin client cannot answer (an unknown workspace) gets the full command's
    error."""
    ws.write("MEMORY.md", "# Memory\n- Tea at four.\n")
    daemon = serve()
    assert run(tmp_path, daemon, "search", "tea")["loaded"] == []
    text = daemon.config_path.read_text()
    daemon.config_path.write_text(text + "search: {max_results: 3}\n")
    edited = run(tmp_path, daemon, "search", "tea", "--json")
    assert edited["code"] == 0
    assert "memd.configfile" in edited["loaded"]  # loaded again, not trusted
    assert run(tmp_path, daemon, "search", "tea")["loaded"] == []  # and remembered
    unknown = run(tmp_path, daemon, "search", "tea", "--workspace", "nope")
    assert unknown["code"] != 0
    assert "nope" in unknown["err"]


def test_status_reaches_the_daemon_while_the_config_file_is_broken(tmp_path, ws, serve):
    """With the config file broken, `memd status` still shows the daemon and how what it
    serves differs from the file; other commands name the broken key and exit 1."""
    ws.write("MEMORY.md", "# Memory\n- Tea at four.\n")
    daemon = serve()
    daemon.config_path.write_text(daemon.config_path.read_text() + "bogus_key: 1\n")
    daemon.wait_for(lambda: "config_drift" in daemon.call("status"), 30, "the daemon's drift")
    status = run(tmp_path, daemon, "status")
    assert status["code"] == 0, status
    assert "bogus_key" in status["err"]
    assert "config drift" in status["out"] and "could not be loaded" in status["out"]
    assert "pid" in status["out"]
    search = run(tmp_path, daemon, "search", "tea")
    assert search["code"] == 1
    assert "bogus_key" in search["err"]


def test_without_a_daemon_the_full_command_answers(tmp_path, ws, serve):
    """No daemon on the remembered socket: the command answers on the index itself."""
    ws.write("MEMORY.md", "# Memory\n- Tea at four.\n")
    daemon = serve()
    assert run(tmp_path, daemon, "status")["code"] == 0
    assert daemon.stop() == 0
    found = run(tmp_path, daemon, "search", "tea", "--json")
    assert found["code"] == 0, found
    assert [r["path"] for r in json.loads(found["out"])["results"]] == ["MEMORY.md"]
    assert "memd.memory" in found["loaded"]
    status = run(tmp_path, daemon, "status")
    assert "none running" in status["out"]


def test_a_daemon_serving_another_config_is_not_asked_for_this_one(tmp_path, ws, serve):
    """A config remembered with the socket another config's daemon now listens on: the
    thin client does not take that daemon's answer; the full command says why."""
    ws.write("MEMORY.md", "# Memory\n- Tea at four.\n")
    daemon = serve()
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    (other_ws / "MEMORY.md").write_text("# Memory\n- Coffee at nine.\n")
    stand_in = config_for(tmp_path / "other.yaml", other_ws, daemon.socket)
    first = run(tmp_path, stand_in, "search", "coffee", "--json")  # remembered now
    second = run(tmp_path, stand_in, "search", "coffee", "--json")
    for answer in (first, second):
        assert answer["code"] == 0, answer
        assert [r["path"] for r in json.loads(answer["out"])["results"]] == ["MEMORY.md"]
        assert "Coffee" in answer["out"]
        assert "answering without it" in answer["err"]


def test_without_a_daemon_a_read_takes_the_config_as_last_loaded(tmp_path):
    """No daemon: the first one-shot search loads the config file and keeps it; the next
    ones take it as kept (no YAML read) and answer the same. An edit of the file is read
    again, and a kept config that another user could have written is not trusted."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n- Tea at four.\n- Tea leaves from Assam.\n")
    stand_in = config_for(tmp_path / "c.yaml", ws, tmp_path / "memd.sock")
    config = stand_in.config_path

    def search() -> dict:
        found = run(tmp_path, stand_in, "search", "tea", "--json", "--all-chunks")
        assert found["code"] == 0, found
        return found

    first, second = search(), search()
    assert "memd.configfile" in first["loaded"]
    assert "yaml" not in second["loaded"] and "memd.configfile" not in second["loaded"]
    assert json.loads(second["out"])["results"] == json.loads(first["out"])["results"]
    config.write_text(config.read_text() + "search: {max_results: 1, min_results: 1}\n")
    edited = search()
    assert "memd.configfile" in edited["loaded"]
    assert len(json.loads(edited["out"])["results"]) == 1  # the edit applies
    assert "memd.configfile" not in search()["loaded"]
    (kept,) = (tmp_path / ".cache" / "memd").glob("*.pickle")
    kept.chmod(0o666)
    assert "memd.configfile" in search()["loaded"]  # not trusted: loaded from the file


def test_a_config_that_cannot_be_kept_is_loaded_each_time(tmp_path):
    """A config pickle cannot take is not kept (nor does keeping it fail the command):
    the socket's entry is, and the config is read from its file the next time."""
    import dataclasses

    from memd import socketcache
    from memd.configfile import load_config

    config = tmp_path / "c.yaml"
    config.write_text(f"workspace: {tmp_path}\nstate_dir: {tmp_path / 's'}\n")
    env = {"HOME": str(tmp_path)}
    loaded = load_config(config, env)
    odd = dataclasses.replace(loaded, source=_Unpicklable())
    socketcache.remember(odd, config, env)
    assert socketcache.lookup(str(config), env) is not None
    assert socketcache.config_of(str(config), env) is None
    socketcache.remember(loaded, config, env)
    assert socketcache.config_of(str(config), env) == loaded


class _Unpicklable:
    """What pickle refuses with its own error."""

    def __reduce__(self):
        import pickle

        raise pickle.PicklingError("not this one")
