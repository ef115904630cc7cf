"""Check that two copies of memd's code index the same workspaces into the same rows: every
file's facts, every chunk (lines, heading, text, tokens) and every FTS5 entry (term,
column, position), compared whole.

    python bench/rows_same.py --against DIR [--files 5000] [--no-vault] [WORKSPACE ...]

DIR holds the other ``memd`` package (e.g. ``git archive main memd | tar -x -C DIR``).
Each workspace is copied to a temporary folder and indexed there, keyword only, by each
copy of the code in a process of its own; it is indexed as configured (``vault: auto``)
and again as a vault (every Markdown file a note). Without WORKSPACE arguments: the
generated vault of ``--files`` notes (as bench/index_cpu.py makes it), a generated
Obsidian vault, generated notes of tricky lines (``tricky_workspace``), the fixtures in
bench/fixtures, the tests' data, the docs, and the locomo-dev conversations when
../shared/bench-data is there. Exit status 1 when any workspace's rows differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# ../shared/bench-data beside the repository (a worktree's is one folder further up).
LOCOMO = (
    next(
        (p for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "bench-data").is_dir()),
        ROOT.parent,
    )
    / "shared"
    / "bench-data"
    / "locomo-dev"
)

# What a workspace's index holds, each in a stable order (chunk ids differ by run order:
# an FTS entry names its chunk by file and first line).
DUMPS = {
    "files": "SELECT path, source, date, lines, hash, tags, aliases FROM files ORDER BY path",
    "chunks": "SELECT f.path, c.start_line, c.end_line, c.heading, c.text, c.tokens "
    "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.start_line, c.id",
    "fts": "SELECT f.path, c.start_line, v.term, v.col, v.offset FROM fts_instance v "
    "JOIN chunks c ON c.id = v.doc JOIN files f ON f.id = c.file_id "
    "ORDER BY f.path, c.start_line, v.col, v.offset, v.term",
}


def dump(code: Path, workspace: Path, state: Path, vault: bool) -> dict:
    """Index ``workspace`` with the ``memd`` in ``code``; per table, its row count and a
    digest of its rows."""
    sys.path.insert(0, str(code))
    import os

    from memd.configfile import parse_config
    from memd.log import configure_logging
    from memd.memory import Memory

    configure_logging("error")
    raw = {"workspace": str(workspace), "state_dir": str(state),
           "embeddings": {"provider": "none"}, "vault": vault or "auto"}  # fmt: skip
    memory = Memory(parse_config(raw, env=os.environ))
    memory.index()
    db = memory.db.store.db
    db.execute("CREATE VIRTUAL TABLE temp.fts_instance USING fts5vocab(main, chunks_fts, instance)")
    out = {}
    for name, sql in DUMPS.items():
        digest, count = hashlib.sha256(), 0
        for row in db.execute(sql):
            digest.update(json.dumps(row).encode())
            count += 1
        out[name] = [count, digest.hexdigest()[:16]]
    memory.close()
    return out


def dump_in_child(code: Path, workspace: Path, state: Path, vault: bool) -> dict:
    child = [sys.executable, __file__, "--dump", str(code), "--state", str(state), str(workspace)]
    # In the code's folder, with it on PYTHONPATH: the workers a fork server forks import
    # what it preloaded by its own path, not the child's (bench/index_cpu.py in_code).
    done = subprocess.run([*child, *(["--vault"] if vault else [])], capture_output=True,
                          text=True, check=True, cwd=code,
                          env={**os.environ, "PYTHONPATH": str(code)})  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


# Lines where chunking, token counts and FTS columns meet their edge cases: blank-line
# runs, spaces before line ends, a line of spaces, tabs and \r, contractions, digits,
# Latin letters past ASCII, CJK and emoji, fences, tables, lists, comments, links, tags.
_TRICKY = [
    "", "", "", "   ", "\t", "para line with words.", "trailing spaces   ", "It's what we'll do.",
    "Numbers 1234567 and 3.14", "caf\u00e9 na\u00efve stra\u00dfe \u0142\u00f3d\u017a",
    "\u4e2d\u6587\u7b14\u8bb0\u548c English", "\u65e5\u672c\u8a9e\u306e\u30e1\u30e2",
    "emoji \U0001f600 here", "- item one", "- [ ] task #todo", "1. first", "   nested line",
    "```python", "x = 1  # not a #tag", "```", "| a | b |", "| --- | --- |", "| 1 | 2 |",
    "%% a comment %%", "see [[Other Note|shown]] and [link](#anchor)", "> quoted \u2014 dash",
    "line\r", "\u00a0nbsp start", "--", "...", "word" * 60,
]  # fmt: skip


def tricky_workspace(root: Path, notes: int = 300, seed: int = 7) -> Path:
    """Notes of headings and lines drawn from ``_TRICKY`` (seeded: the same each run)."""
    import random

    rng = random.Random(seed)
    (root / "memory").mkdir(parents=True)
    for n in range(notes):
        lines = [f"# Note {n}"]
        for _ in range(rng.randint(5, 120)):
            if rng.random() < 0.08:
                lines.append(f"{'#' * rng.randint(2, 4)} Part {rng.randint(1, 99)}")
            lines.append(rng.choice(_TRICKY))
        end = rng.choice(["\n", "", "\n\n", "  \n"])
        (root / "memory" / f"2026-01-{n % 28 + 1:02d}-{n}.md").write_text("\n".join(lines) + end)
    (root / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(rng.choices(_TRICKY, k=400)))
    return root


def workspaces(files: int, tmp: Path) -> list[Path]:
    sys.path.insert(0, str(ROOT))
    from bench.index_cpu import COMMON
    from bench.vault import make_obsidian_vault, make_vault

    found = [make_vault(HERE / ".data" / f"vault-{files}-common", files, every_note=COMMON)]
    found.append(make_obsidian_vault(tmp / "obsidian", 500))
    found.append(tricky_workspace(tmp / "tricky"))
    found += sorted(p for p in (HERE / "fixtures").glob("*/*") if p.is_dir())
    found += sorted(p for p in (ROOT / "tests" / "data").glob("*") if p.is_dir())
    found.append(ROOT / "docs")
    if LOCOMO.is_dir():
        found += sorted(p for p in LOCOMO.glob("conv-*") if p.is_dir())
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workspace", nargs="*", type=Path)
    ap.add_argument("--against", type=Path, help="a folder holding the other memd package")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--no-vault", action="store_true", help="index as configured only")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # a child's code folder
    ap.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--vault", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        print(json.dumps(dump(args.dump, args.workspace[0], args.state, args.vault)))
        return 0
    if args.against is None:
        ap.error("--against DIR is needed")
    differ = 0
    with tempfile.TemporaryDirectory(prefix="memd-rows-") as name:
        tmp = Path(name)
        for n, source in enumerate(args.workspace or workspaces(args.files, tmp)):
            copy = tmp / f"ws-{n}"
            shutil.copytree(source, copy, symlinks=True)
            for vault in (False,) if args.no_vault else (False, True):
                mine = dump_in_child(ROOT, copy, tmp / f"a-{n}-{vault}", vault)
                theirs = dump_in_child(args.against.resolve(), copy, tmp / f"b-{n}-{vault}", vault)
                same = mine == theirs
                differ += not same
                counts = " ".join(f"{k}={v[0]}" for k, v in mine.items())
                mode = "vault" if vault else "auto"
                print(f"{'same  ' if same else 'DIFFER'} {mode:5} {counts:40} {source}")
                if not same:
                    print(f"       this: {mine}\n       against: {theirs}")
    print(f"{differ} of the indexes differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
