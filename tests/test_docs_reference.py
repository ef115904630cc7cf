"""The docs site: generated references match the code, every page is in the navigation and
README's page list, and the site builds strictly with nothing fetched from elsewhere."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).parent.parent
DOCS = REPO / "docs"


def generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_references_match_the_code():
    for path, text in generator().pages().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} differs from the code: run python docs/gen_reference.py"
        )


def test_check_mode_names_a_page_that_drifted(tmp_path, monkeypatch, capsys):
    gen = generator()
    stale = tmp_path / "cli.md"
    stale.write_text("# hand-edited\n")
    monkeypatch.setattr(gen, "CLI_PAGE", stale)
    assert gen.main(["--check"]) == 1
    assert stale.read_text() == "# hand-edited\n"  # --check writes nothing
    assert "cli.md differs from the code" in capsys.readouterr().out


def test_every_config_key_and_command_is_in_the_references():
    from memd.cli.parser import make_parser
    from memd.config import Config
    from memd.configfile import _SECTIONS, _TOP_LEVEL

    config = (DOCS / "reference" / "config.md").read_text()
    for key in _TOP_LEVEL:
        assert f"| `{key}` |" in config
    for name, cls in _SECTIONS.items():
        for field in cls.__dataclass_fields__:
            assert f"| `{name}.{field}` |" in config, f"{name}.{field}"
    assert set(_SECTIONS) <= set(Config.__dataclass_fields__)
    cli = (DOCS / "reference" / "cli.md").read_text()
    for command, parser in make_parser().commands.items():
        assert f"## memd {command}\n" in cli
        for option in parser.options:
            if option.startswith("--") and option not in ("--help", "--host-name"):
                assert option in cli, f"memd {command} {option}"


def nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in nav_pages(item)]
    return [p for value in node.values() for p in nav_pages(value)]


def test_every_page_is_in_the_navigation_and_in_the_readme():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    nav = nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    readme = (REPO / "README.md").read_text()
    listed = set(re.findall(r"\]\(docs/([\w/.-]+\.md)\)", readme))
    assert set(pages) - {"index.md"} <= listed
    assert len(readme.splitlines()) <= 200


def test_the_site_builds_strictly_and_fetches_nothing(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    site = tmp_path / "site"
    out = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # What a browser loads: stylesheets, scripts, images, fonts. Links to read are fine.
    loaded = re.compile(r"<(?:link|script|img|source|iframe)\b[^>]*(?:src|href)=\"(https?:[^\"]*)")
    fonts = re.compile(r"fonts\.googleapis|fonts\.gstatic|@import\s+url\(\s*[\"']?https?:")
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not loaded.findall(text), (page, loaded.findall(text))
        assert not fonts.search(text), page
    for css in site.rglob("*.css"):
        assert not fonts.search(css.read_text(encoding="utf-8")), css
    # A long code line wraps instead of hiding its end behind a scroll bar (the
    # `.venv/bin/memd serve` of an install line): every page loads the stylesheet that
    # wraps code, and each line of a block is a span of its own, which it indents when wrapped.
    wrap = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"pre > code \{[^}]*white-space: pre-wrap", wrap)
    assert re.search(r"span\[id\^=\"__span-\"\] \{[^}]*text-indent: -", wrap)
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "<pre" in text and page.parent != site / "404.html":
            assert "stylesheets/extra.css" in text and 'id="__span-0-1"' in text, page
