"""Session starts on workspaces written as agents and people write them: what the agent
is shown, checked against each workspace's key.

    python bench/session_start_bench.py [--out FILE.json] [--show]

Workspaces: bench/fixtures/session-starts (a German practice, a freelance developer's
terse notes, a reporter's desk; KEY.json) and the review's bench/fixtures/agent-workspaces
(written by another author; its KEY.json names the rules), and bench/fixtures/game-studio
(a game studio's agent, its session dumps and brief). For each, ``memd context`` as
of the day after its last note (or the key's ``now``), from a keyword index, and:

- every line the owner marked as a rule (the key's ``critical``) is shown;
- nothing is shown twice (no line cited twice, no text said twice);
- no orphan: a nested MEMORY.md bullet comes after its parent;
- no cut: each shown line ends as the note's line ends (a flushed turns' summary aside);
- flushed turns are at most a quarter of "Recent notes";
- what the notes name still to come (the key's ``coming``) is shown.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from memd.agent.context import context  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.memory import Memory  # noqa: E402

FIXTURES = HERE / "fixtures"
_CITED = re.compile(r"\s\(((?:[^()]+?)#L(\d+)(?:-L(\d+))?)\)\s*$")
_DATED = re.compile(r"^\[[^\]]+\]\s*(?:open task:\s*)?")
_TURNS = "in sessions, asked:"


def workspaces() -> list[tuple[str, Path, dict]]:
    """Each workspace's name, folder and key (``critical``, ``coming``, ``now``)."""
    out = []
    for group in ("session-starts", "agent-workspaces", "game-studio"):
        keys = json.loads((FIXTURES / group / "KEY.json").read_text())
        for name, key in keys.items():
            root = FIXTURES / group / name
            if "now" not in key:  # the day after its last note
                last = max(p.stem[:10] for p in (root / "memory").glob("20*.md"))
                key = {**key, "now": (dt.date.fromisoformat(last) + dt.timedelta(1)).isoformat()}
            out.append((name, root, key))
    return out


def shown(text: str) -> list[tuple[str, int, int, str, str]]:
    """Each cited line: its part, file, first and last line, and text without the date."""
    out, part = [], ""
    for line in text.splitlines():
        if line and not line.startswith((" ", "-")) and line.endswith(":"):
            part = line[:-1]
        if line.lstrip().startswith("- ") and (m := _CITED.search(line)):
            first = int(m.group(2))
            body = _DATED.sub("", line.lstrip()[2 : m.start() - (len(line) - len(line.lstrip()))])
            out.append((part, m.group(1).split("#")[0], first, int(m.group(3) or first), body))
    return out


def parent_line(lines: list[str], n: int) -> int | None:
    """The 1-based line of the bullet a nested bullet at ``n`` belongs to."""
    raw = lines[n - 1]
    indent = len(raw) - len(raw.lstrip())
    if indent == 0 or not raw.lstrip().startswith(("- ", "* ")):
        return None
    for k in range(n - 2, -1, -1):
        if lines[k].strip() and len(lines[k]) - len(lines[k].lstrip()) < indent:
            return k + 1
    return None


def check(root: Path, key: dict, text: str) -> dict:
    """Each check's failures for one workspace's session start."""
    got = shown(text)
    files: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in files:
            files[path] = (root / path).read_text().splitlines()
        return files[path]

    cited = {(path, n) for _, path, first, last, _ in got for n in range(first, last + 1)}
    fails: dict[str, list] = {}
    fails["critical"] = [c for c in key.get("critical", [])
                         if ("MEMORY.md", int(c.split("#L")[1])) not in cited]  # fmt: skip
    starts = [(path, first) for _, path, first, _, _ in got]
    bodies = [body for *_, body in got]
    fails["twice"] = sorted({f"{p}#L{n}" for p, n in starts if starts.count((p, n)) > 1}
                            | {b for b in bodies if bodies.count(b) > 1})  # fmt: skip
    fails["orphan"] = []
    for _, path, first, _, _ in got:
        parent = parent_line(lines(path), first)
        if path == "MEMORY.md" and parent is not None:
            where = text.find(f"({path}#L{parent}")
            if where < 0 or where > text.find(f"({path}#L{first}"):
                fails["orphan"].append(f"{path}#L{first}")
    fails["cut"] = []
    for _, path, first, last, body in got:
        if body.startswith(_TURNS):
            continue
        end = lines(path)[last - 1].strip()[-12:]
        if not body.rstrip().endswith(end):
            fails["cut"].append(f"{path}#L{first}: {body[-40:]!r} / {end!r}")
    recent = [g for g in got if g[0] == "Recent notes" and not g[4].startswith(("|", "```"))]
    turns = [g for g in recent if g[4].startswith(_TURNS)]
    fails["turns_over_a_quarter"] = (
        [f"{len(turns)} of {len(recent)}"] if 4 * len(turns) > len(recent) else []
    )
    flat = " ".join(text.split())
    fails["coming_not_shown"] = [c for c in key.get("coming", []) if c not in flat]
    return fails


def evaluate(show: bool = False) -> dict:
    out = {}
    for name, root, key in workspaces():
        with tempfile.TemporaryDirectory(prefix="memd-starts-") as tmp:
            # A copy whose files last changed on the key's day, as if it were today there:
            # an undated note (a brief) is read for what is coming up by when it changed.
            shutil.copytree(root, Path(tmp) / name)
            noon = dt.datetime.fromisoformat(key["now"]).replace(hour=12).timestamp()
            for path in (Path(tmp) / name).rglob("*.md"):
                os.utime(path, (noon, noon))
            config = parse_config({"workspace": str(Path(tmp) / name),
                                   "state_dir": str(Path(tmp) / "state"),
                                   "embeddings": {"provider": "none"}})  # fmt: skip
            with Memory(config) as memory:
                memory.index()
                today = dt.date.fromisoformat(key["now"])
                said = context(memory, cwd=str(Path(tmp) / name), today=today)
        if show:
            print(f"== {name} ({key['now']})\n{said.text}")
        fails = check(root, key, said.text)
        out[name] = {"tokens": said.tokens, **{k: v for k, v in fails.items() if v},
                     "passed": not any(fails.values())}  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "session-starts.json")
    ap.add_argument("--show", action="store_true", help="print each session start")
    args = ap.parse_args()
    found = evaluate(args.show)
    result = {"benchmark": "session_starts", **found,
              "passed": f"{sum(w['passed'] for w in found.values())}/{len(found)}"}  # fmt: skip
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
