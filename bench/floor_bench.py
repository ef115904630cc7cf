"""What the relevance floor (``min_score``) keeps and drops, at several floors at once.

    python bench/floor_bench.py [--mode auto] [--floors 0.3 0.38 ...] [--out ...]

Asks every question of three sets once, with ``min_score`` 0 and ten results: the 759
locomo-dev questions (R@1 and R@5 of the results that clear each floor), the 75
unanswerable ones of ``bench/unanswerable.json`` (share that get any result: false
positives) and the 80 of ``bench/paraphrase.json`` (R@5). A result clears a floor when
its score does, so each row is what that ``min_score`` would answer (the time
preferences run after the floor; a result they lowered below it counts as dropped here).
Shares locomo_bench's indexes and embedding cache under bench/.data/locomo/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from bench.locomo_bench import DATA, first_hit, open_memories  # noqa: E402
from memd.log import configure_logging  # noqa: E402

FLOORS = (0.0, 0.2, 0.25, 0.3, 0.32, 0.34, 0.35, 0.36, 0.38, 0.4)


def share(hits: list[bool]) -> float:
    return round(sum(hits) / len(hits), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--floors", type=float, nargs="+", default=FLOORS,
                    help="the floors to report (vector mode's scale reaches higher)")  # fmt: skip
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "locomo")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "floor.json")
    ap.add_argument(
        "--embeddings",
        type=json.loads,
        default=None,
        help='another model, as JSON: {"provider": "openai", "model": ..., "base_url": ..., '
        '"cosine_band": [lo, hi]}',
    )
    args = ap.parse_args()
    configure_logging("warning")
    memories = open_memories(args.data, args.work, "local", embeddings=args.embeddings)
    for memory in memories.values():
        memory.index()
        memory.embed_all()
    sets = {
        "locomo": json.loads((args.data / "questions.json").read_text()),
        "unanswerable": json.loads((HERE / "unanswerable.json").read_text()),
        "paraphrase": json.loads((HERE / "paraphrase.json").read_text()),
    }

    def ask(q: dict) -> list:
        memory = memories[q["sample"]]
        return memory.search(q["question"], mode=args.mode, max_results=10, min_score=0).results

    answers = {name: [(q, ask(q)) for q in questions] for name, questions in sets.items()}
    result: dict = {"benchmark": "floor", "mode": args.mode, "floors": {}}
    if args.embeddings:
        result["embeddings"] = {k: v for k, v in args.embeddings.items() if k != "api_key"}
    # The lowest floor at which at most 5 % of the unanswerable questions get a result, and
    # the share of locomo-dev whose evidence is in the top 5 and at or above it (strong).
    tops = sorted((max((r.score for r in rs), default=0.0) for _, rs in answers["unanswerable"]))
    lowest = tops[len(tops) - len(tops) // 20 - 1] + 1e-6 if tops else 0.0
    strong = [
        first_hit([r for r in rs if r.score >= lowest], q["evidence"])
        for q, rs in answers["locomo"]
    ]
    result["floor_at_5pct_unanswerable"] = round(lowest, 3)
    result["locomo strong R@5 there"] = share([r is not None and r <= 5 for r in strong])
    for floor in args.floors:

        def rank(q: dict, results: list, floor: float = floor) -> int | None:
            return first_hit([r for r in results if r.score >= floor], q["evidence"])

        locomo = [rank(q, rs) for q, rs in answers["locomo"]]
        paraphrase = [rank(q, rs) for q, rs in answers["paraphrase"]]
        result["floors"][str(floor)] = {
            "locomo R@1": share([r == 1 for r in locomo]),
            "locomo R@5": share([r is not None and r <= 5 for r in locomo]),
            "unanswerable FP": share(
                [any(r.score >= floor for r in rs) for _, rs in answers["unanswerable"]]
            ),
            "paraphrase R@5": share([r is not None and r <= 5 for r in paraphrase]),
        }
    for memory in memories.values():
        memory.close()
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
