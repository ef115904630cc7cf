"""Other ways to find updates, measured against the judge memd uses (bench/updates_fit.py).

Each method is fitted on one set's tune half and measured on the other set's tune half
(a cross-fit: neither the weights nor the threshold have seen the pairs they are measured
on), then fitted on both tune halves and measured once on the report halves. The
threshold is the one with the best F1 on the halves the method was fitted on. Meaning is
the local model (e5-small), as ``--near local`` in bench/updates_bench.py.

- ``judge``: memd's way. The rules propose, the fitted judge turns down.
- ``judge+subject``: the same, with a subject cosine as one more feature of the judge:
  each statement embedded with its values masked (numbers with units, days, times, dates,
  versions, names), so the cosine compares subjects, not whole sentences.
- ``open``: the judge alone decides, over more candidates: the nearest strictly-older
  statements by IDF-weighted word overlap and by cosine, each pair read for a changed
  value. Its features add the cosine, the subject cosine with the changed values masked in
  the pair, whether both give a value of one kind, and how far behind the best candidate a
  pair's cosines are.
- ``open+subject-pool``: the same, its candidates by meaning the nearest by subject cosine.
- ``misses``: why memd's detector misses the tune halves' updates it misses.
- ``separation``: how well the whole statements' cosine and the subject cosine each tell
  updates from other pairs, before any judge.
- ``sure``: memd's relations at a judge probability of at least t, t the lowest whose
  precision is 0.9 or more on every tune half: the share a search could lower by.

    python bench/updates_methods.py     # -> bench/results/updates-methods.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.updates_bench as ub
from bench.common import auc, write_result
from bench.updates_fit import SETS, fit, rows
from memd.review import judge, judge_weights, updates
from memd.review.changes import value_changes
from memd.review.values import Said, said

THRESHOLDS = [t / 10 for t in range(2, 10)]
METHODS = ("judge", "judge+subject", "open", "open+subject-pool")
_TAG = {"num": "a number", "time": "a time", "day": "a day", "date": "a date"}


class Vectors:
    """Texts' vectors by the local model, each embedded once; cosines on its band."""

    def __init__(self) -> None:
        from memd.embed.providers import LocalEmbedder

        self.model = LocalEmbedder()
        self.low, self.high = self.model.cosine_band
        self.known: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.known})
        for at in range(0, len(missing), 256):
            part = missing[at : at + 256]
            v = self.model.embed_batch(part, "passage")
            self.known.update(zip(part, v / np.linalg.norm(v, axis=1, keepdims=True), strict=True))
        return np.array([self.known[t] for t in texts])

    def near(self, a: str, b: str) -> float:
        va, vb = self([a, b])
        return (float(va @ vb) - self.low) / (self.high - self.low)


def masked(d: Said, only: frozenset[str] | None = None) -> str:
    """``d``'s text with its values (or ``only`` these) put as their kind ("a time")."""
    kind_of = {v: k for k, vs in d.values.items() for v in vs}
    text = d.text
    for v, (a, b) in sorted(d.spans.items(), key=lambda vs: -vs[1][0]):
        if only is None or v in only:
            text = text[:a] + _TAG.get(kind_of.get(v, ""), "something") + text[b:]
    return " ".join(text.split())


def best_threshold(measure: Callable[[float], list[dict]]) -> tuple[float, list[dict]]:
    """The threshold whose figures (one per half) sum the highest F1; a tie: the higher."""
    best = (-1.0, 0.0, [])
    for t in THRESHOLDS:
        figs = measure(t)
        f1 = sum(2 * f["precision"] * f["recall"] / (f["precision"] + f["recall"])
                 for f in figs if f["precision"] and f["recall"])  # fmt: skip
        best = max(best, (round(f1, 4), t, figs), key=lambda b: (b[0], b[1]))
    return best[1], best[2]


def brief(f: dict) -> dict:
    return {k: f[k] for k in ("recall", "precision", "found", "updates", "false")}


def separation(sets: list[dict], vectors: Vectors) -> dict:
    """On the tune halves: how well a cosine tells the labelled updates from the same-subject
    pairs and from pairs of two random lines of one domain (AUC: 0.5 chance, 1 always),
    whole statements against statements with their values masked."""
    rng = random.Random(0)
    out = {}
    for i, data in enumerate(sets):
        tune = [p for p in data["pairs"] if p["split"] == "tune"]
        by_kind = {"update": [], "same_subject": [], "random": []}
        for p in tune:
            by_kind[p["kind"]].append((p["older"]["text"], p["newer"]["text"]))
            other = rng.choice(
                [q for q in data["pairs"] if q["domain"] == p["domain"] and q is not p]
            )
            by_kind["random"].append((other["older"]["text"], p["newer"]["text"]))
        for name, read in (
            ("whole", lambda t: said(t).text),
            ("masked", lambda t: masked(said(t))),
        ):
            cos = {}
            for kind, pairs in by_kind.items():
                a, b = vectors([read(x) for x, _ in pairs]), vectors([read(y) for _, y in pairs])
                cos[kind] = (a * b).sum(axis=1)
            for against in ("same_subject", "random"):
                told = auc(cos["update"], cos[against])
                out[f"set{i} {name}, updates against {against}"] = round(told, 3)
    return out


def misses(sets: list[dict], near: Callable) -> dict:
    """Why memd's detector (meaning on) misses the tune halves' updates it misses."""
    why: Counter[str] = Counter()
    for data in sets:
        for _, pairs, every in ub.workspaces(data):
            seen: list = []
            found = updates.find_updates(every, lambda s: s.date or "", near, collect=seen)
            got = {(u.older.text, u.newer.text) for u in found}
            read = {(o.text, n.text): f for o, n, f in seen}
            taken = {s.text: d for s, d in updates.read(every)}
            for p in pairs:
                key = (p["older"]["text"], p["newer"]["text"])
                if p["kind"] == "update" and p["split"] == "tune":
                    why[_why(key, got, read, taken)] += 1
    return dict(why.most_common())


def _why(key, got, read, taken) -> str:
    if key in got:
        return "found"
    if key[0] not in taken or key[1] not in taken:
        return "not read as a fact (a question, a past event)"
    if key in read:
        return "turned down by the rules" if not read[key]["rules"] else "turned down by the judge"
    o, d = taken[key[0]], taken[key[1]]
    r = updates._reading(o, d, {w: 1.0 for w in o.stems | d.stems})
    if r is None:
        return "no word in common but values"
    return "no value of a known shape changed" if r.change is None else "not a candidate"


# --- judge and judge+subject: memd's detector, weights fitted here --------------------


def _with_subject(vectors: Vectors) -> Callable[[], None]:
    """Add the subject cosine to every pair the judge reads; returns the undo."""
    plain = updates._reading

    def reading(o, d, idf, full=True):
        r = plain(o, d, idf, full)
        if r is not None and full:
            r.features["subject"] = vectors.near(masked(o), masked(d))
        return r

    updates._reading = reading
    return lambda: setattr(updates, "_reading", plain)


def _measured(sets: list[dict], which: list[int], half: str, near: Callable | None) -> list:
    """The detector as it stands, on the sets ``which``: figures of their ``half``."""
    out = []
    for i in which:
        got = ub.detect(sets[i], near)
        out.append(ub.figures(got["rows"], got["false"], half))
    return out


def judge_method(sets: list[dict], near: Callable, fit_on: list[int], on: list[int], split: str):
    judge_weights.WEIGHTS.clear()
    judge_weights.WEIGHTS["bias"] = 0.0  # any weights: the judge reads every pair
    data = [r for i in fit_on for r in rows(sets[i], near) + rows(sets[i], None)]
    judge_weights.WEIGHTS.clear()
    judge_weights.WEIGHTS.update(fit(data, 1.0))

    def measure(t: float, which: list[int], half: str) -> list[dict]:
        judge.THRESHOLD = t
        return _measured(sets, which, half, near)

    t, _ = best_threshold(lambda t: measure(t, fit_on, "tune"))
    return t, measure(t, on, split)


# --- open: the judge alone, over candidates by words and by meaning -----------------


def open_finder(vectors: Vectors, weights: dict | None, threshold: float, by_subject: bool):
    """A ``find_updates`` for the bench: per newer statement, its candidates by overlap
    (``updates._POOL``) and its 4 nearest older ones by cosine (of the subjects, values
    masked, with ``by_subject``), each read closely; the likeliest pair whose value changed
    is taken when the judge believes it enough."""

    def find(every, when, near=None, collect=None):
        items = sorted(updates.read(every), key=lambda sd: (when(sd[0]), sd[0].path, sd[0].line))
        if len(items) < 2:
            return []
        df = Counter(w for _, d in items for w in d.stems)
        n = len(items)
        idf = {w: math.log(1 + (n + 1) / (c + 0.5)) for w, c in df.items()}
        full = vectors([d.text for _, d in items])
        pooled = vectors([masked(d) for _, d in items]) if by_subject else full
        dates = [when(s) for s, _ in items]
        postings: dict[str, list[int]] = defaultdict(list)
        found = []
        for j, (_, d) in enumerate(items):
            rare = sorted(w for w in d.stems if df[w] <= max(50, int(updates._COMMON * n)))
            older = [i for i in range(j) if dates[i] < dates[j]]
            if older and (d.values or d.slot or d.changed):
                found += _open_pairs(items, j, older, rare, postings, idf, (full, pooled),
                                     vectors, weights, threshold, collect)  # fmt: skip
            for w in rare:
                postings[w].append(j)
        return found

    return find


def _open_pairs(
    items, j, older, rare, postings, idf, matrices, vectors, weights, threshold, collect
):
    s, d = items[j]
    full, pooled = matrices
    overlap: Counter[int] = Counter()
    for w in rare:
        for i in postings.get(w, ()):
            overlap[i] += idf[w]
    allowed = set(older)
    pool = [i for i, _ in overlap.most_common(updates._POOL) if i in allowed]
    by_meaning = pooled[older] @ pooled[j]
    pool += [older[k] for k in np.argsort(-by_meaning)[:4] if older[k] not in pool]
    band = vectors.high - vectors.low
    cos = {i: (float(full[i] @ full[j]) - vectors.low) / band for i in pool}
    read = []
    for i in pool:
        o = items[i][1]
        r = updates._reading(o, d, idf, True)
        if r is None:
            continue  # nothing in common but values
        changes = value_changes(o, d)
        was, now = (changes[0][1], changes[0][2]) if changes else (None, None)
        f = dict(r.features)
        f["cos"] = cos[i]
        f["subject"] = vectors.near(masked(o, was), masked(d, now))  # None: every value
        f["kinds_agree"] = float(bool(o.values.keys() & d.values.keys()) or bool(o.slot and d.slot))
        f["by_words"] = float(i in overlap)
        f["no_change"] = float(r.change is None)  # fitted on too: a negative to learn from
        read.append((i, f, r.change))
    if not read:
        return []
    for _, f, _ in read:
        f["cos_behind"] = max(g["cos"] for _, g, _ in read) - f["cos"]
        f["subject_behind"] = max(g["subject"] for _, g, _ in read) - f["subject"]
    if collect is not None:
        collect += [(items[i][0], s, f) for i, f, _ in read]
    if weights is None:
        return []
    scored = sorted((judge_p(weights, f), i, ch) for i, f, ch in read if ch is not None)
    if not scored:
        return []
    p, i, change = scored[-1]
    if p < threshold:
        return []
    return [updates.Update(items[i][0], s, *change, not d.changed, round(p, 3))]


def judge_p(weights: dict, f: dict) -> float:
    z = weights.get("bias", 0.0) + sum(weights.get(k, 0.0) * v for k, v in f.items())
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def open_method(
    sets: list[dict], vectors: Vectors, fit_on: list[int], on: list[int], split: str, name: str
):
    by_subject = name == "open+subject-pool"
    reader = open_finder(vectors, None, 1.0, by_subject)
    weights = fit([r for i in fit_on for r in rows(sets[i], None, reader)], 1.0)
    saved = ub.find_updates
    try:

        def measure(t: float, which: list[int], half: str) -> list[dict]:
            ub.find_updates = open_finder(vectors, weights, t, by_subject)
            return _measured(sets, which, half, None)

        t, _ = best_threshold(lambda t: measure(t, fit_on, "tune"))
        return t, measure(t, on, split)
    finally:
        ub.find_updates = saved


# --- sure: how sure a relation must be for a search to lower by it ------------------


def sure_method(sets: list[dict], near: Callable) -> dict:
    """Precision of memd's relations by the judge's probability (today's weights)."""
    by = {}
    for half in ("tune", "report"):
        for i, data in enumerate(sets):
            for mode, n in (("meaning", near), ("words", None)):
                seen: list = []
                found = _found_with_p(data, n, seen)
                got = ub.detect(data, n)
                false = {(f["older"], f["newer"]) for f in got["false"]
                         if f["split"] in (half, "filler")}  # fmt: skip
                ups = [r for r in got["rows"] if r["kind"] == "update" and r["found"]]
                right = {
                    (r["older"]["text"], r["newer"]["text"]) for r in ups if r["split"] == half
                }
                for t in THRESHOLDS:
                    g = sum(1 for k, p in found.items() if k in right and p >= t)
                    b = sum(1 for k, p in found.items() if k in false and p >= t)
                    by[f"{half} set{i} {mode} p>={t}"] = (g, b)
    keys = [f"set{i} {m}" for i in range(len(sets)) for m in ("meaning", "words")]

    def precision(half: str, t: float, key: str) -> float:
        g, b = by[f"{half} {key} p>={t}"]
        return g / (g + b) if g + b else 1.0

    chosen = next((t for t in THRESHOLDS if all(precision("tune", t, k) >= 0.9 for k in keys)),
                  None)  # fmt: skip
    if chosen is None:
        return {"threshold": None}
    out = {"threshold": chosen}
    for half in ("tune", "report"):
        for k in keys:
            g, b = by[f"{half} {k} p>={chosen}"]
            out[f"{half} {k}"] = {"right": g, "false": b, "precision": round(g / (g + b), 3)
                                  if g + b else None}  # fmt: skip
    return out


def _found_with_p(data: dict, near, seen: list) -> dict[tuple[str, str], float]:
    for _, _, every in ub.workspaces(data):
        updates.find_updates(every, lambda s: s.date or "", near, collect=seen)
    return {(o.text, n.text): judge.probability(f) for o, n, f in seen}


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # set order decides ties: the same rows each run
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "updates-methods.json")
    )
    ap.add_argument(
        "--methods",
        default=",".join(("misses", "separation", "sure", *METHODS)),
        help="which, by name",
    )
    args = ap.parse_args()
    chosen = args.methods.split(",")
    sets = [json.loads(p.read_text()) for p in SETS]
    vectors = Vectors()
    near = vectors.near
    today = (dict(judge_weights.WEIGHTS), judge.THRESHOLD)
    result: dict = {"sure": sure_method(sets, near)} if "sure" in chosen else {}
    if "misses" in chosen:
        result["misses"] = misses(sets, near)
    if "separation" in chosen:
        result["separation"] = separation(sets, vectors)
    for name in [m for m in METHODS if m in chosen]:
        undo = _with_subject(vectors) if name == "judge+subject" else (lambda: None)
        try:
            figures = {}
            for a, b in ((0, 1), (1, 0)):
                if name.startswith("open"):
                    t, (f,) = open_method(sets, vectors, [a], [b], "tune", name)
                else:
                    t, (f,) = judge_method(sets, near, [a], [b], "tune")
                figures[f"fit set{a}, tune set{b}"] = {"threshold": t, **brief(f)}
            if name.startswith("open"):
                t, fs = open_method(sets, vectors, [0, 1], [0, 1], "report", name)
            else:
                t, fs = judge_method(sets, near, [0, 1], [0, 1], "report")
            for i, f in enumerate(fs):
                figures[f"fit both, report set{i}"] = {"threshold": t, **brief(f)}
            result[name] = figures
        finally:
            undo()
            judge_weights.WEIGHTS.clear()
            judge_weights.WEIGHTS.update(today[0])
            judge.THRESHOLD = today[1]
    write_result(result, Path(args.out))


if __name__ == "__main__":
    main()
