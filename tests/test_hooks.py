"""Memory that comes to the agent (issue 22): `memd hooks install claude-code`, then the
installed commands fed the hook inputs Claude Code sends (tests/data/hooks), against a real
daemon; the settings file merged and restored byte for byte; hooks that never break."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memd.sources.chunker import count_tokens

DATA = Path(__file__).parent / "data"
TRANSCRIPT = DATA / "sessions/claude-code/-home-me-shop/6f1d2c3a-8b4e-4c1f-9a2b-3c4d5e6f7a8b.jsonl"
SETTINGS = (
    '{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(git log:*)"]},\n'
    '  "hooks": {\n    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
    '"command": "~/bin/guard.sh"}]}],\n    "SessionStart": [{"matcher": "startup", "hooks": '
    '[{"type": "command", "command": "echo hello"}]}]\n  }\n}\n'
)
CORE = (
    "# Memory\n\n## Decisions\n"
    "- We use Postgres 16 for the main database; SQLite only for local caches.\n"
    "- Deployments go out on Tuesdays and Wednesdays, never on Fridays.\n\n"
    "## Projects\n- The shop's order service moves from MySQL to Postgres 16 this quarter.\n"
)


@pytest.fixture
def host(tmp_path, ws):
    """A user's machine: HOME, a project folder, a transcript, the memd config."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    project = tmp_path / "shop"
    project.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    shutil.copy(TRANSCRIPT, transcript)
    ws.write("MEMORY.md", CORE)
    ws.write(
        "memory/2026-11-24.md",
        "# 2026-11-24\n\n- Deployed 2.4.1; smoke tests passed.\n"
        "- Decision: Sam owns the payments gateway.\n",
    )
    config = tmp_path / "memd.yaml"
    config.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\n"
        f"socket: {tmp_path / 'run' / 'memd.sock'}\nembeddings: {{provider: none}}\n"
    )
    # A long budget: a loaded machine must not change which way a hook answers.
    env = {**os.environ, "HOME": str(home), "MEMD_HOOK_BUDGET_S": "60"}
    return home, project, transcript, config, env


def payload(name: str, transcript: Path, cwd: Path) -> str:
    text = (DATA / "hooks" / f"{name}.json").read_text()
    return text.replace("TRANSCRIPT", str(transcript)).replace("CWD", str(cwd))


def memd(config: Path, env: dict, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def installed(settings: Path, event: str) -> str:
    """The command memd installed for ``event``, as the host would run it."""
    groups = json.loads(settings.read_text())["hooks"][event]
    [command] = [h["command"] for g in groups for h in g["hooks"] if "--hook" in h["command"]]
    return command


def run_hook(command: str, stdin: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], input=stdin, capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip


def test_install_merges_is_idempotent_and_uninstall_restores_byte_for_byte(host):
    home, _, _, config, env = host
    settings = home / ".claude" / "settings.json"
    settings.write_text(SETTINGS)
    out = memd(config, env, "hooks", "install", "claude-code", "--events", "SessionStart",
               "UserPromptSubmit", "PreCompact", "SessionEnd")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "claude mcp add --scope user memd --" in out.stdout
    merged = json.loads(settings.read_text())
    original = json.loads(SETTINGS)
    assert merged["model"] == "opus" and merged["permissions"] == original["permissions"]
    assert merged["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    assert merged["hooks"]["SessionStart"][0] == original["hooks"]["SessionStart"][0]
    assert installed(settings, "SessionStart").endswith("context --hook")
    assert installed(settings, "UserPromptSubmit").endswith("recall --hook")
    assert installed(settings, "PreCompact").endswith("flush --hook")
    assert (home / ".claude" / "settings.json.memd-backup").read_text() == SETTINGS
    once = settings.read_bytes()
    again = memd(config, env, "hooks", "install", "claude-code")
    assert "already" in again.stdout and settings.read_bytes() == once
    status = memd(config, env, "hooks", "status").stdout
    assert f"{settings}: SessionStart, UserPromptSubmit, PreCompact, SessionEnd" in status
    out = memd(config, env, "hooks", "uninstall", "claude-code")
    assert out.returncode == 0 and "removed 4 memd hooks" in out.stdout
    assert settings.read_text() == SETTINGS  # byte for byte
    assert not (home / ".claude" / "settings.json.memd-backup").exists()
    assert "no memd hooks" in memd(config, env, "hooks", "uninstall", "claude-code").stdout


def test_install_into_a_project_without_settings_and_back(host):
    _, project, _, config, env = host
    assert (
        memd(config, env, "hooks", "install", "claude-code", "--project", str(project)).returncode
        == 0
    )
    settings = project / ".claude" / "settings.json"
    assert set(json.loads(settings.read_text())["hooks"]) == {
        "SessionStart",
        "PreCompact",
        "SessionEnd",
    }
    memd(config, env, "hooks", "uninstall", "claude-code", "--project", str(project))
    assert not settings.exists()


def test_codex_gets_the_mcp_server_and_loses_it_exactly(host):
    home, _, _, config, env = host
    toml = home / ".codex" / "config.toml"
    toml.parent.mkdir()
    before = 'model = "o4-mini"\n\n[mcp_servers.other]\ncommand = "other"\n'
    toml.write_text(before)
    assert memd(config, env, "hooks", "install", "codex").returncode == 0
    text = toml.read_text()
    assert text.startswith(before) and "[mcp_servers.memd]" in text and '"mcp"' in text
    import tomllib

    server = tomllib.loads(text)["mcp_servers"]["memd"]
    assert server["args"][-1] == "mcp" and "--config" in server["args"]
    assert "already" in memd(config, env, "hooks", "install", "codex").stdout
    memd(config, env, "hooks", "uninstall", "codex")
    assert toml.read_text() == before


def test_a_session_as_claude_code_runs_it(host, serve, ws):
    home, project, transcript, config, env = host
    d = serve()
    config = d.config_path  # the daemon's own config: the hooks must reach it
    settings = home / ".claude" / "settings.json"
    memd(config, env, "hooks", "install", "claude-code", "--events", "SessionStart",
         "UserPromptSubmit", "PreCompact", "SessionEnd")  # fmt: skip
    # Session start: MEMORY.md and the last days, each line cited, within the budget.
    start = run_hook(installed(settings, "SessionStart"),
                     payload("session_start_startup", transcript, project), env)  # fmt: skip
    assert start.returncode == 0 and start.stderr == ""
    assert "never on Fridays. (MEMORY.md#L5)" in start.stdout
    assert (
        "[2026-11-24] Deployed 2.4.1; smoke tests passed. (memory/2026-11-24.md#L3)" in start.stdout
    )
    assert count_tokens(start.stdout) <= 1500
    # A prompt: the note that answers it.
    recall = run_hook(installed(settings, "UserPromptSubmit"),
                      payload("user_prompt_submit", transcript, project), env)  # fmt: skip
    assert "order service moves from MySQL to Postgres 16" in recall.stdout
    assert "(MEMORY.md#L" in recall.stdout and count_tokens(recall.stdout) <= 600
    # A review waiting is said at the start too (once the daemon has run one).
    d.call("memory_review")
    # Compaction: an entry naming the session and its lines, once, even if the hook is retried.
    compact = payload("pre_compact_auto", transcript, project)
    for _ in range(2):
        assert run_hook(installed(settings, "PreCompact"), compact, env).returncode == 0
    notes = (ws.root / "memory").glob
    today = d.wait_for(lambda: [p for p in notes("*.md") if "6f1d2c3a" in p.read_text()],
                       what="the hook's flush")  # fmt: skip
    note = today[0].read_text()
    assert note.count("session `6f1d2c3a-8b4e-4c1f-9a2b-3c4d5e6f7a8b`") == 1
    assert f"lines 1–14 of `{transcript}`" in note
    # Without a model: the last requests and final answers, redacted, not a bare pointer.
    assert (
        "- asked: Thanks. Also remember: deploys of the order service happen on Thursdays." in note
    )
    assert "- answered: Noted: order-service deploys are on Thursdays." in note
    assert "- answered: The schema uses an ENUM for status." in note
    assert "Tr0ub4dor3" not in note and "sk-proj-Q9x8" not in note
    # After the compaction the session starts again: what was just flushed comes first.
    again = run_hook(installed(settings, "SessionStart"),
                     payload("session_start_compact", transcript, project), env)  # fmt: skip
    assert again.stdout.index("Recent notes") < again.stdout.index("From MEMORY.md")
    # The flushed turns are summarised to their requests: no transcript pointer, no answers.
    assert "in sessions, asked: " in again.stdout
    assert "Also remember: deploys of the order service happen on Thursdays" in again.stdout
    assert "6f1d2c3a" not in again.stdout and "answered:" not in again.stdout
    assert "memory review proposal" in again.stdout
    # The session goes on, then ends: only the new lines are flushed.
    with transcript.open("a") as f:
        f.write(TRANSCRIPT.read_text().splitlines()[1] + "\n")
    run_hook(installed(settings, "SessionEnd"), payload("session_end", transcript, project), env)
    d.wait_for(lambda: "lines 15–15" in today[0].read_text(), what="the SessionEnd flush")
    assert d.call("memory_search", query="6f1d2c3a session", min_score=0)["results"]


def test_hooks_never_break_the_host(host):
    _, project, transcript, config, env = host
    # No daemon, then bad JSON, then a config that cannot be read: exit 0, nothing printed.
    assert memd(config, env, "recall", "--hook", stdin="{not json").stdout == ""
    for args in (("context", "--hook"), ("flush", "--hook"), ("recall", "--hook")):
        out = memd(config, env, *args, stdin="[1, 2]")
        assert (out.returncode, out.stdout) == (0, "")
    broken = config.with_name("broken.yaml")
    broken.write_text("chunking: {tokenz: 5}\n")
    out = memd(broken, env, "context", "--hook", stdin="{}")
    assert (out.returncode, out.stdout) == (0, "")
    log = (config.parent / "state" / "hooks.log").read_text().splitlines()
    assert len(log) == 4 and "JSONDecodeError" in json.loads(log[0])["error"]
    from memd.cli import doctor

    checks = {c.name: c for c in doctor.run_checks(str(config), None, env)}
    assert checks["hooks"].state == "warn" and "4 hook runs failed" in checks["hooks"].detail
    # Without a daemon the work is done in the process: the context still comes.
    start = memd(config, env, "context", "--hook",
                 stdin=payload("session_start_startup", transcript, project))  # fmt: skip
    assert "(MEMORY.md#L4)" in start.stdout


def test_nothing_to_say_prints_nothing(tmp_path):
    config = tmp_path / "memd.yaml"
    (tmp_path / "ws").mkdir()
    config.write_text(f"workspace: {tmp_path / 'ws'}\nstate_dir: {tmp_path / 's'}\n"
                      "embeddings: {provider: none}\n")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_HOOK_BUDGET_S": "60"}
    assert memd(config, env, "context", "--cwd", str(tmp_path)).stdout == ""
    assert memd(config, env, "recall", "what", "is", "the", "deploy", "target").stdout == ""


def test_context_and_recall_have_a_json_form_and_the_rest_refuse_it(host):
    _, project, _, config, env = host
    assert memd(config, env, "index").returncode == 0  # recall reads an index, never builds one
    for args in (
        ("context", "--cwd", str(project)),
        ("recall", "which database does the order service use now?"),
    ):
        out = memd(config, env, *args, "--json")
        answer = json.loads(out.stdout)
        assert "(MEMORY.md#L" in answer["text"], (args, out.stdout)
    out = memd(config, env, "status", "--socket", "--json")
    assert json.loads(out.stdout) == {"socket": str(config.parent / "run" / "memd.sock")}
    for args in (("hooks", "status"), ("service", "status"), ("team", "init")):
        out = memd(config, env, "--json", *args)
        assert out.returncode == 2 and "--json is not available" in out.stderr, out


def test_sessions_are_added_to_the_config_when_asked(host):
    _, _, _, config, env = host
    before = config.read_text()
    out = memd(config, env, "hooks", "install", "claude-code", "--sessions")
    assert "added ~/.claude/projects" in out.stdout
    assert "  - {path: ~/.claude/projects, format: claude-code}" in config.read_text()
    from memd.configfile import load_config

    [source] = load_config(str(config), env).workspace().sessions
    assert source.format == "claude-code"
    # Uninstall takes out exactly what install put in.
    out = memd(config, env, "hooks", "uninstall", "claude-code")
    assert "removed the sessions entry" in out.stdout
    assert config.read_text() == before
    # An entry the person added under it stays, and so does the list.
    memd(config, env, "hooks", "install", "claude-code", "--sessions")
    with config.open("a") as f:
        f.write("  - {path: ~/notes/chats, format: claude-code}\n")
    memd(config, env, "hooks", "uninstall", "claude-code")
    [source] = load_config(str(config), env).workspace().sessions
    assert str(source.path).endswith("notes/chats")


def test_with_a_model_the_hook_flush_keeps_what_it_picks_once(
    make_config, embed_server, ws, tmp_path
):
    from memd.agent.hookflush import hook_flush
    from memd.memory import Memory

    ws.write("MEMORY.md", "# Memory\n")
    transcript = tmp_path / "t.jsonl"
    lines = TRANSCRIPT.read_text().splitlines()
    secret = "sk-" + "A1b2C3d4" * 6
    leak = json.loads(lines[1])
    leak["message"]["content"] = f"my key is {secret}, keep the Postgres 16 plan"
    transcript.write_text("\n".join([*lines, json.dumps(leak)]) + "\n")
    llm = {"model": "chat-1", "base_url": embed_server.url, "retries": 0, "timeout_s": 5}
    embed_server.chat_reply = "- The order service moves to Postgres 16; schema first."
    hook = json.loads(payload("pre_compact_auto", transcript, tmp_path))
    with Memory(make_config(flush={"llm": llm})) as memory:
        answer = hook_flush(memory, hook)
        assert answer is not None and answer.written
        assert hook_flush(memory, hook) is None  # retried: nothing new in the transcript
    [written] = answer.written
    note = (ws.root / written.path).read_text()
    assert note.count("The order service moves to Postgres 16; schema first.") == 1
    sent = json.dumps(embed_server.chat_messages)
    assert "keep the Postgres 16 plan" in sent and secret not in sent


def test_a_running_daemon_takes_up_the_sessions_install_adds(host, serve):
    """The daemon follows its config file: no restart after --sessions (status used to show
    the config it started with while the file said otherwise)."""
    home, _, _, _, env = host
    d = serve()
    assert not any("projects" in root for root in d.call("status")["roots"])
    out = memd(d.config_path, {**env, "HOME": str(home)}, "hooks", "install", "claude-code",
               "--sessions")  # fmt: skip
    assert "a running memd picks it up" in out.stdout
    d.wait_for(
        lambda: any(".claude/projects" in root for root in d.call("status")["roots"]),
        what="the sessions source in the daemon's status",
    )
    memd(d.config_path, {**env, "HOME": str(home)}, "hooks", "uninstall", "claude-code")
    d.wait_for(
        lambda: not any(".claude/projects" in root for root in d.call("status")["roots"]),
        what="the sessions source gone",
    )
