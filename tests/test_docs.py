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


def paragraphs(text: str) -> list[str]:
    """A page's prose: each paragraph and each list item on its own, without code blocks
    and tables."""
    text = re.sub(r"(?ms)^\s*```.*?^\s*```", "", text)
    pieces = []
    for block in re.split(r"\n\s*\n", text):
        prose = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("|"))
        pieces += re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", prose)
    return pieces


# The generated references list every option and key; the changelog is the project's record.
PROSE = [p for p in PAGES if "reference" not in p.parts and p.name != "changelog.md"]


@pytest.mark.parametrize("page", PROSE, ids=lambda p: str(p.relative_to(REPO)))
def test_every_page_reads_in_sections_and_short_paragraphs(page):
    """A reader finds their way by ``##`` sections, and no paragraph or list item runs to
    150 words (a wall of text hides what a reader came for)."""
    text = page.read_text(encoding="utf-8")
    assert re.search(r"(?m)^## ", text), f"{page.name} has no ## section"
    long = [(len(p.split()), p.strip()[:60]) for p in paragraphs(text) if len(p.split()) >= 150]
    assert not long, f"{page.name}: split these paragraphs: {long}"


def test_the_benchmarks_page_says_how_each_figure_was_measured():
    """Each section of figures names its command and how it was measured; earlier figures
    live in bench/results/HISTORY.md, which keeps the same sections."""
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    sections = re.split(r"(?m)^(?=##+ )", page)[1:]
    for section in sections:
        title = section.splitlines()[0]
        if "|" not in section or title == "## How to read this page":
            continue  # a section without a table of figures, or the page's own guide
        assert "python bench/" in section or "farm-bench" in section, f"{title}: no command"
        assert "**How measured:**" in section, f"{title}: not said how it was measured"
    history = (REPO / "bench" / "results" / "HISTORY.md").read_text(encoding="utf-8")
    for title in re.findall(r"(?m)^## (.+)$", page)[1:]:
        assert title in history, f"{title} has no section in bench/results/HISTORY.md"
