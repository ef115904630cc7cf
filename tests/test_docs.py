import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
README = REPO / "README.md"
# README and every page of the docs site, in order: where examples may live.
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]


def code_block(language: str, marker: str) -> str:
    """The code block of ``language`` that contains ``marker``, in README or a docs page."""
    for page in PAGES:
        for block in re.findall(rf"```{language}\n(.*?)```", page.read_text(), re.S):
            if marker in block:
                return block
    raise AssertionError(f"no {language} block with {marker!r} in README.md or docs/")


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    first = text.index("```sh")
    install, tests = re.findall(r"```sh\n(.*?)```", text[first:], re.S)[:2]
    assert "pip install" in install and "memd" in install
    assert "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in tests and ".venv/bin/python -m pytest -q" in ci


def test_node_example_talks_to_a_real_daemon(serve, ws, tmp_path):
    """The JavaScript client in the README works as printed."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    ws.write("MEMORY.md", "# Memory\n- We use Postgres 16.\n")
    d = serve()
    d.wait_for(lambda: d.search("postgres"), what="index")
    script = tmp_path / "client.mjs"
    script.write_text(code_block("js", "node:net"))
    out = subprocess.run(
        ["node", str(script), "postgres"],
        env={"MEMD_SOCKET": str(d.socket), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "MEMORY.md#L1-L2" in out.stdout


def test_python_client_example_runs(serve, ws):
    ws.write("MEMORY.md", "# Memory\n- We decided the public API is REST.\n")
    d = serve()
    d.wait_for(lambda: d.search("api"), what="index")
    example = code_block("python", "config = load_config()").replace(
        "config.socket", repr(str(d.socket))
    )
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    assert namespace["answer"]["results"]


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_readme_says_how_memd_gets_on_path_before_it_writes_plain_memd(page):
    """The install leaves memd in .venv/bin/: say once how to put it on PATH, before the
    first example that types plain ``memd`` (README, and the page a first visit opens)."""
    text = (REPO / page).read_text()
    examples = [m.start() for m in re.finditer(r"```sh\n(.*?)```", text, re.S)]
    first_plain = min(
        (
            at + m.start()
            for at in examples
            for m in re.finditer(r"(?m)^(?:.*[|;&(] *)?memd ", text[at : text.index("```", at + 3)])
        ),
        default=len(text),  # no plain memd yet: the page must still say it
    )
    told = text.find("source .venv/bin/activate")
    assert 0 <= told < first_plain and "pipx install" in text[told : told + 400]


def test_the_socket_page_says_where_socat_and_nc_come_from():
    text = (REPO / "docs" / "socket.md").read_text()
    socket_section = text[text.index("## The socket") : text.index("From Python, `memd.client`")]
    assert "command -v socat nc" in socket_section and "apt install socat" in socket_section
    assert "netcat-openbsd" in socket_section
