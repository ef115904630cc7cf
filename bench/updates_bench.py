"""Updates found by subject and value, measured on a hand-labelled set (bench/updates.json).

The set was written by hand for memd, before any tuning, by someone who had not seen the
detector: eight domains, update pairs in many wordings (a third with no change word) and
same-subject pairs that are not updates (additions, other attributes, other people,
logs). Each domain becomes one workspace: MEMORY.md for undated lines, a daily note per
date, with the domain's filler lines among them. Split: ``tune`` is what thresholds were
set on; ``report`` is what is reported.

    python bench/updates_bench.py                  # detection, on both splits
    python bench/updates_bench.py --search         # + the newer ranks above the older
                                                   #   (keyword; --provider local for hybrid)
    python bench/updates_bench.py --near local     # meaning confirms (``confirmed``)
    python bench/updates_bench.py --set bench/updates_heldout.json   # the held-out set
    python bench/updates_bench.py --set A.json --set B.json          # several sets

Detection: recall = labelled updates found with the right older statement; precision =
found relations that are labelled updates (a relation touching a same-subject pair or a
filler line is a false one). Search: for each update's question, whether the newer
statement's result ranks above the older's; context: whether any superseded MEMORY.md line
is shown without what replaced it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import write_result
from memd.review.statements import Statement
from memd.review.updates import find_updates

SET = Path(__file__).parent / "updates.json"
# Relations between lines of two different labelled pairs, judged by hand (written down
# once, before they were counted): a set's author may restate a newer value elsewhere
# ("Arla collection Mon/Thu." beside "collection days Tue/Fri -> Mon/Thu"), which makes
# another true update the labels do not list. Unjudged ones count as false.
JUDGED: dict[str, bool] = json.loads((Path(__file__).parent / "updates_judged.json").read_text())


def layout(domain: str, pairs: list[dict], filler: list[dict]) -> dict[str, list[str]]:
    """``{path: lines}``: each distinct (date, text) once, in its note, in date order."""
    notes: dict[str, list[str]] = defaultdict(list)
    seen = set()
    lines = [(p[side]["date"], p[side]["text"]) for p in pairs for side in ("older", "newer")]
    lines += [(f["date"], f["text"]) for f in filler]
    for date, text in sorted(lines, key=lambda dt: (dt[0] or "", dt[1])):
        if (date, text) in seen:
            continue
        seen.add((date, text))
        notes[f"memory/{date}.md" if date else "MEMORY.md"].append(text)
    return notes


def note_text(path: str, lines: list[str]) -> str:
    title = "Memory" if path == "MEMORY.md" else path[7:17]
    return f"# {title}\n\n" + "".join(f"- {line}\n" for line in lines)


def meanings(data: dict, provider: str):
    """A ``near`` for the detector: the cosine of two statements' texts, by the provider's
    model (None: words only). Every text it may be asked about is embedded up front."""
    if provider == "none":
        return None
    import numpy as np

    from memd.embed.providers import LocalEmbedder
    from memd.review.values import said

    lines = [p[side]["text"] for p in data["pairs"] for side in ("older", "newer")]
    lines += [f["text"] for fl in data["filler"].values() for f in fl]
    texts = sorted({said(t).text for t in lines})
    model = LocalEmbedder()
    vectors = model.embed_batch(texts, "passage")
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    at = {t: i for i, t in enumerate(texts)}

    low, high = model.cosine_band

    def near(a: str, b: str) -> float | None:
        if a not in at or b not in at:
            return None
        return (float(vectors[at[a]] @ vectors[at[b]]) - low) / (high - low)

    return near


def workspaces(data: dict) -> Iterator[tuple[str, list[dict], list[Statement]]]:
    """Per domain: its labelled pairs and every statement of its notes (filler among them)."""
    pairs_by_domain: dict[str, list[dict]] = defaultdict(list)
    for p in data["pairs"]:
        pairs_by_domain[p["domain"]].append(p)
    for domain, pairs in pairs_by_domain.items():
        notes = layout(domain, pairs, data["filler"].get(domain, []))
        every = [
            Statement(path, n + 3, path[7:17] if path != "MEMORY.md" else None, "", text)
            for path, lines in notes.items()
            for n, text in enumerate(lines)
        ]
        yield domain, pairs, every


def detect(data: dict, near=None) -> dict:
    rows = []  # per labelled pair: found?
    false = []  # relations that are no labelled update
    for domain, pairs, every in workspaces(data):
        found = find_updates(every, lambda s: s.date or "", near)
        got = {(u.older.date, u.older.text, u.newer.date, u.newer.text): u for u in found}
        labelled = {}
        for p in pairs:
            key = (p["older"]["date"], p["older"]["text"], p["newer"]["date"], p["newer"]["text"])
            labelled[key] = p
            u = got.get(key)
            rows.append({**p, "found": u is not None, "likely": u.likely if u else None,
                         "confirmed": u.confirmed if u else None})  # fmt: skip
            if u is not None and p["kind"] != "update":
                u = None
        updates = {k for k, p in labelled.items() if p["kind"] == "update"}
        linked = _chains(updates)
        for key, u in got.items():
            if key in updates or (key[:2], key[2:]) in linked:
                continue
            p = labelled.get(key)
            split = p["split"] if p else _split_of(key, pairs)
            judged = JUDGED.get(f"{key[1]} || {key[3]}") if p is None else None
            if judged:
                continue  # judged an update by hand (a restatement of a labelled value)
            false.append({"domain": domain, "split": split, "older": key[1], "newer": key[3],
                          "why": p["wording"] if p else "not a labelled pair",
                          "judged": judged, "kind": u.kind, "was": u.was, "now": u.now,
                          "likely": u.likely, "confirmed": u.confirmed})  # fmt: skip
    return {"rows": rows, "false": false}


def _chains(updates: set[tuple]) -> set[tuple]:
    """(older, newer) statements joined by labelled updates through others (A -> B -> C:
    A, C), which a detector may also relate."""
    nxt = defaultdict(set)
    for k in updates:
        nxt[k[:2]].add(k[2:])
    out = set()
    for start in list(nxt):
        stack, seen = list(nxt[start]), set()
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            out.add((start, s))
            stack += nxt.get(s, ())
    return out


def _split_of(key: tuple, pairs: list[dict]) -> str:
    for p in pairs:
        if (p["newer"]["date"], p["newer"]["text"]) == key[2:]:
            return p["split"]
    for p in pairs:
        if (p["older"]["date"], p["older"]["text"]) in (key[:2], key[2:]):
            return p["split"]
    return "filler"


def figures(rows: list[dict], false: list[dict], split: str) -> dict:
    mine = [r for r in rows if r["split"] == split]
    ups = [r for r in mine if r["kind"] == "update"]
    hits = sum(r["found"] for r in ups)
    wrong = [f for f in false if f["split"] in (split, "filler")]
    same = [r for r in mine if r["kind"] == "same_subject"]
    by = defaultdict(lambda: [0, 0])
    for r in ups:
        by[r["wording"]][0] += r["found"]
        by[r["wording"]][1] += 1
    plain = [r for r in ups if not r["change_word"]]
    kinds = defaultdict(lambda: [0, 0])
    for r in ups:
        kinds[r["value_kind"]][0] += r["found"]
        kinds[r["value_kind"]][1] += 1
    stated = [r for r in ups if r["found"] and not r["likely"]]
    stated_false = [f for f in wrong if not f["likely"]]
    confirmed = [r for r in ups if r["found"] and r["confirmed"]]
    confirmed_false = [f for f in wrong if f["confirmed"]]
    return {
        "stated_precision": _share(stated, stated_false),
        "stated_found": len(stated),
        "confirmed_precision": _share(confirmed, confirmed_false),
        "confirmed_found": len(confirmed),
        "confirmed_false": len(confirmed_false),
        "updates": len(ups),
        "found": hits,
        "recall": round(hits / len(ups), 3) if ups else None,
        "false": len(wrong),
        "precision": round(hits / (hits + len(wrong)), 3) if hits + len(wrong) else None,
        "same_subject_pairs": len(same),
        "false_on_same_subject": sum(r["found"] for r in same),
        "recall_no_change_word": round(sum(r["found"] for r in plain) / len(plain), 3)
        if plain
        else None,
        "by_wording": {w: f"{a}/{b}" for w, (a, b) in sorted(by.items())},
        "by_value_kind": {w: f"{a}/{b}" for w, (a, b) in sorted(kinds.items())},
    }


def _share(right: list, wrong: list) -> float | None:
    """The share of ``right`` among both (None: neither holds any)."""
    return round(len(right) / (len(right) + len(wrong)), 3) if right or wrong else None


def search_check(data: dict, provider: str) -> dict:
    """Each domain as a real workspace: index it, then ask each update's question."""
    from memd.agent.context import context
    from memd.configfile import parse_config
    from memd.memory import Memory

    pairs_by_domain: dict[str, list[dict]] = defaultdict(list)
    for p in data["pairs"]:
        pairs_by_domain[p["domain"]].append(p)
    out = Counter()
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        for domain, pairs in pairs_by_domain.items():
            root = Path(tmp) / domain
            notes = layout(domain, pairs, data["filler"].get(domain, []))
            for path, lines in notes.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(note_text(path, lines))
            raw = {"workspace": str(root), "state_dir": str(Path(tmp) / f"state-{domain}"),
                   "embeddings": {"provider": provider}, "review": {"enabled": False}}  # fmt: skip
            with Memory(parse_config(raw, env={"HOME": tmp})) as memory:
                memory.index()
                memory.currency.refresh()
                if provider != "none":
                    memory.embed_all()
                where = {}
                for path, lines in notes.items():
                    for n, text in enumerate(lines):
                        where.setdefault(text, (path, n + 3))
                for p in pairs:
                    if p["kind"] != "update":
                        continue
                    results = memory.search(p["question"], max_results=10, min_results=10).results
                    rank = {}
                    for i, r in enumerate(results):
                        for side in ("older", "newer"):
                            path, line = where[p[side]["text"]]
                            if r.path == path and r.start_line <= line <= r.end_line:
                                rank.setdefault(side, i)
                    key = p["split"]
                    out[f"{key}_asked"] += 1
                    newer, older = rank.get("newer"), rank.get("older")
                    good = newer is not None and (older is None or newer < older)
                    out[f"{key}_newer_first"] += good
                    if not good:
                        misses.append({"id": p["id"], "newer_rank": newer, "older_rank": older})
                text = context(memory, cwd=str(root)).text
                for line in text.splitlines():
                    if "(MEMORY.md#L" in line and "→ now:" not in line:
                        for p in pairs:
                            u = p["kind"] == "update" and p["older"]["date"] is None
                            if u and p["older"]["text"] in line:
                                out["context_superseded_shown_as_current"] += 1
    for split in ("tune", "report"):
        if asked := out[f"{split}_asked"]:
            out[f"{split}_newer_first_share"] = round(out[f"{split}_newer_first"] / asked, 3)
    return {**out, "misses": misses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", help="a labelled set (again for several)")
    ap.add_argument("--search", action="store_true", help="also rank the pairs' questions")
    ap.add_argument("--provider", default="none", help="embeddings for --search (none, local)")
    ap.add_argument("--show", action="store_true", help="print misses and false relations")
    ap.add_argument("--near", default="none", help="meaning that confirms (none, local)")
    args = ap.parse_args()
    for path in args.set or [str(SET)]:
        run(Path(path), args)


def run(path: Path, args: argparse.Namespace) -> None:
    """Detection (and with ``--search`` the read paths) on one labelled set, each half."""
    data = json.loads(path.read_text())
    near = meanings(data, args.near)
    started = time.perf_counter()
    got = detect(data, near)
    halves = [h for h in ("tune", "report") if any(p["split"] == h for p in data["pairs"])]
    result = {
        "set": path.name,
        "pairs": len(data["pairs"]),
        "near": args.near,
        "seconds": round(time.perf_counter() - started, 2),
        **{h: figures(got["rows"], got["false"], h) for h in halves},
    }
    print(path.name)
    for split in halves:
        f = result[split]
        print(f"{split:6}  recall {f['recall']} ({f['found']}/{f['updates']}), precision "
              f"{f['precision']} ({f['false']} false), no change word: "
              f"{f['recall_no_change_word']}, false on same-subject pairs: "
              f"{f['false_on_same_subject']}/{f['same_subject_pairs']}; stated only: precision "
              f"{f['stated_precision']} ({f['stated_found']} found); confirmed: precision "
              f"{f['confirmed_precision']} ({f['confirmed_found']} right, "
              f"{f['confirmed_false']} false)")  # fmt: skip
    if args.show:
        for r in got["rows"]:
            if r["kind"] == "update" and not r["found"] and r["split"] == "tune":
                print("MISS", r["id"], r["older"]["text"], "||", r["newer"]["text"])
        for f in got["false"]:
            if f["split"] in ("tune", "filler"):
                print("FALSE", f["why"], f["older"], "||", f["newer"], (f["was"], f["now"]))
    if args.search:
        result["search"] = search_check(data, args.provider)
        s = result["search"]
        shares = ", ".join(f"{h} {s[f'{h}_newer_first_share']}" for h in halves)
        print(f"search ({args.provider}): newer first, {shares}; context shows superseded as "
              f"current: {s.get('context_superseded_shown_as_current', 0)}")  # fmt: skip
    name = path.stem.replace("_", "-") + ("" if args.near == "none" else "-near")
    write_result(result, Path(__file__).parent / "results" / f"{name}.json")


if __name__ == "__main__":
    main()
