"""Recall that understands time: a generated year of daily notes and time-scoped questions.

    python bench/time_bench.py [--modes keyword,auto] [--out bench/results/time.json]

Generates (deterministically, ``random.Random(13)``) a workspace of one year of daily
notes, 2025-01-01 to 2025-12-31, where the same kind of fact comes back in different
months with different values (the hotel booked, the flight taken, the book club's pick, a
release shipped on a given day, who was on call that week), and asks questions scoped by
time ("which hotel did we book in March", "who was on call last week", "上个月的季度会议")
against ``now`` = 2025-12-31 18:00. A question is a hit at 1 when the first result holds
the line of the expected fact. R@1 is printed with the time reading (``search.time_words``)
and without it.

It also measures the "newer facts win" question: facts that change during the year (the
deploy target, the CI provider, ...) asked without time words, where the newest statement
should come first, under temporal decay, newer-first among near-duplicates, both, and
neither. Writes ``bench/results/time.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402

YEAR = 2025
NOW = f"{YEAR}-12-31T18:00:00"  # a Wednesday
MONTHS = ("January February March April May June July August September October November "
          "December").split()  # fmt: skip
CN_MONTHS = "一 二 三 四 五 六 七 八 九 十 十一 十二".split()

PEOPLE = ["Ana", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun",
          "Kofi", "Lena", "Mateo", "Nia", "Omar", "Priya"]  # fmt: skip
CITIES = ["Lisbon", "Berlin", "Oslo", "Kyoto", "Lima", "Dublin", "Porto", "Vienna", "Seoul",
          "Austin", "Krakow", "Tallinn", "Nairobi", "Quito"]  # fmt: skip
HOTELS = ["Hotel Adlon", "the Grand Meridian", "the Linden Inn", "Hotel Aurora", "the Harbour View",
          "the Old Mill Lodge", "Hotel Bellevue", "the Copper Kettle Inn", "the Palmhouse",
          "Hotel Sora", "the Northern Star", "the Riverside Suites"]  # fmt: skip
AIRLINES = ["Lufthansa", "KLM", "Finnair", "Iberia", "TAP", "Aer Lingus", "SAS", "Swiss",
            "Austrian", "LOT", "Icelandair", "Air Baltic"]  # fmt: skip
BOOKS = ["Dune", "Middlemarch", "The Overstory", "Piranesi", "Klara and the Sun", "Beloved",
         "Pachinko", "The Remains of the Day", "Station Eleven", "Circe", "Stoner",
         "The Left Hand of Darkness"]  # fmt: skip
CLIENTS_CN = ["华夏银行", "东方航空", "云帆科技", "金桥物流", "天成医药", "远景能源", "星河传媒",
              "北辰地产", "海川电子", "博雅教育", "长风汽车", "青松食品"]  # fmt: skip
COMPONENTS = ["billing", "search", "auth", "the importer", "the mobile app", "reporting",
              "the scheduler", "notifications"]  # fmt: skip
TOPICS = ["rust async", "postgres vacuum", "team rituals", "OKR drafts", "load testing",
          "accessibility", "on-device models", "pricing pages"]  # fmt: skip
ITEMS = ["standing desk", "USB-C dock", "conference speaker", "whiteboard", "monitor arm",
         "label printer", "coffee grinder", "router"]  # fmt: skip
FILLER = [
    "Standup: {p} is working on {c}.",
    "Reviewed PR #{n} for {c}.",
    "Lunch with {p} at the noodle bar.",
    "Read an article about {t}.",
    "Emailed {p} about {t}.",
    "Paired with {p} on {c} for an hour.",
    "Cleared the inbox and triaged {n} tickets.",
    "Ran {k} km before work.",
    "Sketched ideas for {c}.",
    "Video chat with {p} about {t}.",
]

# Facts that change during the year, asked without time words: the newest should win.
CHANGING = [
    ("deploy target", "The deploy target is now {v}.", ["staging-eu", "blue cluster",
     "green cluster", "production-us", "the canary pool"],
     "what is the deploy target"),
    ("CI provider", "Switched the CI provider to {v}.", ["Jenkins", "GitLab CI", "Buildkite",
     "GitHub Actions", "CircleCI"], "which CI provider do we use"),
    ("team lead", "{v} is the team lead for the platform squad from today.", ["Dana", "Omar",
     "Priya", "Mateo"], "who is the team lead for the platform squad"),
    ("database", "The primary database version is {v}.", ["Postgres 14", "Postgres 15",
     "Postgres 16", "Postgres 17"], "which primary database version do we run"),
    ("standup time", "Daily standup moves to {v}.", ["9:30", "10:00", "9:15", "10:30"],
     "when is the daily standup"),
    ("office wifi", "The office wifi password rotated; the network is now called {v}.",
     ["Falcon", "Heron", "Osprey", "Kestrel", "Merlin"], "what is the office wifi network called"),
    ("on-call tool", "Paging moved to {v} for the on-call rotation.", ["PagerDuty", "Opsgenie",
     "Grafana OnCall", "incident.io"], "which paging tool does the on-call rotation use"),
    ("coffee supplier", "New coffee beans supplier: {v}.", ["Bean Brothers", "Roast House",
     "Kaffa Co", "Hill Top Roasters"], "who is our coffee beans supplier"),
    ("support hours", "Support hours are now {v}.", ["8 to 16", "9 to 17", "9 to 18",
     "7 to 15"], "what are the support hours"),
    ("design tool", "Design files move to {v}; the old tool is read-only.", ["Sketch", "Figma",
     "Penpot", "Framer"], "which design tool holds the design files"),
    ("sprint length", "Sprints are {v} long from now on.", ["two weeks", "one week",
     "three weeks", "ten days"], "how long are sprints"),
    ("lunch order", "Friday team lunch comes from {v} now.", ["Pho Saigon", "Curry Leaf",
     "Taco Loco", "Green Bowl"], "where does the Friday team lunch come from"),
    ("backup bucket", "Nightly backups now go to the {v} bucket.", ["s3-eu-backups",
     "gcs-archive", "b2-cold", "r2-nightly"], "which bucket do the nightly backups go to"),
    ("api version", "The public API default version is {v}.", ["v2", "v3", "2025-04", "2025-09"],
     "what is the public API default version"),
    ("release manager", "{v} takes over as release manager.", ["Hana", "Ivo", "Jun", "Kofi"],
     "who is the release manager"),
    ("error budget", "Error budget for checkout set to {v}.", ["99.5%", "99.9%", "99.95%",
     "99.8%"], "what is the error budget for checkout"),
]  # fmt: skip


@dataclass
class Question:
    text: str
    path: str
    line: int
    kind: str  # time | changing


def days_of_year() -> list[dt.date]:
    start = dt.date(YEAR, 1, 1)
    return [start + dt.timedelta(days=n) for n in range(365)]


def generate(folder: Path) -> list[Question]:
    """Write the workspace under ``folder``; return the questions with their answers."""
    rng = random.Random(13)
    notes: dict[dt.date, list[str]] = {d: [] for d in days_of_year()}
    where: dict[tuple, tuple[dt.date, str]] = {}  # a fact's key: its day and its line

    def fact(day: dt.date, text: str, key: tuple) -> None:
        notes[day].append(text)
        where[key] = (day, text)

    def day_in(month: int, lo: int = 3, hi: int = 26) -> dt.date:
        return dt.date(YEAR, month, rng.randint(lo, hi))

    hotels, airlines, books, clients = (rng.sample(x, 12) for x in (HOTELS, AIRLINES, BOOKS,
                                                                    CLIENTS_CN))  # fmt: skip
    for m in range(1, 13):
        city = rng.choice(CITIES)
        fact(
            day_in(m), f"Booked the hotel for the offsite: {hotels[m - 1]} in {city}.", ("hotel", m)
        )
        fact(day_in(m), f"Flew {airlines[m - 1]} to {rng.choice(CITIES)} for the client visit.",
             ("flight", m))  # fmt: skip
        fact(day_in(m), f"The book club picked {books[m - 1]} for next month.", ("book", m))
        fact(day_in(m), f"季度会议：和{clients[m - 1]}讨论了续约。", ("client", m))
    for week_monday in (d for d in days_of_year() if d.weekday() == 0):
        person = rng.choice(PEOPLE)
        fact(week_monday, f"On call this week: {person}.", ("oncall", week_monday))
    # Releases on about thirty days, numbered in order.
    release_days = sorted([*rng.sample(days_of_year()[:-3], 30), dt.date(YEAR, 12, 29)])
    for n, day in enumerate(release_days, start=1):
        fact(day, f"Released version 4.{n}.0 to production.", ("release", day))
    # Relative questions need facts on these days (now is 2025-12-31).
    fact(dt.date(YEAR, 12, 30), f"Ordered a {rng.choice(ITEMS)} for the office.", ("order", 1))
    for n, day in enumerate(rng.sample(days_of_year()[:-5], 20)):
        fact(day, f"Ordered a {ITEMS[n % len(ITEMS)]} for the office.", ("order-old", n))
    fact(dt.date(YEAR, 12, 28), f"{rng.choice(PEOPLE)} gave a talk on {rng.choice(TOPICS)}.",
         ("talk", 1))  # fmt: skip
    for n, day in enumerate(rng.sample(days_of_year()[:-5], 15)):
        fact(day, f"{PEOPLE[n]} gave a talk on {TOPICS[n % len(TOPICS)]}.", ("talk-old", n))
    # Facts that change: 4-5 statements each through the year, the last in the autumn.
    for name, template, values, _ in CHANGING:
        months = sorted(rng.sample(range(1, 11), len(values)))
        for n, (month, value) in enumerate(zip(months, values, strict=True)):
            fact(day_in(month), template.format(v=value), ("changing", name, n))
    # Filler, a few lines a day.
    for lines in notes.values():
        for _ in range(rng.randint(2, 4)):
            filler = rng.choice(FILLER).format(p=rng.choice(PEOPLE), c=rng.choice(COMPONENTS),
                                               t=rng.choice(TOPICS), n=rng.randint(2, 900),
                                               k=rng.randint(3, 15))  # fmt: skip
            lines.insert(rng.randint(0, len(lines)), filler)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "memory").mkdir(parents=True)
    (folder / "MEMORY.md").write_text(
        "# Memory\n\n## Team\n- The platform squad ships on Tuesdays.\n"
        "- Expense reports go to finance by the 5th.\n"
    )
    for day, lines in notes.items():
        body = [f"# {day.isoformat()}", "", "## Log"] + [f"- {text}" for text in lines]
        (folder / f"memory/{day.isoformat()}.md").write_text("\n".join(body) + "\n")
    return questions(
        {key: day for key, (day, _) in where.items()},
        {key: (day, 4 + notes[day].index(text)) for key, (day, text) in where.items()},
    )


def questions(where: dict[tuple, dt.date], line_of: dict[tuple, tuple]) -> list[Question]:
    """The questions, each with the file and line of the fact that answers it."""
    qs: list[Question] = []

    def ask(text: str, key: tuple, kind: str = "time") -> None:
        day, line = line_of[key]
        qs.append(Question(text, f"memory/{day.isoformat()}.md", line, kind))

    for m in (2, 3, 5, 7, 9, 11):
        ask(f"which hotel did we book in {MONTHS[m - 1]}", ("hotel", m))
    for m in (1, 4, 6, 8, 10):
        ask(f"where did we fly for the client visit in {MONTHS[m - 1]}?", ("flight", m))
    for m in (3, 6, 9, 12):
        ask(f"what did the book club pick during {MONTHS[m - 1]} {YEAR}", ("book", m))
    ask("which hotel did we book last month", ("hotel", 11))
    ask("which airline did we take for the client visit in August", ("flight", 8))
    for key in [k for k in where if k[0] == "release"][::4]:
        day = where[key]
        style = len(qs) % 3
        when = (f"on {day.day} {MONTHS[day.month - 1]}", f"on {MONTHS[day.month - 1]} {day.day}",
                f"on {day.isoformat()}")[style]  # fmt: skip
        ask(f"which version did we release {when}", key)
    ask("which version did we release since Monday", ("release", dt.date(YEAR, 12, 29)))
    mondays = sorted(k for k in where if k[0] == "oncall")
    ask("who was on call last week", ("oncall", dt.date(YEAR, 12, 22)))
    ask("who was on call two weeks ago", ("oncall", dt.date(YEAR, 12, 15)))
    for key in mondays[5:40:7]:
        day = key[1]
        ask(f"who was on call in the week of {day.day} {MONTHS[day.month - 1]}", key)
    ask("what did we order for the office yesterday", ("order", 1))
    ask("who gave a talk three days ago", ("talk", 1))
    for m in (3, 6, 11):
        ask(f"{CN_MONTHS[m - 1]}月的季度会议", ("client", m))
    ask("上个月的季度会议", ("client", 11))
    ask(f"{YEAR}年8月 季度会议", ("client", 8))
    for name, _, values, question in CHANGING:
        ask(question, ("changing", name, len(values) - 1), "changing")
    return qs


def first_hit(results: list, q: Question) -> bool:
    return (
        bool(results)
        and results[0].path == q.path
        and (results[0].start_line <= q.line <= results[0].end_line)
    )


def run(folder: Path, work: Path, qs: list[Question], mode: str, search: dict) -> dict:
    """R@1 over the time questions and the changing-fact questions."""
    provider = "none" if mode == "keyword" else "local"
    config = parse_config(
        {
            "workspace": str(folder),
            "state_dir": str(work / f"state-{provider}"),
            "embeddings": {"provider": provider, "query_timeout_s": 60},
            "search": search,
        },
        env=os.environ,
    )
    with Memory(config) as memory:
        memory.index()
        memory.embed_all()
        hits: dict[str, list[bool]] = {"time": [], "changing": []}
        misses = []
        for q in qs:
            answer = memory.search(q.text, mode=mode, max_results=5, min_score=0, now=NOW)
            ok = first_hit(answer.results, q)
            hits[q.kind].append(ok)
            if not ok:
                misses.append(q.text)
    return {
        **{f"{kind} R@1": round(sum(h) / len(h), 3) for kind, h in hits.items()},
        "missed": misses,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="keyword", help="keyword and/or auto (local model)")
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "time")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "time.json")
    ap.add_argument("--search", type=json.loads, default={}, help="search settings, as JSON")
    args = ap.parse_args()
    configure_logging("warning")
    folder = args.work / "workspace"
    qs = generate(folder)
    result: dict = {"benchmark": "time", "notes": 365, "now": NOW,
                    "time_questions": sum(q.kind == "time" for q in qs),
                    "changing_questions": sum(q.kind == "changing" for q in qs)}  # fmt: skip
    variants = {
        "default (time reading, newer first)": {},
        "without time reading": {"time_words": False},
        "decay instead of newer first": {"decay": True, "newer_first": False},
        "decay and newer first": {"decay": True},
        "neither decay nor newer first": {"newer_first": False},
    }
    for mode in args.modes.split(","):
        for name, search in variants.items():
            t = time.perf_counter()
            figures = run(folder, args.work, qs, mode, {**args.search, **search})
            figures["s"] = round(time.perf_counter() - t, 1)
            result[f"{mode}: {name}"] = figures
            print(mode, name, {k: v for k, v in figures.items() if k != "missed"})
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
