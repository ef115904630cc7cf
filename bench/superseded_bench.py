"""Newer facts first (issue 30, item 3): does the newer statement of a reversed fact rank
above the older one, before a review and after it?

    python bench/superseded_bench.py [--out FILE.json]

Twenty facts that changed, written for this bench: an older daily note states one value
(beside an unrelated line, under a heading of its own), a later note another, and a
question asks for the current value. Each is a small workspace of its own with ten
unrelated daily notes, searched by keyword (``embeddings: none``). For each fact:

- ``before``: the newer note ranks above the older one, with no review run;
- ``after``: the same, after ``memory_review`` (the review keeps what it finds superseded
  in the index; a result holding such a statement ranks lower and says by what);
- ``detected``: the older result carries ``superseded_by`` (today's conflict detector
  finds the reversal);
- ``collateral``: a question about the older note's unrelated line still finds that note
  first after the review (a superseded statement must not bury what else a chunk says).

The same runs are repeated with other settings of ``memd.search.superseded`` (the share a
marked result keeps, and whether it goes just below a near replacement) to pick them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import memd.search.superseded as superseded  # noqa: E402
from bench.common import write_result  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402
from memd.serve.methods import call  # noqa: E402

# (heading of the older note, older statement, newer statement, question,
#  the older note's unrelated line, a question for that line)
FACTS = [
    (
        "Infra",
        "The deploy target is the blue cluster.",
        "The deploy target is now the green cluster.",
        "what is the deploy target",
        "Grafana dashboards were cleaned up.",
        "grafana dashboards",
    ),
    (
        "Tooling",
        "The CI provider is Jenkins.",
        "The CI provider is now Buildkite.",
        "which CI provider do we use",
        "Ordered two new monitors for the desk.",
        "new monitors",
    ),
    (
        "Team",
        "Dana is the team lead for payments.",
        "Omar is the team lead for payments.",
        "who is the team lead for payments",
        "Booked the room for the quarterly retro.",
        "quarterly retro room",
    ),
    (
        "Sessions",
        "We use Redis for sessions.",
        "We no longer use Redis for sessions.",
        "do we use redis for sessions",
        "The staging certificate expires in June.",
        "staging certificate expiry",
    ),
    (
        "People",
        "Lena prefers tea in the afternoon.",
        "Lena prefers coffee in the afternoon now.",
        "what does lena drink in the afternoon",
        "The printer on floor two is fixed.",
        "printer floor two",
    ),
    (
        "Database",
        "The primary database version is Postgres 14.",
        "The primary database version is now Postgres 16.",
        "which primary database version do we run",
        "Interviewed a backend candidate from Lyon.",
        "backend candidate from Lyon",
    ),
    (
        "Rituals",
        "The weekly planning meeting is on Monday.",
        "The weekly planning meeting is now on Tuesday.",
        "when is the weekly planning meeting",
        "Cleaned out the shared drive folder for contracts.",
        "contracts folder shared drive",
    ),
    (
        "Support",
        "Support hours are 9 to 17.",
        "Support hours are now 8 to 16.",
        "what are the support hours",
        "The new hire laptop arrived.",
        "new hire laptop",
    ),
    (
        "Backups",
        "The backup bucket is s3-eu-nightly.",
        "The backup bucket is now r2-cold.",
        "which bucket holds the backups",
        "Renewed the domain for the marketing site.",
        "marketing site domain renewal",
    ),
    (
        "API",
        "The public API default version is v2.",
        "The public API default version is now v3.",
        "what is the public api default version",
        "Wrote the onboarding checklist draft.",
        "onboarding checklist",
    ),
    (
        "Release",
        "The release manager is Hana.",
        "The release manager is now Ivo.",
        "who is the release manager",
        "The office heating was repaired.",
        "office heating",
    ),
    (
        "Design",
        "The design tool is Sketch.",
        "The design tool is now Figma.",
        "which design tool do we use",
        "Sent the invoice for the Berlin workshop.",
        "Berlin workshop invoice",
    ),
    (
        "Sprints",
        "The sprint length is two weeks.",
        "The sprint length is now one week.",
        "how long is a sprint",
        "The parking permit was renewed.",
        "parking permit",
    ),
    (
        "Paging",
        "The paging tool is Opsgenie.",
        "The paging tool is now PagerDuty.",
        "which paging tool do we use",
        "Tried the new ramen place near the station.",
        "ramen place near the station",
    ),
    (
        "Lunch",
        "The Friday lunch caterer is Curry Leaf.",
        "The Friday lunch caterer is now Taco Loco.",
        "who caters the friday lunch",
        "Updated the travel policy page.",
        "travel policy page",
    ),
    (
        "Search",
        "The search backend is Elasticsearch.",
        "The search backend is now OpenSearch.",
        "what is the search backend",
        "Gave a talk at the local Python meetup.",
        "python meetup talk",
    ),
    (
        "Billing",
        "Invoices are sent on the first of the month.",
        "Invoices are now sent on the fifth of the month.",
        "when are invoices sent",
        "Replaced the batteries in the meeting room remote.",
        "meeting room remote batteries",
    ),
    # Phrasings today's detector may not read as one subject changing value.
    (
        "Queue",
        "Decided to use RabbitMQ for the invoice event queue instead of Kafka.",
        "Switched the invoice event queue from RabbitMQ to AWS SQS to drop the broker upkeep.",
        "which queue do we use for invoice events",
        "Lunch with Ana at the noodle bar.",
        "noodle bar lunch",
    ),
    (
        "Hosting",
        "Our docs site is hosted on Netlify.",
        "Moved the docs site hosting off Netlify and onto Cloudflare Pages.",
        "where is the docs site hosted",
        "The fire drill is next Thursday.",
        "fire drill",
    ),
    (
        "Editor",
        "Most of the team writes code in VS Code.",
        "The team dropped VS Code; everyone writes code in Zed now.",
        "which editor does the team write code in",
        "Signed the lease extension for the office.",
        "office lease extension",
    ),
]

FILLER = [
    "Paired with Omar on the billing export.",
    "The office plants were watered.",
    "Read a paper on vector search.",
    "Planned the team offsite in Porto.",
    "Fixed a flaky test in the importer.",
    "Reviewed the accessibility audit notes.",
    "Sketched the roadmap for the mobile app.",
    "Met the auditors about the yearly report.",
    "Migrated the wiki pages about hiring.",
    "Drafted the newsletter for customers.",
]

OLDER, NEWER = "memory/2026-04-07.md", "memory/2026-05-12.md"

# (name, share a marked result keeps, a near replacement goes above it)
SETTINGS = [("off", 1.0, False), ("factor 0.9", 0.9, False), ("factor 0.8", 0.8, False),
            ("factor 0.7", 0.7, False), ("factor 0.8 + near 0.5", 0.8, True)]  # fmt: skip


def workspace(root: Path, fact: tuple) -> Path:
    heading, old, new, _, aside, _ = fact
    folder = root / "ws"
    (folder / "memory").mkdir(parents=True)
    for n, line in enumerate(FILLER):
        (folder / f"memory/2026-03-{n + 10:02d}.md").write_text(
            f"# 2026-03-{n + 10:02d}\n\n- {line}\n"
        )
    (folder / OLDER).write_text(f"# 2026-04-07\n\n## {heading}\n- {old}\n- {aside}\n")
    (folder / NEWER).write_text(f"# 2026-05-12\n\n## Notes\n- {new}\n- Caught up on email.\n")
    return folder


def order(memory: Memory, question: str) -> tuple[bool, dict | None]:
    """Whether the newer note ranks above the older one, and the older one's result."""
    results = memory.search(question, min_score=0, max_results=10).results
    paths = [r.path for r in results]
    old = next((r.as_dict() for r in results if r.path == OLDER), None)
    if NEWER not in paths:
        return False, old
    return OLDER not in paths or paths.index(NEWER) < paths.index(OLDER), old


def first(memory: Memory, question: str) -> bool:
    results = memory.search(question, min_score=0, max_results=10).results
    return bool(results) and results[0].path == OLDER


def run_fact(fact: tuple) -> dict:
    question, aside_question = fact[3], fact[5]
    with tempfile.TemporaryDirectory(prefix="memd-superseded-") as tmp:
        root = Path(tmp)
        folder = workspace(root, fact)
        raw = {"workspace": str(folder), "state_dir": str(root / "state"),
               "embeddings": {"provider": "none"}}  # fmt: skip
        with Memory(parse_config(raw, env={"HOME": str(root)})) as memory:
            memory.index()
            before, _ = order(memory, question)
            call(lambda name: memory, "memory_review", {})
            out = {"question": question, "before": before, "after": {}, "collateral": {}}
            for name, keep, near in SETTINGS:
                superseded.SUPERSEDED, superseded.NEAR = keep, (0.5 if near else 2.0)
                after, old = order(memory, question)
                out["after"][name] = after
                out["collateral"][name] = first(memory, aside_question)
                out["detected"] = bool(old and old.get("superseded_by"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "superseded.json")
    args = parser.parse_args()
    configure_logging("warning")
    keep, near = superseded.SUPERSEDED, superseded.NEAR
    try:
        runs = [run_fact(fact) for fact in FACTS]
    finally:
        superseded.SUPERSEDED, superseded.NEAR = keep, near
    shipped = f"factor {keep:g} + near {near:g}"
    result: dict = {
        "facts": len(FACTS),
        "mode": "keyword (embeddings: none)",
        "newer_first_before_review": sum(r["before"] for r in runs),
        "detected_by_review": sum(r["detected"] for r in runs),
        "newer_first_after_review": sum(r["after"][shipped] for r in runs),
        "aside_still_first_after_review": sum(r["collateral"][shipped] for r in runs),
        "detected_newer_first_before": sum(r["before"] for r in runs if r["detected"]),
        "detected_newer_first_after": sum(r["after"][shipped] for r in runs if r["detected"]),
    }
    for name, _, _ in SETTINGS:
        result[f"after [{name}]"] = sum(r["after"][name] for r in runs)
        result[f"aside first [{name}]"] = sum(r["collateral"][name] for r in runs)
    result["missed_after_review"] = [r["question"] for r in runs if not r["after"][shipped]]
    result["undetected"] = [r["question"] for r in runs if not r["detected"]]
    write_result(result, args.out)


if __name__ == "__main__":
    main()
