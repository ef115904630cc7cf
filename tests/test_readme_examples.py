"""Every shell example in README.md and in each page of docs/ runs as written, against a
real daemon in a temp HOME.

Each file is a test of its own, with a fresh daemon: each line of each ```sh block runs
(continued lines joined), in the order the file has them, with `bash`, as a user would type
it after `memd serve` started with the defaults; so does the inline demo command. Only
what ``SKIP`` names is left out, with the reason; a new example runs unless it is added
there. An example that needs a tool this machine lacks (socat, nc) is skipped when it is
missing and runs where it is installed.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memd.client import Client
from memd.errors import MemdError

REPO = Path(__file__).parent.parent
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]

SKIP = {
    "pip install": "installs from PyPI; .ci/run does exactly this on a fresh machine",
    "git clone": "fetches the repository; the tests run inside a checkout already",
    "-m pytest": "the test suite itself",
    "ruff ": "the linters, which CI runs",
    "memd team": "needs a PostgreSQL server; tests/test_team_roles.py runs these on a real one",
    "psql ": "needs a PostgreSQL server",
    "mkdocs ": "builds or serves the docs site; CI builds it, tests/test_docs_site.py too",
    "gen_reference.py": "tests/test_docs_reference.py runs the generator",
    "memd ui": "serves a page until Ctrl-C; tests/test_ui.py runs it beside a real daemon and "
    "without one",
}
TOOLS = ("socat", "nc")


def listed(command: str) -> bool:
    return any(what in command for what in SKIP)


def examples(page: Path = README) -> list[tuple[int, str]]:
    """(line, command) for every shell example of ``page``, in order."""
    text = page.read_text()
    found = []
    for block in re.finditer(r"```sh\n(.*?)```", text, re.S):
        first = text.count("\n", 0, block.start()) + 2
        command, start = "", first
        for n, line in enumerate(block.group(1).splitlines(), first):
            if not command:
                start = n
            command += line
            if command.endswith("\\"):
                command = command[:-1] + " "
                continue
            if command.strip():
                found.append((start, command.strip()))
            command = ""
    for inline in re.finditer(r"`(\.venv/bin/memd [^`]+)`", text):
        found.append((text.count("\n", 0, inline.start()) + 1, inline.group(1)))
    return found


def name(page: Path) -> str:
    return str(page.relative_to(REPO))


# Only the files that hold an example SKIP does not name start a daemon.
WITH_EXAMPLES = [name(page) for page in PAGES if any(not listed(c) for _, c in examples(page))]


def test_the_examples_are_found():
    commands = [c for page in PAGES for _, c in examples(page)]
    assert any("socat" in c for c in commands) and "memd doctor" in " ".join(commands)
    assert len(commands) > 40 and "README.md" in WITH_EXAMPLES and len(WITH_EXAMPLES) >= 6


@pytest.fixture
def user(tmp_path, isolated_home):
    """A user's machine: HOME with a config, ~/clawd with notes, a checkout with .venv."""
    home = isolated_home
    (home / ".config" / "memd").mkdir(parents=True)
    # Keyword only, so the test does not load the local model; no example depends on it.
    (home / ".config" / "memd" / "config.yaml").write_text("embeddings: {provider: none}\n")
    clawd = home / "clawd"
    (clawd / "memory").mkdir(parents=True)
    (clawd / "MEMORY.md").write_text("# Memory\n\n- We run the main database on Postgres.\n")
    day = ["# 2026-01-20", "", "## API", "We decided the public API is REST, not GraphQL.", ""]
    day += [f"- standup note {n}: postgres tuning, item {n}" for n in range(70)]
    (clawd / "memory" / "2026-01-20.md").write_text("\n".join(day) + "\n")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    shutil.copytree(REPO / "demo", checkout / "demo", ignore=shutil.ignore_patterns(".state"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `memd service ...` must not reach the real user manager: a systemctl that works.
    systemctl = bin_dir / "systemctl"
    systemctl.write_text('#!/bin/sh\necho "memd.serve.service - active (running)"\n')
    systemctl.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "HOME": str(home), "PATH": path}
    return checkout, env, home


@pytest.mark.parametrize("page", WITH_EXAMPLES)
def test_every_shell_example_runs(user, page):
    checkout, env, home = user
    if all(skipped(c) for _, c in examples(REPO / page)):
        pytest.skip(f"every example in {page} needs a tool this machine lacks")
    daemon = subprocess.Popen(
        ["memd", "serve"], cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        socket = home / ".local" / "state" / "memd" / "memd.sock"  # XDG_RUNTIME_DIR is unset
        wait_watching(socket, daemon)
        ran = 0
        for line, command in examples(REPO / page):
            if skipped(command):
                continue
            out = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=checkout, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert out.returncode == 0, f"{page} line {line}: {command}\n{out.stderr}"
            if "socat" in command:
                assert '"results"' in out.stdout and "MEMORY.md" in out.stdout, out.stdout
            if "nc -U" in command:
                assert '"ok": true' in out.stdout, out.stdout
            if "which database do we use" in command:  # right after the printf >> MEMORY.md
                assert "Postgres 16" in out.stdout and "not indexed yet" not in out.stderr
            if "demo/config.yaml search" in command:  # a fresh state folder, no daemon
                assert "no chunk has a vector" not in out.stderr, out.stderr
                # First, with a clear margin, however busy the machine (embedding is
                # bounded by the demo's chunk count, not by seconds).
                first, second = [ln for ln in out.stdout.splitlines() if ln[:1].isdigit()][:2]
                assert first.endswith("# 2026-01-20 > ## Database"), out.stdout
                assert float(first.split()[0]) >= float(second.split()[0]) + 0.05, out.stdout
            ran += 1
        assert ran >= 1
    finally:
        daemon.terminate()
        assert daemon.wait(10) == 0, daemon.stderr.read().decode()


def skipped(command: str) -> bool:
    """Whether ``SKIP`` names the command, or it needs a tool this machine lacks."""
    return listed(command) or any(needs(command, t) for t in TOOLS)


def needs(command: str, tool: str) -> bool:
    return re.search(rf"(^|\| *){tool} ", command) is not None and shutil.which(tool) is None


def wait_watching(socket: Path, daemon: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert daemon.poll() is None, daemon.stderr.read().decode()
        try:
            with Client(socket, timeout=5) as client:
                status = client.call("status")
                if status["watcher"] == "running" and status["files"] == 2:
                    return
        except MemdError:
            pass
        time.sleep(0.05)
    raise AssertionError("memd serve did not start watching")
