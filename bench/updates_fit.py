"""Fit the update judge's weights on the tune halves of the hand-labelled update sets.

Every candidate pair the detector reads closely (the newer statement's nearest older ones
by word overlap) is a row: its features (``memd.review.judge``) and whether it is a
labelled update. Rows come from the tune half of each set only (and from half of the
filler lines, by a hash); meaning is no feature (it only confirms what the words found).
A logistic model with an L2 penalty is fitted by Newton's method; the threshold is the one
whose detection (of the whole detector) sums the highest F1 over the tune halves. The
report halves are never read here. Writes ``memd/review/judge_weights.py``.

    python bench/updates_fit.py            # fit, write the weights, print tune figures
    python bench/updates_bench.py --set …  # then measure on the report halves
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.updates_bench import JUDGED, _chains, detect, figures, workspaces
from memd.review import judge, judge_weights
from memd.review.updates import find_updates

SETS = [Path(__file__).parent / "updates.json", Path(__file__).parent / "updates_heldout.json"]
OUT = Path(__file__).resolve().parent.parent / "memd" / "review" / "judge_weights.py"


def _half(text: str) -> str:
    return "tune" if hashlib.sha1(text.encode()).digest()[0] % 2 == 0 else "report"


def rows(data: dict, near, find=find_updates) -> list[tuple[dict[str, float], int, str]]:
    """(features, label, the pair's texts) for the tune half's candidate pairs (those
    ``find`` reads closely: memd's detector unless another is measured)."""
    out = []
    for _, pairs, every in workspaces(data):
        seen: list = []
        find(every, lambda s: s.date or "", near, collect=seen)
        updates = {
            (p["older"]["date"], p["older"]["text"], p["newer"]["date"], p["newer"]["text"])
            for p in pairs
            if p["kind"] == "update"
        }
        linked = _chains(updates)
        split_of = {(p["newer"]["date"], p["newer"]["text"]): p["split"] for p in pairs}
        for p in pairs:
            split_of.setdefault((p["older"]["date"], p["older"]["text"]), p["split"])
        for older, newer, features in seen:
            key = (older.date, older.text, newer.date, newer.text)
            split = split_of.get((newer.date, newer.text)) or _half(newer.text)
            if split != "tune":
                continue
            true = key in updates or (key[:2], key[2:]) in linked
            true = true or JUDGED.get(f"{older.text} || {newer.text}") is True
            out.append((dict(features), int(true), f"{older.text} || {newer.text}"))
    return out


def fit(data: list[tuple[dict[str, float], int, str]], penalty: float) -> dict[str, float]:
    names = sorted({k for f, _, _ in data for k in f})
    x = np.array([[f.get(k, 0.0) for k in names] + [1.0] for f, _, _ in data])
    y = np.array([label for _, label, _ in data], dtype=float)
    w = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], penalty)
    reg[-1] = 0.0  # the bias is not penalised
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + reg * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    weights = {k: round(float(v), 4) for k, v in zip(names, w[:-1], strict=True) if abs(v) > 1e-4}
    weights["bias"] = round(float(w[-1]), 4)
    return weights


def tune_figures(sets: list[dict], nears: list) -> list[dict]:
    out = []
    for data, near in zip(sets, nears, strict=True):
        got = detect(data, near)
        out.append(figures(got["rows"], got["false"], "tune"))
    return out


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # set order decides ties: the same rows each run
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--penalty", type=float, default=1.0)
    ap.add_argument("--dry", action="store_true", help="print, do not write the weights")
    args = ap.parse_args()
    sets = [json.loads(p.read_text()) for p in SETS]
    judge_weights.WEIGHTS.clear()
    judge_weights.WEIGHTS["bias"] = 0.0  # any weights: the judge reads every pair
    data = []
    for d in sets:
        data += rows(d, None)
    print(f"{len(data)} rows, {sum(y for _, y, _ in data)} updates")
    weights = fit(data, args.penalty)
    judge_weights.WEIGHTS.clear()
    judge_weights.WEIGHTS.update(weights)
    best = (-1.0, 0.5)
    for threshold in [t / 100 for t in range(5, 96, 5)]:
        judge.THRESHOLD = threshold
        scores = []
        for f in tune_figures(sets, [None] * len(sets)):
            p, r = f["precision"] or 0.0, f["recall"] or 0.0
            scores.append(2 * p * r / (p + r) if p + r else 0.0)
        print(
            f"threshold {threshold:.2f}: F1 on the tune halves "
            + " ".join(f"{x:.3f}" for x in scores)
        )
        best = max(best, (round(sum(scores), 3), threshold))  # a tie: the higher threshold
    chosen = best[1]
    print(f"threshold {chosen}")
    for k, v in sorted(weights.items(), key=lambda kv: -abs(kv[1])):
        print(f"  {k:16} {v:+.3f}")
    if not args.dry:
        lines = "".join(f"    {json.dumps(k)}: {v},\n" for k, v in sorted(weights.items()))
        OUT.write_text(
            '"""Weights of the update judge (``memd.review.judge``), written by '
            "``bench/updates_fit.py``\non the tune halves of bench/updates.json and "
            'bench/updates_heldout.json."""\n\n'
            f"THRESHOLD = {chosen}\nWEIGHTS: dict[str, float] = {{\n{lines}}}\n"
        )
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
