"""An Obsidian vault set as the workspace is read as a vault: every note, as extra_paths
reads one; a workspace whose Markdown memd mostly does not read is a doctor warning that
names the setting."""

import json
import os
import subprocess
import sys

from memd.cli import doctor
from memd.config import WorkspaceConfig
from memd.configfile import parse_config
from memd.sources.layout import Workspace


def _notes(root, n=12):
    for i in range(n):
        (root / "Notes" / f"Topic {i}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / "Notes" / f"Topic {i}.md").write_text(f"# Topic {i}\n\nAbout lighthouse {i}.\n")


def _cli(tmp_path, workspace, extra=""):
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {workspace}\nstate_dir: {tmp_path / 'state'}\n"
        f"socket: {tmp_path / 'run' / 'memd.sock'}\nembeddings: {{provider: none}}\n{extra}"
    )
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "memd", *args], capture_output=True, text=True, env=env,
            timeout=120,
        )  # fmt: skip

    run.config = config
    return run


def test_a_vault_set_as_the_workspace_is_read_whole(tmp_path):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.md").write_text("obsidian's own zebra\n")
    _notes(vault)
    (vault / "Daily").mkdir()
    (vault / "Daily" / "2025-01-08.md").write_text("Called the plumber.\n")
    (vault / "Board.canvas").write_text(
        '{"nodes":[\n{"id":"a","type":"text","text":"harbour crane"}\n]}\n'
    )
    run = _cli(tmp_path, vault)
    out = run("index")
    assert out.returncode == 0, out.stderr
    assert "14 added" in out.stdout + out.stderr, out.stdout + out.stderr
    found = json.loads(run("search", "Topic 3", "--json").stdout)["results"]
    assert found[0]["citation"].startswith("Notes/Topic 3.md#L1") and found[0]["score"] == 1.0
    assert json.loads(run("search", "zebra", "--json", "--min-score", "0").stdout)["results"] == []
    dated = json.loads(run("search", "plumber", "--since", "2025-01-08", "--json").stdout)
    assert [r["path"] for r in dated["results"]] == ["Daily/2025-01-08.md"]
    crane = json.loads(run("search", "harbour crane", "--json").stdout)["results"]
    assert crane[0]["path"] == "Board.canvas"
    checks = {c.name: c for c in doctor.run_checks(str(run.config), None, os.environ)}
    ws = checks["workspace default"]
    assert ws.state == "ok" and "a vault: 14 notes read" in ws.detail, ws
    if "inotify" in checks:  # Linux: the vault's every folder takes a watch, hidden ones too
        assert checks["inotify"].detail.startswith("4 folders to watch"), checks["inotify"]


def test_a_folder_of_notes_without_memory_is_a_vault_and_an_agents_folder_is_not(tmp_path):
    notes = tmp_path / "notes"
    _notes(notes, 2)
    assert Workspace(WorkspaceConfig("w", notes)).vault
    agent = tmp_path / "agent"
    (agent / "memory").mkdir(parents=True)
    (agent / "AGENTS.md").write_text("# Agents\n")
    layout = Workspace(WorkspaceConfig("w", agent))
    assert not layout.vault
    assert [e.path for e in layout.scan()] == []  # AGENTS.md is no memory
    assert [e.path for e in Workspace(WorkspaceConfig("w", agent, vault=True)).scan()] == [
        "AGENTS.md"
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not Workspace(WorkspaceConfig("w", empty)).vault


def test_a_folder_found_to_be_a_vault_stays_one_when_the_agent_writes_its_memory(tmp_path):
    """A folder of notes without .obsidian/ is a vault by looking; the agent's first daily
    note (memd's own flush) or a MEMORY.md does not turn its notes off in later runs."""
    notes = tmp_path / "notes"
    _notes(notes)
    run = _cli(tmp_path, notes)
    assert "12 added" in run("index").stdout
    out = run("flush", "--text", "We chose the blue theme.")
    assert out.returncode == 0 and (notes / "memory").is_dir(), out.stderr
    (notes / "MEMORY.md").write_text("# Memory\n\n- The harbour opens at six.\n")
    out = run("index")
    assert "0 removed" in out.stdout and "1 added" in out.stdout, out.stdout
    for query, path in (("Topic 7", "Notes/Topic 7.md"), ("blue theme", "memory/")):
        found = json.loads(run("search", query, "--json").stdout)["results"]
        assert found and found[0]["path"].startswith(path), (query, found)
    ws = {c.name: c for c in doctor.run_checks(str(run.config), None, os.environ)}
    assert "a vault: 14 notes read" in ws["workspace default"].detail, ws
    run.config.write_text(run.config.read_text() + "vault: false\n")  # said outright
    assert "12 removed" in run("index").stdout
    assert Workspace(WorkspaceConfig("default", notes), tmp_path / "state").vault
    assert not Workspace(WorkspaceConfig("default", notes)).vault  # by looking alone


def test_doctor_warns_when_most_notes_are_not_read_and_names_the_setting(tmp_path):
    folder = tmp_path / "mixed"
    _notes(folder)
    (folder / "MEMORY.md").write_text("# Memory\n")  # an agent's file: not a vault by looking
    run = _cli(tmp_path, folder)
    out = run("index")
    assert "1 added" in out.stdout + out.stderr, out.stdout + out.stderr
    checks = {c.name: c for c in doctor.run_checks(str(run.config), None, os.environ)}
    ws = checks["workspace default"]
    assert ws.state == "warn", ws
    assert "1 of 13 notes indexed" in ws.detail
    assert "vault: true" in ws.fix and str(run.config) in ws.fix
    out = run("doctor")
    assert "vault: true" in out.stdout and "1 of 13 notes indexed" in out.stdout
    run.config.write_text(run.config.read_text() + "vault: true\n")
    ws = {c.name: c for c in doctor.run_checks(str(run.config), None, os.environ)}
    assert ws["workspace default"].state == "ok"
    assert json.loads(run("search", "lighthouse 7", "--json").stdout)["results"][0]["path"] == (
        "Notes/Topic 7.md"
    )


def test_vault_setting_is_checked(tmp_path):
    import pytest

    from memd.errors import ConfigError

    with pytest.raises(ConfigError, match="vault in .*must be true, false or auto"):
        parse_config({"workspace": str(tmp_path), "vault": "yes"}, env={})
    with pytest.raises(ConfigError, match="workspaces.a.vault"):
        parse_config({"workspaces": {"a": {"workspace": str(tmp_path), "vault": 1}}}, env={})
    config = parse_config(
        {"workspaces": {"a": {"workspace": str(tmp_path), "vault": False}, "b": str(tmp_path)}},
        env={},
    )
    assert [w.vault for w in config.workspaces] == [False, None]


def test_the_daemon_watches_every_folder_of_a_vault_workspace(serve, ws):
    (ws.root / ".obsidian").mkdir(parents=True)
    ws.write("Notes/First.md", "# First\n\nA note about kestrels.\n")
    d = serve()
    d.wait_for(lambda: d.call("status")["watcher"] == "running", what="watcher")
    assert [r["path"] for r in d.search("kestrels")] == ["Notes/First.md"]
    ws.write("Deep/er/Second.md", "# Second\n\nA note about ospreys.\n")
    d.wait_for(lambda: [r["path"] for r in d.search("ospreys")] == ["Deep/er/Second.md"],
               timeout=30, what="the new note")  # fmt: skip
    (ws.root / "Notes" / "First.md").unlink()
    d.wait_for(lambda: d.search("kestrels", min_score=0) == [], timeout=30, what="the removal")
