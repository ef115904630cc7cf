"""What the docs claim, checked: nobody is told to install another project, no page talks
of issue numbers, and a figure quoted on more than one page is the same figure, matching
the code or the committed benchmark result it comes from."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from memd.store.schema import SCHEMA_VERSION

REPO = Path(__file__).parent.parent
# Every page a user reads: README, the changelog and the docs site.
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


def text_of(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def found(pattern: str) -> list[tuple[str, str]]:
    """(page, match) for every match of ``pattern`` on every page."""
    return [
        (str(page.relative_to(REPO)), m.group(0))
        for page in PAGES
        for m in re.finditer(pattern, text_of(page))
    ]


def test_no_page_installs_memd_from_pypi():
    """PyPI's ``memd`` is another project: memd installs from its checkout (or from the
    repository, ``'memd[local] @ git+https://…'``, which is no PyPI name)."""
    told = r"pip3? install (?:-U |--upgrade )?['\"]?memd(?:\[[\w,]+\])?['\"]?(?=[\s`)]|$)(?!\s*@)"
    bad = [
        (str(page.relative_to(REPO)), line)
        for page in PAGES
        for line in text_of(page).splitlines()
        if re.search(told, line) and "another project" not in line  # the warning itself
    ]
    assert not bad, bad
    assert found(r"pip install -e '\.\[local,mcp\]'")  # and the way that works is given


def test_the_home_page_has_an_install_line_requirements_and_a_warning():
    home = text_of(REPO / "docs" / "index.md")
    for needed in ("git clone", "pip install -e", "Python 3.11", "Linux", "macOS", "PyPI"):
        assert needed in home, needed
    assert home.index("git clone") < home.index("memd search")
    project = tomllib.loads(text_of(REPO / "pyproject.toml"))["project"]
    assert project["requires-python"] == ">=3.11"  # as the page says


def test_the_changelog_names_this_version():
    from memd import __version__

    project = tomllib.loads(text_of(REPO / "pyproject.toml"))["project"]
    assert project["version"] == __version__
    first = re.search(r"(?m)^## (.+)$", text_of(REPO / "CHANGELOG.md")).group(1)
    assert __version__ in first, f"CHANGELOG.md's newest entry {first!r} is not {__version__}"


def test_no_user_page_mentions_issue_numbers():
    assert not found(r"\b[Ii]ssues? \d+"), found(r"\b[Ii]ssues? \d+")
    # Nor "the issue" (which?), nor where a figure was made as "here" (where is that?).
    assert not found(r"\b[Tt]he issue\b"), found(r"\b[Tt]he issue\b")
    here = r"\b(?:runs?|ran|run|measured|passed|installs?)(?: \w+)? here\b"
    assert not found(here), found(here)
    assert not found(r"\bSPEC\b"), found(r"\bSPEC\b")
    # A figure names the hardware it was made on, not "this machine" (whose?).
    assert not found(r"\b[Tt]his (?:[\w-]+ )?machine\b"), found(r"\b[Tt]his (?:[\w-]+ )?machine\b")


def test_the_repository_address_is_set_once_and_pages_agree():
    site = yaml.safe_load(text_of(REPO / "mkdocs.yml"))
    project = tomllib.loads(text_of(REPO / "pyproject.toml"))["project"]
    address = site["repo_url"]
    assert project["urls"]["Source"] == project["urls"]["Homepage"] == address
    for page, url in found(r"https://github\.com/[\w.-]+/[\w.-]+"):
        assert url == address, (page, url)
    assert (REPO / "LICENSE").exists() and project["license"] == "MIT"
    assert "MIT License" in text_of(REPO / "LICENSE")


def test_the_schema_version_is_the_code_s():
    quoted = [
        (page, int(number))
        for page, match in found(
            r"schema\s+(?:is\s+|\(now\s+|version\s+\(now\s+)?(?:version\s+|v)?\d+"
        )
        for number in re.findall(r"\d+", match)
    ]
    assert len({page for page, _ in quoted}) >= 2, quoted  # quoted on more than one page
    assert all(n == SCHEMA_VERSION for _, n in quoted), quoted


def test_the_5000_note_vault_has_one_chunk_count():
    """Wherever the 5,000-note vault's chunks are counted, it is the count the index bench
    measured (``bench/results/index.json``)."""
    measured = json.loads((REPO / "bench/results/index.json").read_text())
    chunks = f"{measured['chunks']:,}"
    sentences = [
        s
        for page in PAGES
        for s in re.split(r"(?<=[.;])\s", text_of(page))
        if re.search(r"5,000[- ](?:daily )?notes?\b", s) and re.search(r"[\d,]+ chunks\b", s)
    ]
    counts = [c for s in sentences for c in re.findall(r"(\d{2},\d{3}) chunks", s) if c != "2,000"]
    assert counts and set(counts) == {chunks}, (counts, chunks)


def test_the_test_count_is_about_right():
    """development.md says "over N tests": at most what pytest collects, and not far below."""
    said = re.search(r"over ([\d,]+) tests", text_of(REPO / "docs" / "development.md"))
    assert said, "development.md no longer counts the tests"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    collected = int(re.search(r"(\d+) tests? collected", out.stdout).group(1))
    said_count = int(said.group(1).replace(",", ""))
    assert said_count <= collected < said_count * 1.25, collected


def test_config_yaml_holds_every_key():
    """configuration.md says config.yaml holds every key at its default: a key the code reads
    is there, set or (for optional sections) commented out."""
    import dataclasses

    from memd.configfile import _SECTIONS, _TOP_LEVEL

    text = text_of(REPO / "config.yaml")
    live = yaml.safe_load(text)
    commented = {m.group(1) for m in re.finditer(r"(?m)^#\s*(\w+):", text)}
    for key in _TOP_LEVEL:
        assert key in live or key in commented, key
    for name, cls in _SECTIONS.items():
        for f in dataclasses.fields(cls):
            here = f.name in (live.get(name) or {})
            elsewhere = name in commented and re.search(rf"(?m)^#\s+{f.name}:", text)
            assert here or elsewhere, f"{name}.{f.name} is not in config.yaml"


def benchmark_sections() -> dict[str, str]:
    """docs/benchmarks.md's sections by their anchor, each with its subsections."""
    page = text_of(REPO / "docs" / "benchmarks.md")
    heads = list(re.finditer(r"(?m)^(#{2,4}) (.+)$", page))
    sections = {}
    for n, head in enumerate(heads):
        level = len(head.group(1))
        end = next((h.start() for h in heads[n + 1 :] if len(h.group(1)) <= level), len(page))
        anchor = re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", head.group(2).lower())).strip("-")
        sections[anchor] = page[head.start() : end]
    return sections


def test_the_readme_headline_figures_are_the_benchmarks_page_s():
    """Each figure of README's headline table is quoted from the section of
    docs/benchmarks.md its row links to, where its command and setup are: one source for a
    figure quoted twice."""
    readme = text_of(REPO / "README.md")
    sections = benchmark_sections()
    table = readme[readme.index("## Headline figures") :].split("\n## ")[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| measure")]
    assert len(rows) >= 8
    for row in rows:
        cells = row.split("|")[1:-1]
        anchor = re.search(r"\(docs/benchmarks\.md#([\w-]+)\)", cells[0])
        assert anchor and anchor.group(1) in sections, f"{cells[0]}: no link to a section"
        section = sections[anchor.group(1)]
        for value in cells[1:]:
            for number in re.findall(r"\d[\d,]*(?:\.\d+)?", value):
                assert number in section, f"{number} ({cells[0][:50]}) is not in its section"


def test_every_environment_variable_memd_reads_is_documented():
    """Each variable the code reads (``env.get("X")``, ``os.environ.get("X")``, ``env["X"]``,
    ``os.environ.setdefault("X", ...)``) is in the table of configuration.md."""
    code = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "memd").rglob("*.py"))
    # A variable memd sets only when unset (``setdefault``) is one it reads too.
    read = set(
        re.findall(r"(?:env|environ)(?:\.get\(|\.setdefault\(|\[)\s*\"([A-Z][A-Z0-9_]+)\"", code)
    )
    assert {"MEMD_CONFIG", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "CODEX_HOME"} <= read, read
    page = text_of(REPO / "docs" / "configuration.md")
    table = page[page.index("## Environment variables") :].split("\n## ")[0]
    for name in read:
        assert f"`{name}`" in table, f"{name} is read by memd but not in configuration.md"


def test_the_local_model_s_rate_is_the_benchmarks_page_s():
    """A guide that says how fast the local model embeds quotes a rate the Benchmarks page
    measured (with its command), not a figure of its own."""
    rate = r"(\d+(?:\.\d+)?) chunks(?:/s\b| a second)"
    measured = set(re.findall(rate, text_of(REPO / "docs" / "benchmarks.md")))
    quoted = [
        (page, number)
        for page, match in found(rate)
        if not page.endswith(("benchmarks.md", "CHANGELOG.md", "changelog.md"))
        for number in re.findall(r"\d+(?:\.\d+)?", match)
    ]
    assert quoted and all(n in measured for _, n in quoted), (quoted, measured)


def test_a_config_key_quoted_with_a_number_has_that_default():
    """Where a page names a key with its value (`` `search.min_score`, 0.38 ``,
    `` `embeddings.debounce_ms` (2 s) ``), the value is the key's default in the code."""
    import dataclasses

    from memd.configfile import _SECTIONS

    defaults = {
        f"{name}.{f.name}": f.default
        for name, cls in _SECTIONS.items()
        for f in dataclasses.fields(cls)
        if isinstance(f.default, int | float) and not isinstance(f.default, bool)
    }
    quoted = r"`(\w+\.\w+)`[,:]? \(?(?:default )?(\d[\d,]*(?:\.\d+)?)(?: (s|ms)\b)?"
    checked = 0
    for page in PAGES:
        for m in re.finditer(quoted, text_of(page)):
            key, number, unit = m.groups()
            if key not in defaults:
                continue
            value = float(number.replace(",", ""))
            if key.endswith("_ms") and unit == "s":
                value *= 1000
            assert value == defaults[key], f"{page.name}: {key} is {defaults[key]}, not {number}"
            checked += 1
    assert checked >= 8, checked
