import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture
def cli(tmp_path, ws):
    """Run `python -m memd` as a user would, with a config file in a temp dir."""
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\nembeddings: {{provider: none}}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}

    def run(*args, input=None):
        return subprocess.run(
            [sys.executable, "-m", "memd", *args],
            capture_output=True,
            text=True,
            env=env,
            input=input,
            timeout=60,
        )

    run.env = env
    run.config = config
    return run


@pytest.fixture
def notes(ws):
    ws.write("MEMORY.md", "# Memory\n\n## Decisions\n- We use Postgres 16 for the main database.\n")
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\n## API\nWe chose REST over GraphQL.\n")


def test_index_then_search_for_people(cli, notes):
    out = cli("index")
    assert out.returncode == 0, out.stderr
    assert "2 added" in out.stdout
    out = cli("search", "graphql")
    assert out.returncode == 0
    first = out.stdout.splitlines()[0]
    assert "memory/2026-01-20.md#L1-L4" in first and "# 2026-01-20 > ## API" in first
    assert "We chose REST over GraphQL." in out.stdout


def test_search_json_is_the_socket_result(cli, notes):
    out = cli("search", "postgres", "--json", "--max-results", "1", "--min-score", "0")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"results", "mode", "provider", "model", "index"}
    assert data["results"][0]["citation"] == "MEMORY.md#L1-L4"


def test_search_sees_edits_without_a_daemon(cli, notes, ws):
    """Without a daemon, search brings the index up to date first."""
    cli("index")
    ws.write("memory/2026-01-21.md", "# 2026-01-21\nKubernetes upgrade planned.\n")
    out = cli("search", "kubernetes")
    assert "memory/2026-01-21.md" in out.stdout


def test_a_one_shot_command_keeps_a_private_quick_copy_of_the_encoder(cli, notes, tmp_path):
    """A command that indexes in its own process keeps the token encoder's table in the
    state folder (it loads faster from there next time), private, and counting from it
    gives tiktoken's counts."""
    import tiktoken

    from memd.sources.chunker import ENCODING, _from_copy

    assert cli("search", "graphql").returncode == 0
    copy = tmp_path / "state" / "cl100k_base.marshal"
    assert copy.stat().st_mode & 0o777 == 0o600
    quick, plain = _from_copy(copy), tiktoken.get_encoding(ENCODING)
    text = "We chose REST over GraphQL — 16 × faster, naïvely: 東京 🚀\n\n  x"
    assert quick is not None and quick.encode_ordinary(text) == plain.encode_ordinary(text)


def test_no_results(cli, notes):
    out = cli("search", "zzyzx")
    assert out.returncode == 0 and out.stdout.strip() == "nothing relevant found"


def test_get_and_status(cli, notes):
    out = cli("get", "memory/2026-01-20.md", "--from", "3", "--lines", "1")
    assert out.returncode == 0 and out.stdout == "## API\n"
    assert "more with --from 4" in out.stderr
    cli("index")
    out = cli("status", "--json")
    assert json.loads(out.stdout)["files"] == 2
    out = cli("status")
    assert "files" in out.stdout and "2" in out.stdout


def test_global_options_after_the_command(cli, notes, tmp_path):
    out = cli("search", "postgres", "--config", str(cli.config), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["results"]


def test_exit_codes(cli, notes):
    assert cli().returncode == 2  # no command
    assert cli("search").returncode == 2  # missing query
    out = cli("search", "x", "--max-results", "0")
    assert out.returncode == 2 and "max_results" in out.stderr
    out = cli("get", "../etc/passwd")
    assert out.returncode == 1 and "may not contain '..'" in out.stderr
    out = cli("get", "memory/missing.md")
    assert out.returncode == 1 and "no file memory/missing.md" in out.stderr


@pytest.mark.parametrize(
    ("args", "usage", "hint"),
    [
        (["search", "backup", "--limit", "3"], "usage: memd search ", "mean --max-results?"),
        (["search", "backup", "-k=3"], "usage: memd search ", "mean --max-results?"),
        (["status", "--sockt"], "usage: memd status ", "did you mean --socket?"),
        (["get", "MEMORY.md", "--form", "3"], "usage: memd get ", "did you mean --from?"),
    ],
)  # fmt: skip
def test_a_wrong_option_gets_the_commands_usage_and_the_nearest_option(cli, args, usage, hint):
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.startswith(usage) and "usage: memd [-h]" not in out.stderr
    assert "unrecognized arguments" in out.stderr and hint in out.stderr


def test_config_error_names_key_and_file(cli):
    cli.config.write_text(cli.config.read_text() + "chunking: {tokenz: 5}\n")
    out = cli("status")
    assert out.returncode == 1
    assert "chunking.tokenz" in out.stderr and str(cli.config) in out.stderr


def test_missing_workspace_is_a_clear_error(cli, tmp_path):
    cli.config.write_text(
        f"workspace: {tmp_path / 'nope'}\nstate_dir: {tmp_path / 's'}\n"
        "embeddings: {provider: none}\n"
    )
    out = cli("index")
    assert out.returncode == 1 and "does not exist" in out.stderr


def test_full_reindex(cli, notes):
    cli("index")
    out = cli("index", "--full", "--json")
    assert json.loads(out.stdout)["changed"] == 2


def test_progress_on_a_terminal(cli, ws):
    """On a terminal, indexing shows files done out of the total."""
    for i in range(30):
        ws.write(f"memory/n{i}.md", f"note {i}\n")
    pid, fd = pty.fork()
    if pid == 0:  # child: stdout/stderr are the terminal
        os.execve(sys.executable, [sys.executable, "-m", "memd", "index"], cli.env)
    output = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        output += data
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"indexing 30/30 files" in output
    assert b"30 added" in output


def test_workers_that_cannot_start_fall_back_to_in_process(tmp_path, ws):
    """Run from stdin (a __main__ workers cannot re-import), indexing still completes."""
    for i in range(80):
        ws.write(f"memory/n{i}.md", f"# N{i}\nterm{i}\n")
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from memd.index import workers
        from memd.configfile import parse_config
        from memd.memory import Memory
        workers._PARALLEL_MIN = 10
        cfg = parse_config({{"workspace": {str(ws.root)!r}, "state_dir": {str(tmp_path / "s")!r}}})
        print(Memory(cfg).index().added)
        """
    )
    out = subprocess.run(
        [sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "80"
    assert "index_workers_failed" in out.stdout + out.stderr


def test_flush_store_forget_list_from_the_command_line(cli, notes, ws):
    out = cli(
        "flush",
        "--text",
        "Deploys are frozen until Monday.",
        "--title",
        "Freeze",
        "--date",
        "2026-01-20",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("wrote memory/2026-01-20.md#L")
    out = cli("flush", "--date", "2026-01-20", input="From standard input.\n")
    assert out.returncode == 0 and "wrote memory/2026-01-20.md" in out.stdout
    note = ws.root / "n.txt"
    note.write_text("From a file.")
    out = cli("flush", "--file", str(note), "--core", "--flush-id", "f-1")
    assert "wrote MEMORY.md" in out.stdout
    first = out.stdout.split()[1]
    out = cli("flush", "--file", str(note), "--core", "--flush-id", "f-1")
    # Said once, without a "wrote" that contradicts it (issue 33).
    assert out.stdout == f"already flushed with this id ({first}); nothing written\n"
    text = (ws.root / "memory" / "2026-01-20.md").read_text()
    assert "## " in text and "— Freeze\n\nDeploys are frozen until Monday.\n" in text
    assert "From standard input." in text
    assert cli("store", "editor", "vim").stdout.startswith("stored MEMORY.md#L")
    assert cli("store", "editor", "helix").stdout.startswith("replaced MEMORY.md#L")
    assert cli("list").stdout == "editor  helix  (MEMORY.md:9, core)\n"  # the value shows
    assert cli("forget", "editor").stdout.startswith("removed 'editor' from MEMORY.md")
    out = cli("forget", "editor")  # a missing key says so and fails
    assert out.returncode == 1 and "no stored key 'editor'" in out.stderr and not out.stdout
    out = cli("flush", "--date", "not-a-date", "--text", "x")
    assert out.returncode == 2 and "date" in out.stderr
    out = cli("search", "frozen")
    assert "memory/2026-01-20.md" in out.stdout


def test_help_describes_each_command_once(cli):
    top = cli("--help").stdout
    assert "doctor" in top and "check the setup and say what to fix" in top
    assert top.count("config file to read") == 1
    search = cli("search", "--help").stdout
    assert search.startswith("usage: memd search")
    assert "best chunks first" in search  # a description, not only a usage line
    assert "hybrid = meaning and words" in search  # --mode says what the modes are
    assert "--config" not in search.split("global options")[0]  # listed once, in memd --help
    store = cli("store", "--help").stdout
    assert "a short name, e.g. editor" in store and "the value, kept on one line" in store


def test_get_past_the_end_says_how_long_the_file_is(cli, notes):
    out = cli("get", "memory/2026-01-20.md", "--from", "45")
    assert out.returncode == 1 and out.stdout == ""
    assert "memory/2026-01-20.md has 4 lines; --from 45 is past the end" in out.stderr
    out = cli("get", "memory/2026-01-20.md", "--from", "45", "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["total_lines"] == 4
    out = cli("get", "memory/2026-01-20.md", "--from", "4")  # the last line is no error
    assert out.returncode == 0 and out.stdout == "We chose REST over GraphQL.\n"


def test_search_says_what_the_index_may_be_missing(cli, notes):
    # Embeddings configured, none made yet, and the endpoint is down: keyword results,
    # with a warning and one line saying how many chunks have no vector.
    cli.config.write_text(
        cli.config.read_text().replace(
            "embeddings: {provider: none}",
            "embeddings: {provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', "
            "retries: 0, timeout_s: 1}",
        )
    )
    out = cli("search", "graphql")
    assert out.returncode == 0, out.stderr
    assert "We chose REST over GraphQL." in out.stdout
    assert "index: 2 chunks not embedded yet (found by keyword only)" in out.stderr


def test_freshness_line():
    from memd.cli.format import freshness

    fresh = {"stale": False, "pending_files": 0, "pending_embeddings": 0}
    assert freshness({"index": fresh}) is None
    stale = {**fresh, "stale": True, "pending_files": 3}
    assert freshness({"index": stale}) == (
        "index: 3 changed files not indexed yet; recent edits may be missing"
    )
    unwatched = {**fresh, "stale": True}
    assert "not being watched" in freshness({"index": unwatched})
    cold = {**stale, "indexing": {"done": 120, "total": 1500}}
    assert freshness({"index": cold}).startswith("index: indexing: 120 of 1500 files;")


def test_embedding_progress_shows_rate_and_time_left(tmp_path, ws, embed_server):
    """On a terminal: keyword search works now, an estimate up front, then rate and time left."""
    for i in range(40):
        ws.write(f"memory/n{i}.md", f"# Note {i}\nWe deployed release {i} on a Thursday.\n")
    embed_server.delay = 0.05
    config = tmp_path / "c.yaml"
    config.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 's'}\n"
        f"embeddings: {{provider: openai, model: concepts-1, base_url: '{embed_server.url}', "
        "batch_size: 8}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "memd", "index"], env)
    output = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        output += data
    _, status = os.waitpid(pid, 0)
    text = output.decode()
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "keyword search works now; embedding 40 chunks" in text
    assert "embedding will take about" in text
    assert re.search(r"embedding \d+/40 chunks, [\d.]+/s, about \d+ s left", text), text
    assert "embedded 40 chunks" in text


def test_warnings_of_a_local_pass_are_plain_lines(cli, ws):
    """Without a daemon the command's own index pass says what it met, without structlog."""
    ws.write_bytes("memory/latin1.md", "# Café\nnaïve\n".encode("latin-1"))
    out = cli("search", "naive")
    assert out.returncode == 0
    assert "memd: warning: file_warning path='memory/latin1.md' problem='not valid UTF-8" in (
        out.stderr
    )
