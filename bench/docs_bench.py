"""What a stranger meets in the docs, counted: the figures the docs were first judged by.

    python bench/docs_bench.py [--out bench/results/docs.json]

Reads README.md, CHANGELOG.md, mkdocs.yml and every page under docs/ as they are in the
checkout (the generated references included, as a reader sees them), and the code they
describe: the socket's method table, the library's calls, the environment variables the
code reads and the config keys. Each count is one a reader would notice: a page without a
``##`` section, a paragraph of 150 words or more, project-internal talk, a figure quoted
twice with two values, a method or call on no reference page. Nothing is run but
``pytest --collect-only`` (for the test count the Development page quotes).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from bench.common import write_result  # noqa: E402

DOCS = REPO / "docs"
# The width of a code block's column, in characters, on a desktop window (the theme's
# widest content column): a longer line is wrapped by docs/stylesheets/extra.css.
COLUMN = 77
MACHINE_TALK = r"\b[Tt]his (?:[\w-]+ )?machine\b|\b(?:run|ran|passed)\w* here\b"
# ``pip install memd`` (or with extras), not ``'memd[local] @ git+https://…'``.
PIP_MEMD = r"pip3? install ['\"]?memd(?:\[[\w,]+\])?['\"]?(?=[\s`)]|$)(?!\s*@)"


def prose_blocks(text: str) -> list[str]:
    """Paragraphs and list items, without code blocks and table rows."""
    text = re.sub(r"(?ms)^\s*```.*?^\s*```", "", text)
    out = []
    for block in re.split(r"\n\s*\n", text):
        kept = [line for line in block.splitlines() if not line.lstrip().startswith("|")]
        out += re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", "\n".join(kept))
    return out


def included(page: Path) -> str:
    """A page's text as the site shows it: a ``--8<-- "FILE"`` line replaced by the file."""
    return re.sub(
        r'(?m)^--8<-- "([^"]+)"$',
        lambda m: (REPO / m.group(1)).read_text(encoding="utf-8"),
        page.read_text(encoding="utf-8"),
    )


def code_lines(text: str) -> list[str]:
    return [
        line
        for block in re.findall(r"(?ms)^\s*```[^\n]*\n(.*?)^\s*```", text)
        for line in block.splitlines()
    ]


def nav_entries(nav: list) -> int:
    return sum(nav_entries(v) if isinstance(v, list) else 1 for e in nav for v in e.values())


def measure() -> dict:
    pages = {p: included(p) for p in [REPO / "README.md", *DOCS.rglob("*.md")]}
    user = {**pages, REPO / "CHANGELOG.md": (REPO / "CHANGELOG.md").read_text(encoding="utf-8")}
    written = {p: t for p, t in pages.items() if "reference" not in p.parts}
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    everywhere = "\n".join(user.values())

    def count(pattern: str) -> int:
        return len(re.findall(pattern, everywhere))

    from memd.configfile import _SECTIONS
    from memd.serve.methods import METHODS
    from memd.store.schema import SCHEMA_VERSION

    protocol = (DOCS / "reference" / "protocol.md").read_text(encoding="utf-8")
    library = (DOCS / "reference" / "library.md").read_text(encoding="utf-8")
    socket_page = pages[DOCS / "socket.md"]
    sys.path.insert(0, str(DOCS))
    from memd.memory import Memory

    code = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "memd").rglob("*.py"))
    env_read = set(
        re.findall(r"(?:env|environ)(?:\.get\(|\.setdefault\(|\[)\s*\"([A-Z][A-Z0-9_]+)\"", code)
    )
    config_md = pages[DOCS / "configuration.md"]
    config_yaml = (REPO / "config.yaml").read_text(encoding="utf-8")
    keys = [(n, f.name) for n, cls in _SECTIONS.items() for f in dataclasses.fields(cls)]
    schema_quoted = re.findall(r"schema (?:is )?(?:version |v)(\d+)", everywhere)
    vault = [
        c
        for s in re.split(r"(?<=[.;])\s", everywhere)
        if re.search(r"5,000[- ](?:daily )?notes?\b", s)
        for c in re.findall(r"(\d{2},\d{3}) chunks", s)
    ]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    ).stdout  # fmt: skip
    said = re.search(r"over ([\d,]+) tests", pages[DOCS / "development.md"])
    wraps = (DOCS / "stylesheets" / "extra.css").exists()
    wide = sum(len(line) > COLUMN for t in pages.values() for line in code_lines(t))
    return {
        "pages": len(pages),
        "pages_without_a_section": sum(not re.search(r"(?m)^## ", t) for t in written.values()),
        "paragraphs_of_150_words_or_more": sum(
            len(b.split()) >= 150 for t in written.values() for b in prose_blocks(t)
        ),
        "issue_references": count(r"\b[Ii]ssues? \d+|\b[Tt]he issue\b"),
        "spec_references": count(r"\bSPEC\b"),
        "this_machine_talk": count(MACHINE_TALK),
        "pip_install_memd_lines": len(
            [
                line
                for line in everywhere.splitlines()
                if re.search(PIP_MEMD, line) and "another project" not in line
            ]
        ),
        "nav_top_level_entries": len(site["nav"]),
        "nav_pages": nav_entries(site["nav"]),
        "socket_methods": len(METHODS),
        "socket_methods_not_on_the_protocol_page": sum(
            f"\n## {m}\n" not in protocol for m in METHODS
        ),
        "socket_methods_not_named_on_socket_md": sum(f"`{m}`" not in socket_page for m in METHODS),
        "library_calls_not_on_the_library_page": sum(
            not re.search(rf"(?m)^\| `(?:memory\.)?{n}\b", library)
            for n in vars(Memory)
            if not n.startswith("_")
        ),
        "env_vars_read_not_documented": sorted(n for n in env_read if f"`{n}`" not in config_md),
        "config_keys_not_in_config_yaml": [
            f"{n}.{k}" for n, k in keys if not re.search(rf"(?m)^#?\s+{k}:", config_yaml)
        ],
        "schema_versions_quoted": sorted({int(v) for v in schema_quoted}),
        "schema_version_of_the_code": SCHEMA_VERSION,
        "vault_chunk_counts_quoted": sorted(set(vault)),
        "tests_said": int(said.group(1).replace(",", "")) if said else None,
        "tests_collected": int(re.search(r"(\d+) tests? collected", collected).group(1)),
        "code_lines_wider_than_the_column": wide,
        "code_lines_hidden_behind_a_scroll_bar": 0 if wraps else wide,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "docs.json")
    write_result({"benchmark": "docs", **measure()}, ap.parse_args().out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
