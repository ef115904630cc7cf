"""Fit the promotion model's weights on the tune half of bench/promote_lines.json, and
measure it on the report half.

Each workspace of the labelled set is written as daily notes and read as the review reads
them (``memd.review.statements``). Every labelled line that can state a fact (not a task,
a question, a session's turn or a line introducing a list: ``updates.eligible``) is a row:
its features (``memd.review.lasting``, with the days its words were said on) and whether a
person would promote it. The lines are split by a hash of their text into a tune half and
a report half (a fact said on two days falls in one half). A logistic model with an L2
penalty is fitted by Newton's method on the tune rows; the penalty and the threshold are
those with the highest F0.5 on the tune half by 5-fold cross-validation within it (a wrong
proposal costs a person more than a missed one).
Writes ``memd/review/lasting_weights.py`` (not with ``--report``).

Figures for both halves, each for every labelled line (a line that is no statement, or not
eligible, counts as not proposed): precision and recall of the model, of the cue lists it
replaced, and of the whole review (``review``:
proposals, one per fact, against the labels).

    python bench/promote_fit.py            # fit, write the weights, print both halves
    python bench/promote_fit.py --report   # only measure the weights in the tree
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import updates_fit
from memd.review import lasting, lasting_weights
from memd.review.durable import durability
from memd.review.review import Note, review
from memd.review.statements import Statement, content_words, statements
from memd.review.updates import eligible

SET = Path(__file__).parent / "promote_lines.json"
OUT = Path(__file__).resolve().parent.parent / "memd" / "review" / "lasting_weights.py"
RESULT = Path(__file__).parent / "results" / "promote-lines.json"


def half(text: str) -> str:
    return "tune" if hashlib.sha1(text.strip().encode()).digest()[0] % 2 == 0 else "report"


def workspaces(data: dict) -> dict[str, list[tuple[Note, dict[int, tuple[bool, str]]]]]:
    """Per workspace, its notes and each note's labels: line -> (promote?, text)."""
    out: dict[str, list] = defaultdict(list)
    for note in data["notes"]:
        lines, labels = [], {}
        for line in note["lines"]:
            if isinstance(line, dict):
                labels[len(lines) + 1] = (line["promote"], line["md"])
                lines.append(line["md"])
            else:
                lines.append(line)
        path = f"memory/{note['date']}.md"
        out[note["workspace"]].append((Note(path, "\n".join(lines) + "\n", note["date"], False),
                                       labels))  # fmt: skip
    return out


def rows(data: dict) -> list[dict]:
    """Every labelled line: its half, label, text, and (when it can state a fact) the
    statement and the days its words were said on."""
    out = []
    for notes in workspaces(data).values():
        found: list[tuple[Statement, tuple[bool, str]]] = []
        read: dict[tuple[str, int], Statement] = {}
        turns: set[tuple[str, int]] = set()
        for note, _ in notes:
            said = statements(note.path, note.text, note.date)
            turns |= lasting.dialogue(said)
            for s in said:
                read[(note.path, s.line)] = s
        days: dict[frozenset, set] = defaultdict(set)
        for s in read.values():
            days[frozenset(content_words(s.text))].add(s.date)
        for note, labels in notes:
            for line, label in labels.items():
                s = read.get((note.path, line))
                found.append((s, label)) if s is not None else out.append(
                    {"half": half(label[1]), "promote": label[0], "text": label[1]}
                )
        for s, (promote, text) in found:
            row = {"half": half(text), "promote": promote, "text": text}
            if eligible(s):
                n = len(days[frozenset(content_words(s.text))])
                at = (s.path, s.line)
                row["features"] = lasting.features(s, n, at in turns)
                row["old"] = _old(s, n)
            out.append(row)
    return out


def _old(s: Statement, days: int) -> bool:
    """Whether the English cue lists this model replaced proposed the line (their score,
    raised for a second day, at their bar of 0.5)."""
    score, _ = durability(s.text, s.heading)
    if days >= 2 and len(content_words(s.text)) >= 3:
        score += 0.3
    return score >= 0.5


def fit(data: list[dict], penalty: float) -> dict[str, float]:
    """The update judge's logistic fit (Newton's method, L2, the bias unpenalised)."""
    return updates_fit.fit([(r["features"], int(r["promote"]), "") for r in data], penalty)


def choose(tune: list[dict], every: list[dict]) -> tuple[float, float]:
    """The penalty and threshold with the best F0.5 over the tune half's lines, each line
    scored by a model fitted without its fold (5 folds by hash): fitted and judged on the
    same lines, every penalty looks perfect."""
    wanted = sum(r["promote"] for r in every if r["half"] == "tune")
    best = (-1.0, 1.0, 0.5)
    for penalty in (0.3, 1.0, 3.0, 10.0):
        scores, curve = [], []
        for k in range(5):
            fold = [r for r in tune if _fold(r["text"]) == k]
            w = fit([r for r in tune if _fold(r["text"]) != k], penalty)
            scores += [(_p(w, r["features"]), r["promote"]) for r in fold]
        for t in [x / 100 for x in range(20, 91, 5)]:
            said = [y for p, y in scores if p >= t]
            prec, rec = sum(said) / max(len(said), 1), sum(said) / wanted
            f05 = 1.25 * prec * rec / (0.25 * prec + rec) if prec + rec else 0.0
            best = max(best, (round(f05, 3), penalty, t))
            curve.append(f"{t:.2f}:{f05:.3f}")
        print(f"penalty {penalty}, F0.5 by threshold: {' '.join(curve)}")
        print(f"penalty {penalty}: best so far F0.5 {best[0]} (penalty {best[1]}, "
              f"threshold {best[2]}), out of fold")  # fmt: skip
    return best[1], best[2]


def _fold(text: str) -> int:
    return hashlib.sha1(text.strip().encode()).digest()[1] % 5


def _p(weights: dict[str, float], f: dict[str, float]) -> float:
    z = weights.get("bias", 0.0) + sum(weights.get(k, 0.0) * v for k, v in f.items())
    return 1.0 / (1.0 + np.exp(-z))


def figures(data: list[dict], chosen: str, threshold: float, old: bool = False) -> dict:
    """Precision and recall of the model (``old``: the cue lists) on one half's lines."""
    rows_ = [r for r in data if r["half"] == chosen]
    said = [r for r in rows_ if "features" in r and (
        r["old"] if old else lasting.probability(r["features"]) >= threshold)]  # fmt: skip
    right = sum(r["promote"] for r in said)
    wanted = sum(r["promote"] for r in rows_)
    return {
        "lines": len(rows_),
        "promote": wanted,
        "proposed": len(said),
        "right": right,
        "precision": round(right / len(said), 3) if said else None,
        "recall": round(right / wanted, 3) if wanted else None,
        "wrong": [r["text"] for r in said if not r["promote"]],
        "missed": [r["text"] for r in rows_ if r["promote"] and r not in said],
    }


def through_review(data: dict) -> dict:
    """The whole review (promotions only) on each workspace: a proposal is right when its
    newest line is labelled promote; counted in the half of that line."""
    out = {h: {"proposals": 0, "right": 0} for h in ("tune", "report")}
    for notes in workspaces(data).values():
        label = {(n.path, line): lab for n, labels in notes for line, lab in labels.items()}
        for p in review([n for n, _ in notes], kinds=("promote",)):
            path, _, lines = p.citations[-1].partition("#L")
            promote, text = label.get((path, int(lines.split("-")[0])), (False, p.text))
            h = out[half(text)]
            h["proposals"] += 1
            h["right"] += promote
    for h in out.values():
        h["precision"] = round(h["right"] / h["proposals"], 3) if h["proposals"] else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", action="store_true", help="measure the weights in the tree")
    args = ap.parse_args()
    data = json.loads(SET.read_text())
    every = rows(data)
    tune = [r for r in every if r["half"] == "tune" and "features" in r]
    print(f"{len(every)} labelled lines ({sum(r['promote'] for r in every)} promote), "
          f"{len(tune)} tune rows")  # fmt: skip
    threshold = lasting_weights.THRESHOLD
    if not args.report:
        penalty, threshold = choose(tune, every)
        weights = fit(tune, penalty)
        lasting_weights.WEIGHTS.clear()
        lasting_weights.WEIGHTS.update(weights)
        lasting_weights.THRESHOLD = threshold
        lasting.THRESHOLD = threshold
        for k, v in sorted(weights.items(), key=lambda kv: -abs(kv[1])):
            print(f"  {k:12} {v:+.3f}")
        lines = "".join(f"    {json.dumps(k)}: {v},\n" for k, v in sorted(weights.items()))
        OUT.write_text(
            '"""Weights of the promotion model (``memd.review.lasting``), written by\n'
            '``bench/promote_fit.py`` on the tune half of bench/promote_lines.json."""\n\n'
            f"THRESHOLD = {threshold}\nWEIGHTS: dict[str, float] = {{\n{lines}}}\n"
        )
        print(f"wrote {OUT}")
    result = {"threshold": threshold, "weights": dict(lasting_weights.WEIGHTS)}
    for h in ("tune", "report"):
        result[h] = figures(every, h, threshold)
        f = result[h]
        print(f"{h:6}: {f['lines']} lines, {f['promote']} to promote; proposed {f['proposed']}, "
              f"right {f['right']}: precision {f['precision']}, recall {f['recall']}")  # fmt: skip
        result[f"{h}_cue_lists"] = f = figures(every, h, threshold, old=True)
        print(f"{h:6}, the cue lists: proposed {f['proposed']}, right {f['right']}: "
              f"precision {f['precision']}, recall {f['recall']}")  # fmt: skip
    result["review"] = through_review(data)
    for h, f in result["review"].items():
        print(f"review, {h} half: {f['proposals']} proposals, {f['right']} right "
              f"({f['precision']})")  # fmt: skip
    print("report half, wrong:", *result["report"]["wrong"], sep="\n  ")
    print("report half, missed:", *result["report"]["missed"], sep="\n  ")
    RESULT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
