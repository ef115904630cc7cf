import os
import subprocess
import sys

import pytest

from memd.client import Client
from memd.errors import InvalidParams, NotFound


@pytest.fixture
def two(tmp_path, serve, ws):
    """One daemon serving two agents' memories: 'main' (ws) and 'work'."""
    work = tmp_path / "work-ws"
    (work / "memory").mkdir(parents=True)
    ws.write("MEMORY.md", "# Main\n- The main agent likes okapis.\n")
    ws.write("memory/only-main.md", "# Only main\nsecret of main: aardvark\n")
    (work / "MEMORY.md").write_text("# Work\n- The work agent likes narwhals.\n")
    (work / "memory" / "only-work.md").write_text("# Only work\nsecret of work: pangolin\n")
    d = serve(
        f"workspaces:\n  main: {ws.root}\n  work: {{workspace: {work}}}\n".replace(
            f"workspace: {ws.root}\n", ""
        )
    )
    return d, work


def test_searches_never_cross_workspaces(two):
    d, _ = two
    d.wait_for(lambda: d.search("pangolin", workspace="work"), what="both indexed")
    assert [r["path"] for r in d.search("okapis")] == ["MEMORY.md"]  # default: the first
    assert d.search("pangolin") == []
    assert d.search("aardvark", workspace="work") == []
    assert d.search("narwhals", workspace="work")[0]["snippet"].startswith("# Work")
    assert d.search("narwhals", workspace="main") == []


def test_get_never_reads_across(two):
    d, _ = two
    assert "narwhals" in d.call("memory_get", path="MEMORY.md", workspace="work")["text"]
    assert "okapis" in d.call("memory_get", path="MEMORY.md")["text"]
    with pytest.raises(NotFound):
        d.call("memory_get", path="memory/only-work.md", workspace="main")
    with pytest.raises(NotFound):
        d.call("memory_get", path="memory/only-main.md", workspace="work")
    with pytest.raises(InvalidParams, match="no workspace named 'play'"):
        d.call("memory_get", path="MEMORY.md", workspace="play")


def test_writes_land_in_their_own_workspace(two, ws):
    d, work = two
    with Client(d.socket) as c:
        c.call(
            "memory_flush",
            entries=[{"text": "Quokka sighting."}],
            workspace="work",
            date="2026-02-02",
        )
        c.call("memory_store", key="editor", content="helix", workspace="work")
    assert (work / "memory" / "2026-02-02.md").exists()
    assert not (ws.root / "memory" / "2026-02-02.md").exists()
    assert "editor" in (work / "MEMORY.md").read_text()
    assert "editor" not in (ws.root / "MEMORY.md").read_text()
    assert d.search("quokka", workspace="work") and d.search("quokka") == []
    status = d.call("status", workspace="work")
    assert status["workspace"] == "work" and status["path"] == str(work)


def test_cli_workspace_option(two):
    d, _ = two
    env = {**d.env, "MEMD_CONFIG": str(d.config_path)}
    d.wait_for(lambda: d.search("pangolin", workspace="work"), what="indexed")
    out = subprocess.run(
        [sys.executable, "-m", "memd", "search", "pangolin", "--workspace", "work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "memory/only-work.md" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "memd", "search", "pangolin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "nothing relevant found"
    assert os.path.exists(d.config_path)
