"""A real Obsidian vault (not in this repository) set as the workspace, judged as its user would.

    python bench/vault_real_bench.py VAULT [--name NAME] [--sample 500] [--mode keyword]
        [--embeddings "{provider: local}" --mode auto --state DIR]

Indexes the folder with ``memd index`` (timed, a new state folder), starts a real ``memd
serve`` on it and asks over its socket. What is right comes from a reading of the vault
written here, apart from memd's: a note's name is its file name, aliases and tags are
read from the front matter with PyYAML and from ``#tags`` outside code and comments, a
stub is a note with nothing but front matter and comments, a link is ``[[Target]]``.
Names and aliases are compared folded (case, accents, apostrophes, hyphens and
underscores), so a query several notes answer to is right for any of them.

Reports: notes, stubs; topic name @1 (notes named after the vault's 60 most-used tags and
its 30 most linked-to notes, asked by name); name @1 (a sample of notes, asked by name);
names typed without their accents or apostrophes @1; alias @1 (every alias); stubs found
by name @1 and, of those linked to, how many list what links to them; tags memd stored that
the note never wrote; notes found by ``--tag`` with a word of a link to a heading; notes
repeated in a top 10 (the top tags asked as words, with and without their tag, and the
topic notes' names), with and without ``all_chunks``. Writes
bench/results/vault-real-NAME.json (-MODE after NAME but for keyword).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import DaemonUnavailable  # noqa: E402

_FRONT = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_TAG = re.compile(r"(?:^|(?<=[\s,;:!?(]))#([^\s#\[\](),;:!?\"'`.{}|<>]+)", re.M)


def fold(text: str) -> str:
    """A name as Obsidian's switcher compares it."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"['’`]", "", text)
    return re.sub(r"[-_\s]+", " ", text).strip()


def typed(text: str) -> str:
    """A name as typed without its accents or apostrophes."""
    text = unicodedata.normalize("NFKD", text)
    return re.sub(r"['’]", "", "".join(c for c in text if not unicodedata.combining(c)))


def _listed(value: object) -> list[str]:
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, list):  # a mapping in the list is no name, as Obsidian reads it
        return [str(v) for v in value if isinstance(v, str | int | float) and str(v).strip()]
    return []


def read_vault(root: Path) -> dict[str, dict]:
    """Each note's name, aliases, tags, links and whether it is a stub, by vault path."""
    notes = {}
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if any(p.startswith(".") for p in rel.parts) or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        meta, body = {}, text
        if m := _FRONT.match(text):
            body = text[m.end() :]
            try:
                meta = yaml.safe_load(m.group(1)) or {}
            except yaml.YAMLError:
                meta = {}
            meta = meta if isinstance(meta, dict) else {}
        aliases = meta.get("aliases") or meta.get("alias")
        aliases = [aliases] if isinstance(aliases, str) else _listed(aliases)
        prose = re.sub(r"%%.*?%%", "", body, flags=re.S)
        bare = re.sub(r"`[^`\n]*`", "", re.sub(r"^\s*(?:>\s*)*(`{3,}|~{3,}).*?^\s*(?:>\s*)*\1",
                                               "", prose, flags=re.S | re.M))  # fmt: skip
        tags = [t.lstrip("#") for t in _listed(meta.get("tags") or meta.get("tag"))]
        tags += [t for t in _TAG.findall(bare) if not t.isdigit()]
        notes[rel.as_posix()] = {
            "name": path.name[:-3],
            "aliases": [a for a in aliases if fold(a)],
            "tags": tags,
            "stub": not prose.strip(),
            "links": [t.strip() for t in re.findall(r"\[\[([^\]|#^]*)", bare) if t.strip()],
            "heading_links": re.findall(r"\[\[#([^\]|]+)", bare)
            + re.findall(r"\]\(#([^)]+)\)", bare),
            "drawing": path.name.endswith(".excalidraw.md"),
        }
    return notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--name", help="the vault's name in the results (default: its folder's)")
    ap.add_argument("--sample", type=int, default=500, help="notes asked by name")
    ap.add_argument("--mode", default="keyword", help="keyword, or auto with a model set up")
    ap.add_argument("--embeddings", default="{provider: none}", help="the embeddings section")
    ap.add_argument("--state", type=Path, help="a state folder kept between runs (vectors made"
                    " once; the index time is then an update's)")  # fmt: skip
    args = ap.parse_args()
    root = args.vault.resolve()
    name = args.name or root.name
    notes = read_vault(root)
    by_name: dict[str, set[str]] = collections.defaultdict(set)
    for rel, n in notes.items():
        for key in (n["name"], *n["aliases"]):
            by_name[fold(key)].add(rel)
    linked: dict[str, set[str]] = collections.defaultdict(set)
    for rel, n in notes.items():
        for target in n["links"]:
            for dest in by_name.get(fold(target.split("/")[-1].removesuffix(".md")), ()):
                if dest != rel:
                    linked[dest].add(rel)
    tag_count: collections.Counter = collections.Counter()
    for n in notes.values():
        tags = {t.casefold() for t in n["tags"]}
        tag_count.update(
            tags | {t.rsplit("/", i + 1)[0] for t in tags for i in range(t.count("/"))}
        )

    stubs = sum(n["stub"] for n in notes.values())
    result: dict = {"benchmark": "obsidian-vault-real", "vault": name, "mode": args.mode,
                    "notes": len(notes), "stubs": stubs}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memd-real-") as tmp:
        state, sock = args.state or Path(tmp) / "state", Path(tmp) / "memd.sock"
        config = Path(tmp) / "config.yaml"
        config.write_text(f"workspace: {root}\nstate_dir: {state}\nsocket: {sock}\n"
                          f"embeddings: {args.embeddings}\n")  # fmt: skip
        memd = [sys.executable, "-m", "memd", "--config", str(config)]
        env = {**os.environ, "HOME": tmp}
        t = time.perf_counter()
        out = subprocess.run([*memd, "index"], capture_output=True, text=True, env=env,
                             timeout=3600)  # fmt: skip
        result["index_s"] = round(time.perf_counter() - t, 2)
        result["index said"] = (out.stdout or out.stderr).strip().splitlines()[-1]
        daemon = subprocess.Popen([*memd, "serve"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            client = _connect(sock)
            _judge(client, notes, by_name, linked, tag_count, args, result)
            client.close()
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
        result["tags never written"] = _stray(state / "index-default.sqlite", notes)
    suffix = "" if args.mode == "keyword" else f"-{args.mode}"
    write_result(result, HERE / "results" / f"vault-real-{name}{suffix}.json")
    return 0


def _connect(sock: Path) -> Client:
    deadline = time.monotonic() + 120
    while True:
        try:
            client = Client(sock)
            if client.call("status")["pending_files"] == 0:
                return client
            client.close()
        except DaemonUnavailable:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the daemon did not come up")
        time.sleep(0.5)


def _judge(client, notes, by_name, linked, tag_count, args, result) -> None:
    rng = random.Random(7)

    answered: collections.Counter = collections.Counter()

    def search(query: str, **params) -> list[dict]:
        params = {"query": query, "mode": args.mode, "max_results": 10, **params}
        answer = client.call("memory_search", params)
        answered[answer["mode"]] += 1  # what ran: "auto" is hybrid only with vectors
        return answer["results"]

    def first(query: str, want: set[str]) -> bool:
        found = search(query)
        return bool(found) and found[0]["path"] in want

    def share(asked: list[tuple[str, set[str]]]) -> tuple[float, list]:
        missed = [(q, sorted(w)[0]) for q, w in asked if not first(q, w)]
        return round(1 - len(missed) / max(1, len(asked)), 4), missed[:20]

    plain = [rel for rel, n in notes.items() if not n["drawing"] and fold(n["name"])]
    topics = {}
    for tag, _ in tag_count.most_common(60):
        for rel in by_name.get(fold(tag.rsplit("/", 1)[-1]), ()):
            if fold(notes[rel]["name"]) == fold(tag.rsplit("/", 1)[-1]):
                topics.setdefault(rel, notes[rel]["name"])
    for rel, _ in sorted(linked.items(), key=lambda kv: -len(kv[1]))[:30]:
        if not notes[rel]["drawing"]:
            topics.setdefault(rel, notes[rel]["name"])
    asks = {
        "topic name@1": [(q, by_name[fold(q)]) for q in topics.values()],
        "name@1": [
            (notes[r]["name"], by_name[fold(notes[r]["name"])])
            for r in rng.sample(plain, min(args.sample, len(plain)))
        ],
        "typed without accents or apostrophes@1": [
            (typed(notes[r]["name"]), by_name[fold(notes[r]["name"])])
            for r in plain if typed(notes[r]["name"]) != notes[r]["name"]
        ],
        "alias@1": [(a, by_name[fold(a)]) for n in notes.values() for a in n["aliases"]],
        "stubs by name@1": [
            (notes[r]["name"], by_name[fold(notes[r]["name"])]) for r in notes if notes[r]["stub"]
        ],
    }  # fmt: skip
    for key, asked in asks.items():
        result[f"{key} asked"] = len(asked)
        result[key], result[f"{key} missed"] = share(asked)
    stubs_linked = [r for r in notes if notes[r]["stub"] and linked.get(r)]
    result["stubs linked to"] = len(stubs_linked)
    result["of those, listing what links to them"] = sum(
        bool((found := search(notes[r]["name"])) and found[0].get("backlinks"))
        for r in stubs_linked
    )
    heading_links = [(r, h) for r, n in notes.items() for h in n["heading_links"]]
    rng.shuffle(heading_links)
    found_by_link = 0
    for rel, heading in heading_links[:60]:
        word = heading.split()[0] if heading.split() else ""
        if word and word.casefold() not in tag_count:
            found_by_link += any(r["path"] == rel for r in search(word, tags=[word]))
    result["heading links tried as --tag"] = min(60, len(heading_links))
    result["notes a heading link tagged"] = found_by_link
    queries = [(t.rsplit("/", 1)[-1], {}) for t, _ in tag_count.most_common(25)]
    queries += [(t.rsplit("/", 1)[-1], {"tags": [t]}) for t, _ in tag_count.most_common(25)]
    queries += [(q, {}) for q in list(topics.values())[:20]]
    for every in (False, True):
        repeats = 0
        for query, params in queries:
            paths = [r["path"] for r in search(query, all_chunks=every, **params)]
            repeats += len(paths) - len(set(paths))
        result["repeated notes in top 10" + (", all_chunks" if every else "")] = repeats
    result["repeat queries"] = len(queries)
    result["answered in"] = dict(answered)


def _stray(database: Path, notes: dict) -> int:
    """Tags memd read from notes that never wrote them (front matter or ``#tag``), read
    from the index itself (a socket answer carries no tags)."""
    stray = 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        for rel, tags in db.execute("SELECT path, tags FROM files"):
            if rel in notes:
                mine = {t.casefold() for t in notes[rel]["tags"]}
                mine |= {t.rsplit("/", i + 1)[0] for t in mine for i in range(t.count("/"))}
                stray += sum(t.casefold() not in mine for t in json.loads(tags))
    return stray


if __name__ == "__main__":
    raise SystemExit(main())
