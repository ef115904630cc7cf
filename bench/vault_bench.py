"""Known items and paraphrases in an Obsidian-style vault, as Obsidian users write them.

    python bench/vault_bench.py [--modes keyword,auto] [--fillers 4] [--out ...]

Generates (deterministically) a vault under bench/.data/vault-obsidian/: 40 topic notes
written for memd, each with a title, an alias that its text never says, nested tags and
sometimes an empty YAML list item; around them, for every topic, notes that use the
topic's title in a sub-heading and link to it by its alias (``[[Title|alias]]``), daily
notes (``Daily/YYYY-MM-DD.md``) that mention it, and Excalidraw drawings whose data
repeats the title (hidden in a ``%%`` comment, as the plugin writes them).

Asks each topic's title and its alias (known item: is the topic note first?), a question
in other words (paraphrase: first, in the top 3?) and one written to share no content word
with the topic note (unworded), in each mode, with ``min_score`` at its default: a note
the relevance floor drops is a miss (unworded questions also at ``min_score`` 0). Writes
bench/results/vault.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from bench.paraphrase_bench import Words  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402

# Topics written for memd: title, an alias, what the note says, a question in other words
# ("asked"), one sharing none of its words ("unworded"), a nested tag.
TOPICS: list[dict] = json.loads((HERE / "vault_topics.json").read_text())

_FILLER = [
    "Revisited {title} with the reading group; someone asked how {title} fits the course.",
    "Margin note: the lecture on {title} ran long, and the {title} slides need another pass.",
    "Book club drifted to {title} again. Next week: chapter nine and the appendix.",
    "Quick thought on {title} during the commute; write it up properly later.",
]


def make_vault(root: Path, fillers: int, seed: int = 31) -> None:
    """Write the vault (the same seed gives the same files)."""
    rng = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    for folder in ("Notes", "Topics", "Daily", "Drawings", ".obsidian"):
        (root / folder).mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text("{}\n")
    n = 0
    for i, topic in enumerate(TOPICS):
        title, alias, body, tag = topic["title"], topic["alias"], topic["text"], topic["tag"]
        empty = "- \n" if i % 3 == 0 else ""  # an empty list item, as Obsidian leaves one
        (root / "Topics" / f"{title}.md").write_text(
            f"---\naliases:\n{empty}- {alias}\ntags:\n{empty}- {tag}\n---\n# {title}\n\n{body}\n"
        )
        for _ in range(fillers):
            n += 1
            lines = [f"# Reading {n:03d}", "", f"## {title}", ""]
            lines += [rng.choice(_FILLER).format(title=title) for _ in range(3)]
            lines += ["", f"See [[{title}|{alias}]] and ![[figure-{n:03d}.png]].", ""]
            lines += [f"#{tag}/reading", ""]
            (root / "Notes" / f"Reading {n:03d}.md").write_text("\n".join(lines))
        day = f"2025-{1 + i // 28:02d}-{1 + i % 28:02d}"
        (root / "Daily" / f"{day}.md").write_text(
            f"# {day}\n\n- Thought about {title} over lunch.\n- %% private: {title} again %%\n"
        )
        data = json.dumps({"elements": [{"type": "text", "text": title, "angle": 0}] * 20})
        (root / "Drawings" / f"Sketch {i:02d}.excalidraw.md").write_text(
            "---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n"
            "==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n"
            f"# Excalidraw Data\n\n## Text Elements\nsketch of {title.lower()} ^t{i:02d}\n\n"
            f"%%\n## Drawing\n```json\n{data}\n```\n%%\n"
        )


def unworded(root: Path) -> list[tuple[str, str]]:
    """``(question, topic note)`` for each topic whose unworded question shares no content
    word with its note (the rule of bench/paraphrase_bench.py)."""
    words = Words()
    out = []
    for topic in TOPICS:
        title, question = topic["title"], topic["unworded"]
        note = root / "Topics" / f"{title}.md"
        held = set().union(*words.stems(note.read_text()).values())
        if not any(stems & held for stems in words.stems(question).values()):
            out.append((question, f"vault/Topics/{title}.md"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="keyword,auto")
    ap.add_argument("--fillers", type=int, default=4, help="notes per topic that link to it")
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "vault-obsidian")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "vault.json")
    args = ap.parse_args()
    configure_logging("warning")
    modes = args.modes.split(",")
    vault = args.work / "vault"
    make_vault(vault, args.fillers)
    (args.work / "workspace").mkdir(parents=True, exist_ok=True)
    provider = "local" if {"auto", "hybrid", "vector"} & set(modes) else "none"
    config = parse_config(
        {
            "workspace": str(args.work / "workspace"),
            "extra_paths": [str(vault)],
            "state_dir": str(args.work / f"state-{provider}"),
            "embeddings": {"provider": provider, "query_timeout_s": 60},
        },
        env={},
    )

    def note(topic: dict) -> str:
        return f"vault/Topics/{topic['title']}.md"

    known = [(t["title"], note(t)) for t in TOPICS]
    aliases = [(t["alias"], note(t)) for t in TOPICS]
    paraphrases = [(t["asked"], note(t)) for t in TOPICS]
    strict = unworded(vault)
    result: dict = {
        "benchmark": "obsidian-vault",
        "notes": len(list(vault.rglob("*.md"))),
        "topics": len(TOPICS),
        "unworded": len(strict),
        "provider": provider,
    }
    with Memory(config) as memory:
        t = time.perf_counter()
        memory.index()
        memory.embed_all()
        result["index_and_embed_s"] = round(time.perf_counter() - t, 1)
        result["chunks"] = memory.status().chunks
        for mode in modes:
            result[mode] = {
                "title@1": _at(memory, known, mode, 1),
                "alias@1": _at(memory, aliases, mode, 1),
                "paraphrase@1": _at(memory, paraphrases, mode, 1),
                "paraphrase@3": _at(memory, paraphrases, mode, 3),
                "unworded@1": _at(memory, strict, mode, 1),
                "unworded@3": _at(memory, strict, mode, 3),
                # What meaning finds below the floor (an explicit search shows it, marked).
                "unworded@1 min_score 0": _at(memory, strict, mode, 1, 0.0),
                "unworded@3 min_score 0": _at(memory, strict, mode, 3, 0.0),
            }
            print(mode, result[mode])
    write_result(result, args.out)
    return 0


def _at(
    memory: Memory, asked: list[tuple[str, str]], mode: str, k: int, floor: float | None = None
) -> float:
    """The share of questions whose note is among the first ``k`` results (at the default
    ``min_score`` unless ``floor`` is given)."""
    hits = 0
    for question, note in asked:
        options = {} if floor is None else {"min_score": floor}
        results = memory.search(question, mode=mode, max_results=max(k, 3), **options).results
        hits += note in [r.path for r in results[:k]]
    return round(hits / len(asked), 3)


if __name__ == "__main__":
    raise SystemExit(main())
