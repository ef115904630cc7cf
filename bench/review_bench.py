"""Memory review (issue 21): conflicts found, promotions worth making, and its cost.

    python bench/review_bench.py [--files 5000] [--provider local] [--cost-only]
                                 [--out FILE.json]

(``--files 0`` leaves out part 3.)

1. Conflicts on the time bench's year of daily notes (bench/time_bench.py): its 16 facts
   that change during the year are the conflicts to find. Recall: share of those facts with
   a conflict proposal citing two of its statements; precision: share of conflict proposals
   that do.
2. Promotions on bench/promote.json, 121 labelled statements (59 durable, 62 passing) from
   locomo-dev (read from ../shared/bench-data by reference: those texts are not in this
   repository) and the demo, each written on its day in a workspace of daily notes:
   precision of the top 20 promotions, and the share of durable statements proposed.
3. A review of the ``--files``-note vault (bench/vault.py) through a running daemon,
   indexed first: its time, and search and flush latency while it runs beside before it.
   With ``--provider local`` the review checks its best candidates against MEMORY.md by
   meaning with the local model. Targets: recall ≥ 0.9, precision ≥ 0.8, top-20
   precision ≥ 0.8, review ≤ 60 s.

``--cost-only``: only a review's time and CPU with the model, at a first start and after a
restart on the same state folder, on the vault with 300 decisions each said on two days
and a 150-statement MEMORY.md (what a review checks by meaning).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.time_bench import CHANGING, generate  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "bench-data" / "locomo-dev"


def open_memory(folder: Path, state: Path, provider: str = "none") -> Memory:
    raw = {"workspace": str(folder), "state_dir": str(state), "embeddings": {"provider": provider}}
    return Memory(parse_config(raw, env={"HOME": str(state)}))


def conflicts(tmp: Path) -> dict:
    generate(tmp / "year")
    fact_of: dict[str, str] = {}  # "path#Lline" -> the changing fact it states
    for note in sorted((tmp / "year" / "memory").glob("*.md")):
        for n, line in enumerate(note.read_text().splitlines(), start=1):
            for name, template, values, _ in CHANGING:
                if any(template.format(v=v) in line for v in values):
                    fact_of[f"memory/{note.name}#L{n}"] = name
    with open_memory(tmp / "year", tmp / "year-state") as memory:
        found = updates_found(memory)
    cited = [[first_line(c) for c in pair] for pair in found]
    right = [cs for cs in cited if len({fact_of.get(c) for c in cs} - {None}) == 1
             and all(c in fact_of for c in cs)]  # fmt: skip
    facts = {fact_of[cs[0]] for cs in right}
    return {
        "changing_facts": len(CHANGING),
        "conflicts_proposed": len(found),
        "conflict_recall": round(len(facts) / len(CHANGING), 3),
        "conflict_precision": round(len(right) / max(len(found), 1), 3),
    }


def updates_found(memory: Memory) -> list[tuple[str, str]]:
    """The updates the index keeps after a pass (``memd.review.currency``): between daily
    notes they label search results; a review proposes only those that correct MEMORY.md."""
    memory.index()
    memory.currency.refresh()
    return [(u.older.citation, u.newer.citation) for u in memory.currency.updates]


def first_line(citation: str) -> str:
    """``path#L4`` for ``path#L4-L5``: a statement's first line."""
    return re.sub(r"-L\d+$", "", citation)


def promotions(tmp: Path, wrap: int | None = None) -> dict:
    """The promotion set; with ``wrap``, every line hard-wrapped at that many columns (a
    list item's continuation indented, a speaker's turn not), which must change nothing."""
    items = json.loads((HERE / "promote.json").read_text())["items"]
    days: dict[str, list[tuple[str, dict]]] = {}
    for item in items:
        if "sample" in item:
            turns = (LOCOMO / item["sample"] / item["path"]).read_text().splitlines()
            line, day = turns[item["line"] - 1], Path(item["path"]).stem
        else:
            line, day = f"- {item['text']}", item["date"]
        days.setdefault(day, []).append((line, item))
    label: dict[str, str] = {}
    folder = tmp / ("promote" if wrap is None else f"promote-wrapped-{wrap}")
    (folder / "memory").mkdir(parents=True)
    for day, lines in days.items():
        body = [f"# {day}", "", "## Notes", ""]
        for line, item in lines:
            label[f"memory/{day}.md#L{len(body) + 1}"] = item["label"]
            indent = "  " if line.startswith("- ") else ""
            body += textwrap.wrap(line, wrap, subsequent_indent=indent) if wrap else [line]
        (folder / "memory" / f"{day}.md").write_text("\n".join(body) + "\n")
    with open_memory(folder, tmp / f"{folder.name}-state") as memory:
        found = memory.reviewer.run(kinds=("promote",)).proposals
    top = found[:20]
    durable = sum(i["label"] == "durable" for i in items)
    proposed = sum(label.get(first_line(p.citations[-1])) == "durable" for p in found)
    texts = sorted(re.sub(r" \(memory/[^()]*\)$", "", p.text) for p in found)
    if wrap is not None:
        return {f"promotions_wrapped_at_{wrap}": len(found), "wrapped_texts": texts}
    return {
        "promotion_texts": texts,
        "labelled": len(items),
        "labelled_durable": durable,
        "promotions_proposed": len(found),
        "promote_top20_precision": round(
            sum(label.get(first_line(p.citations[-1])) == "durable" for p in top)
            / max(len(top), 1),
            3,
        ),
        "promote_precision_all": round(proposed / max(len(found), 1), 3),
        "durable_proposed": round(proposed / durable, 3),
    }


def reversal_set(tmp: Path) -> dict:
    """bench/reversals.json: each reversal's older statement on a day in September or
    October, its newer one in November, among the task pairs (each task on its own day)
    and filler; a conflict proposal is right when it cites exactly one pair."""
    data = json.loads((HERE / "reversals.json").read_text())
    folder = tmp / "reversals"
    (folder / "memory").mkdir(parents=True)
    days: dict[str, list[str]] = {}
    start = dt.date(2026, 9, 1)
    for n, pair in enumerate(data["reversals"]):
        days.setdefault(str(start + dt.timedelta(days=n)), []).append(pair["older"])
        days.setdefault(str(start + dt.timedelta(days=61 + n)), []).append(pair["newer"])
    for n, (a, b) in enumerate(data["tasks"]):
        days.setdefault(str(start + dt.timedelta(days=n)), []).append(a)
        days.setdefault(str(start + dt.timedelta(days=70 + n)), []).append(b)
    where: dict[str, str] = {}  # a statement's text -> its citation
    for day, lines in days.items():
        body = [f"# {day}", "", "## Notes", ""]
        for line in [*lines, "Lunch was noodles at the place on the corner."]:
            body.append(line if line.startswith("- ") else f"- {line}")
            where[line] = f"memory/{day}.md#L{len(body)}"
        (folder / "memory" / f"{day}.md").write_text("\n".join(body) + "\n")
    with open_memory(folder, tmp / "reversals-state") as memory:
        found = updates_found(memory)
    pairs = {frozenset((where[p["older"]], where[p["newer"]])): p["phrasing"]
             for p in data["reversals"]}  # fmt: skip
    tasks = {where[t] for pair in data["tasks"] for t in pair}
    cited = [frozenset(first_line(c) for c in pair) for pair in found]
    right = [c for c in cited if c in pairs]
    missed: dict[str, int] = {}
    for pair, phrasing in pairs.items():
        if pair not in cited:
            missed[phrasing] = missed.get(phrasing, 0) + 1
    return {
        "reversal_pairs": len(pairs),
        "reversal_phrasings": len(set(pairs.values())),
        "reversal_conflicts_proposed": len(found),
        "reversal_recall": round(len(set(right)) / len(pairs), 3),
        "reversal_precision": round(len(right) / max(len(found), 1), 3),
        "reversals_missed_by_phrasing": missed,
        "task_pairs": len(data["tasks"]),
        "task_conflicts": sum(bool(c & tasks) for c in cited),
    }


def vault_review(tmp: Path, files: int, provider: str) -> dict:
    vault = make_vault(tmp / "vault", files)
    daemon, sock = start_daemon(tmp, "vault", vault, "review: {enabled: false}\n")
    try:
        _wait_indexed(sock)
        qs = queries(60)
        before = _latencies(sock, qs)
        answer: dict = {}

        def run_review() -> None:
            with Client(sock, timeout=600) as c:
                answer.update(c.call("memory_review", {}))

        started = time.perf_counter()
        thread = threading.Thread(target=run_review)
        thread.start()
        time.sleep(0.2)
        during = _latencies(sock, qs)
        thread.join()
        took = time.perf_counter() - started
    finally:
        daemon.terminate()
        daemon.wait(30)
    out = {"vault_files": files, "vault_review_s": round(took, 1),
           "vault_proposals": answer.get("count")}  # fmt: skip
    for name, figures in (("before", before), ("during_review", during)):
        for what, values in figures.items():
            out[f"{what}_p50_ms_{name}"] = round(percentile(values, 50), 1)
            out[f"{what}_p95_ms_{name}"] = round(percentile(values, 95), 1)
    if provider != "none":  # the same review in-process, checked by meaning
        out.update(review_cost(vault, tmp / "vault-meaning", provider))
    return out


def with_candidates(vault: Path, decisions: int = 300, core: int = 150) -> Path:
    """``vault`` with ``decisions`` decisions each written on two days (promotion
    candidates, the best 200 of which a review checks by meaning) and a MEMORY.md of
    ``core`` statements: what a review with the local model embeds."""
    import random

    from bench.vault import vocabulary

    rng = random.Random(5)
    words = vocabulary(rng, 3 * (decisions + core))
    notes = sorted((vault / "memory").glob("*.md"))
    for n in range(decisions):
        a, b, c = words[3 * n : 3 * n + 3]
        for note in rng.sample(notes, 2):
            with open(note, "a") as f:
                f.write(f"\n- Decision: the {a} service moves to {b} with {c}.\n")
    lines = [
        f"- The {words[3 * (decisions + n)]} team owns {words[3 * (decisions + n) + 1]} "
        f"and {words[3 * (decisions + n) + 2]}."
        for n in range(core)
    ]
    (vault / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(lines) + "\n")
    return vault


def review_cost(vault: Path, state: Path, provider: str) -> dict:
    """A review checked by meaning, in-process: its time and CPU (every thread's, the
    model's too) at a first start, and again after a restart on the same state folder."""
    out = {}
    for when in ("first_start", "after_restart"):
        with open_memory(vault, state, provider) as memory:
            memory.embedder.embed(["warm up"], "query")  # loading the model is not the review
            started, cpu = time.perf_counter(), time.process_time()
            memory.reviewer.run()
            out[f"vault_review_with_{provider}_model_s_{when}"] = round(
                time.perf_counter() - started, 1
            )
            out[f"vault_review_with_{provider}_model_cpu_s_{when}"] = round(
                time.process_time() - cpu, 1
            )
    return out


def _wait_indexed(sock: Path) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            with Client(sock, timeout=5) as c:
                status = c.call("status", {})
            if status["files"] and not status.get("indexing") and not status["pending_files"]:
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise SystemExit("the vault was not indexed in 600 s")


def _latencies(sock: Path, qs: list[str]) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {"search": [], "flush": []}
    with Client(sock, timeout=60) as c:
        for n, q in enumerate(qs):
            started = time.perf_counter()
            c.call("memory_search", {"query": q})
            took["search"].append((time.perf_counter() - started) * 1000)
            if n % 3 == 0:
                started = time.perf_counter()
                c.call("memory_flush", {"entries": [{"text": f"bench note {n} {time.time()}"}]})
                took["flush"].append((time.perf_counter() - started) * 1000)
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--provider", default="local", help="for the check by meaning (or none)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "review.json")
    ap.add_argument(
        "--cost-only",
        action="store_true",
        help="only the review's time and CPU by meaning, at a first start and after a "
        "restart (in-process), on the --files vault with 300 decisions said on two days "
        "each and a MEMORY.md of 150 statements",
    )
    args = ap.parse_args()
    configure_logging("error", "console")
    result: dict = {"benchmark": "review"}
    with tempfile.TemporaryDirectory(prefix="memd-review-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.cost_only:
            vault = with_candidates(make_vault(tmp / "vault", args.files))
            result.update(vault_files=args.files, **review_cost(vault, tmp / "st", args.provider))
            write_result(result, args.out)
            return 0
        result.update(conflicts(tmp))
        result.update(reversal_set(tmp))
        result.update(promotions(tmp))
        wrapped = promotions(tmp, wrap=80)
        result["promotions_wrapped_at_80"] = wrapped["promotions_wrapped_at_80"]
        result["wrapped_same_as_unwrapped"] = wrapped["wrapped_texts"] == result["promotion_texts"]
        del result["promotion_texts"]
        if args.files:
            result.update(vault_review(tmp, args.files, args.provider))
    result.update(target_conflict_recall=0.9, target_conflict_precision=0.8,
                  target_promote_top20_precision=0.8, target_vault_review_s=60,
                  cpus=os.cpu_count())  # fmt: skip
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
