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

    python bench/vault_bench.py --shapes [--crowd 1.0] [--modes keyword,auto]

The vault shapes Obsidian users point memd at, generated under bench/.data/vault-shapes/
and set as the workspace itself (``.obsidian/`` at its root, no extra_paths): topic notes
(maps of content) among hundreds of notes tagged with the topic's name and saying it
again and again; names with accents, apostrophes, hyphens and underscores typed the way
Obsidian's switcher takes them (folded); stubs (front matter only, or empty); notes that
link to their own headings (``[[#Heading]]``, ``[text](#anchor)``) and other notes' parts,
with code in callouts and list items; long notes whose every section holds the same words;
names a drawing, a canvas or a map of content shares, aliases folded alike, names that are
time words (``Yesterday``) or signs alone (``$?``, ``C++``), as real vaults have them.
Reports, in each mode, name @1 and alias @1, stubs found by name and by alias (and listing
the note that links to them), tags the notes never wrote (from links, anchors, code), and
how many results in a top 10 repeat a note already shown (with and without
``all_chunks``). Writes bench/results/vault-shapes.json.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from memd.search.request import SearchRequest  # noqa: E402

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


# Topic notes and how many notes carry their tag and say their name (--crowd scales these).
_CROWDS = [
    ("Database", "DB", "database", 300),
    ("Networking", "Net stack", "networking", 660),
    ("Deep Learning", "Neural nets", "deep-learning", 200),
    ("Philosophy", "Love of wisdom", "philosophy", 150),
    ("Gardening", "Allotment", "gardening", 120),
    ("Statistics", "Stats", "statistics", 90),
]
# Names as written, and as typed: folded as Obsidian's switcher folds them.
_TYPED = [
    ("Königsberg", "Konigsberg"),
    ("Postel's Law", "postels law"),
    ("Café Society", "cafe society"),
    ("Gödel's Incompleteness", "godels incompleteness"),
    ("São Paulo", "sao paulo"),
    ("Zürich Trip", "zurich trip"),
    ("self_hosting", "self hosting"),
    ("Non-Violent Communication", "non violent communication"),
    ("Ångström", "angstrom"),
    ("Crème Brûlée", "creme brulee"),
    ("Murphy’s Law", "murphy's law"),
    ("e-mail_etiquette", "email etiquette"),
]
# Names real vaults share between notes once folded, or give a drawing or a canvas too:
# the note Obsidian lists under the name as typed is the one meant.
_SHARED = ["Virtualization", "Recipe manager", "Publish sites", "Reading list", "Homelab"]
# Names that are also time words, and names of signs alone (real vaults have both).
_ODD_NAMES = ["Yesterday", "Tomorrow", "Last Week", "Next Friday", "Christmas", "On This Day",
              "$?", "==", "C++", "C#", "C"]  # fmt: skip
_CROWD_LINES = [
    "Notes on {name}: the {name} reading list and what {name} means here.",
    "Another {name} session; the {name} questions from the group, in order.",
    "A {name} example worked through, then a second {name} case for comparison.",
]
_SYLLABLES = "ka ve lo ran ti mu sor pe dan quel bri fo nax ul zer ith ga mo".split()


def _pseudo(rng: random.Random, parts: int, used: set[str]) -> str:
    """A made-up word not in ``used`` (then added): no other note of the vault holds it."""
    while (word := "".join(rng.choice(_SYLLABLES) for _ in range(parts))) in used:
        pass
    used.add(word)
    return word


def make_shapes(root: Path, crowd: float, seed: int = 42) -> dict:
    """Write the shapes vault; returns what to ask of it: ``names``, ``aliases`` and
    ``stubs`` (question, note), ``tags`` (note: tags written), ``repeats`` (questions)."""
    rng = random.Random(seed)
    used: set[str] = set()
    if root.exists():
        shutil.rmtree(root)
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text("{}\n")
    asks: dict = {"names": [], "aliases": [], "stubs": [], "stub_aliases": [], "tags": {},
                  "repeats": [], "stub_links": []}  # fmt: skip
    for name, alias, tag, count in _CROWDS:
        folder = root / "Crowd" / tag
        folder.mkdir(parents=True)
        members = []
        for i in range(max(1, round(count * crowd))):
            title = f"{name} note {i:03d} {_pseudo(rng, 3, used)}"
            members.append(title)
            lines = ["---", f"tags: [{tag}]", "---", f"# {title}", "", f"## {name}", ""]
            lines += [rng.choice(_CROWD_LINES).format(name=name) for _ in range(3)]
            lines += ["", f"#{tag}/detail", ""]
            (folder / f"{title}.md").write_text("\n".join(lines))
            asks["tags"][f"Crowd/{tag}/{title}.md"] = {tag, f"{tag}/detail"}
        links = "\n".join(f"- [[{m}]]" for m in members[:25])
        (root / "Topics").mkdir(exist_ok=True)
        (root / "Topics" / f"{name}.md").write_text(
            f"---\naliases: [{alias}]\n---\nWhere the notes start.\n\n{links}\n"
        )
        asks["names"].append((name, f"Topics/{name}.md"))
        asks["aliases"].append((alias, f"Topics/{name}.md"))
        asks["repeats"].append(name.lower())
    (root / "Places").mkdir()
    for written, typed in _TYPED:
        (root / "Places" / f"{written}.md").write_text(
            f"# {written}\n\nWhat I keep about {_pseudo(rng, 3, used)}, and a walk past it.\n"
        )
        asks["names"].append((typed, f"Places/{written}.md"))
    _shared_names(root, asks)
    (root / "Stubs").mkdir()
    for i in range(40):
        name = _pseudo(rng, 3, used).capitalize()
        alias = _pseudo(rng, 3, used)
        kind = i % 4
        text = {
            0: f"---\naliases: [{alias}]\ntags: [term]\n---\n",
            1: f"---\naliases:\n  - {alias}\n---\n",
            2: "",
            3: "---\ntags: [term]\n---\n%% to write %%\n",
        }[kind]
        (root / "Stubs" / f"{name}.md").write_text(text)
        asks["stubs"].append((name, f"Stubs/{name}.md"))
        if kind in (0, 1):
            asks["stub_aliases"].append((alias, f"Stubs/{name}.md"))
            asks["aliases"].append((alias, f"Stubs/{name}.md"))
        asks["tags"][f"Stubs/{name}.md"] = {"term"} if kind in (0, 3) else set()
        # Every other stub is linked to from the glossary; its result says so.
        asks["stub_links"].append((name, f"Stubs/{name}.md", "Glossary.md" if i % 2 else None))
    glossary = [f"- [[{name}]]" for name, _, linked in asks["stub_links"] if linked]
    (root / "Glossary.md").write_text("# Glossary\n\n" + "\n".join(glossary) + "\n")
    (root / "Castles").mkdir()
    for i in range(60):
        title = f"Castle {i:02d} {_pseudo(rng, 3, used)}"
        (root / "Castles" / f"{title}.md").write_text(
            f"---\ntags: [castle]\n---\n# {title}\n\nSee [[#The Courtyard]], "
            "[[#Adding Towers|towers]], [the gate](#the-gate) and [[Königsberg#Bridges]]; <https://example.org/#top>.\n"
            f"Built of #stone.\n\n## The Courtyard\n\nA well.\n\n## The Gate\n\nOak.\n"
            # code in a callout and in a list item, a link whose address holds parentheses
            "\n> [!example] Style\n> ```css\n> .moat { color: #0000ff; }\n> ```\n\n"
            "- Paint\n  ```css\n  .wall { color: #ff0000; }\n  ```\n\n"
            "[Keeps](https://en.wikipedia.org/wiki/Keep_(castle)#/media/Tower) too.\n"
        )
        asks["tags"][f"Castles/{title}.md"] = {"castle", "stone"}
    (root / "Long").mkdir()
    section = "## Part {n}\n\nThe plugin loads stage {n}; the plugin cache then waits.\n" + (
        "Words about weather, gardens and the long road home. " * 45
    )
    for i in range(20):
        title = f"Plugin guide {i:02d}"
        (root / "Long" / f"{title}.md").write_text(
            f"---\ntags: [placeholder]\n---\n# {title}\n\n"
            + "\n\n".join(section.format(n=n) for n in range(8))
        )
        asks["tags"][f"Long/{title}.md"] = {"placeholder"}
    asks["repeats"] += ["plugin", "plugin cache", "weather gardens", "stage loads"]
    return asks


def _shared_names(root: Path, asks: dict) -> None:
    """Notes whose name a drawing, a canvas or a map of content (``🗂️ Name``) shares once
    folded; aliases as typed beside an alias folded alike (``Name+`` and ``Name``); names
    that are time words or signs alone."""
    for folder in ("Shared", "Drawings", "Boards", "Maps", "Plugins", "Odd"):
        (root / folder).mkdir(exist_ok=True)
    for i, name in enumerate(_SHARED):
        (root / "Shared" / f"{name}.md").write_text(f"# {name}\n\nWhat {name} holds.\n")
        (root / "Drawings" / f"{name}.excalidraw.md").write_text(
            "---\nexcalidraw-plugin: parsed\n---\n# Excalidraw Data\n\n## Text Elements\n"
            f"{name} ^a1\n\n%%\n## Drawing\n```json\n{{}}\n```\n%%\n"
        )
        node = {"id": "n", "type": "text", "text": name, "x": 0, "y": 0, "width": 9, "height": 9}
        (root / "Boards" / f"{name}.canvas").write_text(json.dumps({"nodes": [node]}) + "\n")
        (root / "Maps" / f"🗂️ {name}.md").write_text(f"- [[{name}]]\n")
        asks["names"].append((name, f"Shared/{name}.md"))
        plain, plus = f"{name} tool", f"{name} tool+"
        (root / "Plugins" / f"{name} tool.md").write_text(f"---\naliases: [{plain}]\n---\nA.\n")
        other = f"{name} {'plus' if i % 2 else 'version two'}.md"  # before it, or after
        (root / "Plugins" / other).write_text(f"---\naliases: [{plus}]\n---\nB.\n")
        asks["aliases"].append((plus, f"Plugins/{other}"))
    for name in _ODD_NAMES:
        (root / "Odd" / f"{name}.md").write_text(f"What the {name} note holds.\n")
        asks["names"].append((name, f"Odd/{name}.md"))


def shapes(args: argparse.Namespace) -> int:
    """The shapes vault set as the workspace: names, aliases, stubs, tags and repeats."""
    modes = args.modes.split(",")
    vault = args.work.parent / "vault-shapes" / "vault"
    asks = make_shapes(vault, args.crowd)
    provider = "local" if {"auto", "hybrid", "vector"} & set(modes) else "none"
    where = {"workspace": str(vault)}
    if args.extra:  # the vault beside an empty workspace (what worked before a vault could be one)
        (vault.parent / "workspace").mkdir(exist_ok=True)
        where = {"workspace": str(vault.parent / "workspace"), "extra_paths": [str(vault)]}
        asks = _prefixed(asks, "vault/")
    config = parse_config(
        {
            **where,
            "state_dir": str(vault.parent / f"state-{provider}{'-extra' if args.extra else ''}"),
            "embeddings": {"provider": provider, "query_timeout_s": 60},
        },
        env={},
    )
    notes = [p for p in vault.rglob("*.md") if ".obsidian" not in p.parts]
    result: dict = {"benchmark": "obsidian-vault-shapes", "notes": len(notes),
                    "provider": provider}  # fmt: skip
    with Memory(config) as memory:
        _index(memory, result)
        result["indexed_files"] = memory.status().files
        store = memory.db.store
        stray = 0
        for path, written in asks["tags"].items():
            meta = store.file_meta(path)
            stray += len(set(meta.tags) - written) if meta else 0
        result["tags from links"] = stray
        for mode in modes:
            found = {
                "name@1": _at(memory, asks["names"], mode, 1),
                "alias@1": _at(memory, asks["aliases"], mode, 1),
                "stubs by name@1": _at(memory, asks["stubs"], mode, 1),
                "stubs by alias@1": _at(memory, asks["stub_aliases"], mode, 1),
                "stubs listing what links to them": _linked(memory, asks["stub_links"], mode),
                "repeated notes in top 10": _repeats(memory, asks["repeats"], mode, False),
                "repeated notes in top 10, all_chunks": _repeats(
                    memory, asks["repeats"], mode, True
                ),
            }
            tagged = memory.search("plugin", mode=mode, tags=["placeholder"], max_results=4)
            found["files in '--tag placeholder plugin' top 4"] = len(
                {r.path for r in tagged.results}
            )
            result[mode] = found
            print(mode, found)
    result["vault"] = "extra_paths" if args.extra else "workspace"
    write_result(result, args.out.with_name(f"vault-shapes{'-extra' if args.extra else ''}.json"))
    return 0


def _index(memory: Memory, result: dict) -> None:
    """Index and embed everything, and say how long it took."""
    t = time.perf_counter()
    memory.index()
    memory.embed_all()
    result["index_and_embed_s"] = round(time.perf_counter() - t, 1)


def _prefixed(asks: dict, prefix: str) -> dict:
    """``asks`` with every note's path under ``prefix``."""
    pairs = ("names", "aliases", "stubs", "stub_aliases")
    out = {key: [(q, prefix + note) for q, note in asks[key]] for key in pairs}
    out["tags"] = {prefix + path: tags for path, tags in asks["tags"].items()}
    out["repeats"] = asks["repeats"]
    out["stub_links"] = [
        (q, prefix + note, linked and prefix + linked) for q, note, linked in asks["stub_links"]
    ]
    return out


def _repeats(memory: Memory, queries: list[str], mode: str, every: bool) -> int | None:
    """Results in the top 10 of each query whose note an earlier result already showed
    (None: this memd cannot be asked for every chunk)."""
    if every and "all_chunks" not in {f.name for f in dataclasses.fields(SearchRequest)}:
        return None
    repeats = 0
    for query in queries:
        options = {"all_chunks": True} if every else {}
        found = memory.search(query, mode=mode, max_results=10, min_score=0, **options).results
        repeats += len(found) - len({r.path for r in found})
    return repeats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="keyword,auto")
    ap.add_argument("--shapes", action="store_true", help="the vault shapes, set as workspace")
    ap.add_argument("--crowd", type=float, default=1.0, help="scale of the tagged crowds")
    ap.add_argument("--extra", action="store_true", help="--shapes: the vault in extra_paths")
    ap.add_argument("--fillers", type=int, default=4, help="notes per topic that link to it")
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "vault-obsidian")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "vault.json")
    args = ap.parse_args()
    configure_logging("warning")
    if args.shapes:
        return shapes(args)
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
        _index(memory, result)
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


def _linked(memory: Memory, asked: list[tuple[str, str, str | None]], mode: str) -> float:
    """The share of stubs whose result lists the note that links to it (and nothing when
    none does)."""
    right = 0
    for question, note, linking in asked:
        top = memory.search(question, mode=mode, max_results=3).results[:1]
        if top and top[0].path == note:
            linked = {b.split("#")[0] for b in top[0].backlinks or ()}
            right += linked == ({linking} if linking else set())
    return round(right / len(asked), 3)


if __name__ == "__main__":
    raise SystemExit(main())
