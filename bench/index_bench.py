"""Index and keyword-search benchmark on a synthetic vault of daily notes.

    python bench/index_bench.py [--files 5000] [--vectors] [--out bench/results/index.json]

Reports full index time, re-index with nothing changed, re-index after one file changed,
in-process keyword search latency (p50/p95 over 200 queries), peak RSS of this process
and of the worker processes, and the database size. Targets (issue 2, 2 cores, keyword
only): full ≤ 6 s, nothing-changed ≤ 0.5 s, search p50 ≤ 5 ms, peak RSS ≤ 200 MB.
With --vectors it then stores a 384-dim vector for every chunk (deterministic random ones:
latency does not depend on what they mean) and reports hybrid search p50/p95 with the
query embedding excluded (issue 4 target: p50 ≤ 20 ms).
When ``qmd`` is on PATH (docs/benchmarks.md says how it was installed), the full index is
then timed beside qmd's (``qmd collection add`` of the same vault), in turn, ``--qmd-pairs``
pairs, each side into a new index: the median of each and of the pairs' ratios (target:
memd ≤ 0.35× qmd), for the library's keyword index and for ``memd index`` as a user runs
it: until it returns (searchable), until what is current is found after it, and with
``--wait``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import qmd  # noqa: E402
from bench.cli_bench import memd_index, write_config  # noqa: E402
from bench.common import percentile, write_result  # noqa: E402
from bench.vault import queries  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.embed.providers import Embedder  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.memory import Memory  # noqa: E402
from memd.search.request import SearchRequest  # noqa: E402


class RandomEmbedder(Embedder):
    """Deterministic unit vectors: latency does not depend on what vectors mean."""

    provider = "bench"
    model = "random-384"

    def embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little") for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(384) for s in seeds])


def hybrid_latency(config, qs: list[str]) -> dict:
    """Hybrid search p50/p95 with a vector for every chunk, query embedding excluded."""
    memory = Memory(config, embedder=RandomEmbedder())
    t = time.perf_counter()
    while memory.embed_step(4096):
        pass
    fill_s = time.perf_counter() - t
    for q in qs:  # embeds each query once (cached), and warms the vector matrix
        memory.search(SearchRequest(q))
    latencies = []
    for q in qs:
        t = time.perf_counter()
        answer = memory.search(SearchRequest(q))
        latencies.append((time.perf_counter() - t) * 1000)
        assert answer.mode == "hybrid", answer.warning
    vectors = len(memory.db.vectors)
    memory.close()
    return {
        "hybrid_vectors": vectors,
        "hybrid_fill_vectors_s": round(fill_s, 1),
        "hybrid_search_p50_ms": round(percentile(latencies, 50), 2),
        "hybrid_search_p95_ms": round(percentile(latencies, 95), 2),
    }


def full_index_s(config_raw: dict, state: Path) -> float:
    """Seconds of the library's full keyword index of the vault into the new ``state``."""
    config = parse_config({**config_raw, "state_dir": str(state)}, env=os.environ)
    memory = Memory(config)
    t = time.perf_counter()
    memory.index()
    elapsed = time.perf_counter() - t
    memory.close()
    return elapsed


def beside_qmd(config_raw: dict, vault: Path, pairs: int) -> dict:
    """memd's full index and qmd's of the same vault in turn, ``pairs`` times, each into
    a new index, so a shared machine's load falls on both alike: the library's keyword
    index, and ``memd index`` as a user runs it (until it returns, searchable; until what
    is current is found after it; and ``--wait``, all of it before returning)."""
    names = ("full_index_paired", "memd_index", "memd_index_until_current", "memd_index_wait")
    mine: dict[str, list[float]] = {name: [] for name in names}
    theirs, theirs_cpu = [], []
    with tempfile.TemporaryDirectory(prefix="memd-index-qmd-") as tmp_name:
        tmp = Path(tmp_name)
        for n in range(pairs):
            mine["full_index_paired"].append(full_index_s(config_raw, tmp / f"state-{n}"))
            returned, _, current = memd_index(write_config(tmp, vault, f"cli-{n}"), tmp)
            mine["memd_index"].append(returned)
            mine["memd_index_until_current"].append(current)
            waited = memd_index(write_config(tmp, vault, f"wait-{n}"), tmp, wait=True)[0]
            mine["memd_index_wait"].append(waited)
            wall, cpu = qmd.index(vault, tmp / f"qmd-home-{n}")
            theirs.append(wall)
            theirs_cpu.append(cpu)
    out = {"qmd_version": qmd.version(), "qmd_pairs": pairs}
    for name, walls in mine.items():
        out[f"{name}_s"] = round(statistics.median(walls), 2)
        out[f"{name.removesuffix('_paired')}_paired_ratio_to_qmd"] = round(
            statistics.median(a / b for a, b in zip(walls, theirs, strict=True)), 3
        )
    out.update(qmd_index_s=round(statistics.median(theirs), 2),
               qmd_index_cpu_s=round(statistics.median(theirs_cpu), 2),
               target_ratio_to_qmd=0.35)  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--vault", type=Path, default=HERE / ".data" / "vault-5000")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "index.json")
    ap.add_argument(
        "--vectors",
        action="store_true",
        help="also time hybrid search with a 384-dim vector for every chunk",
    )
    ap.add_argument(
        "--qmd-pairs", type=int, default=3, help="full indexes beside qmd's, when on PATH"
    )
    args = ap.parse_args()
    configure_logging("warning")
    if args.files != 5000 and args.vault.name == "vault-5000":
        args.vault = HERE / ".data" / f"vault-{args.files}"

    # Generate the vault in a child process so its memory is not counted here.
    subprocess.run(
        [sys.executable, str(HERE / "vault.py"), str(args.vault), str(args.files)], check=True
    )
    vault_bytes = sum(p.stat().st_size for p in args.vault.rglob("*.md"))

    with tempfile.TemporaryDirectory() as state:
        config_raw = {"workspace": str(args.vault), "embeddings": {"provider": "none"}}
        config = parse_config({**config_raw, "state_dir": state}, env=os.environ)
        memory = Memory(config)

        t = time.perf_counter()
        memory.index()
        full_s = time.perf_counter() - t

        t = time.perf_counter()
        memory.index()
        noop_s = time.perf_counter() - t

        names = sorted(os.listdir(args.vault / "memory"))
        target = args.vault / "memory" / names[len(names) // 2]
        original = target.read_text(encoding="utf-8")
        try:
            target.write_text(original + "\n## 23:59 — bench\nOne more line.\n", encoding="utf-8")
            t = time.perf_counter()
            one = memory.index()
            one_s = time.perf_counter() - t
        finally:
            target.write_text(original, encoding="utf-8")
            memory.index()

        latencies, hits = [], 0
        qs = queries(200)
        for q in qs[:20]:  # warm the page cache and statement cache
            memory.search(SearchRequest(q))
        for q in qs:
            t = time.perf_counter()
            answer = memory.search(SearchRequest(q))
            latencies.append((time.perf_counter() - t) * 1000)
            hits += bool(answer.results)

        status = memory.status().as_dict()
        memory.close()
        hybrid = hybrid_latency(config, qs) if args.vectors else None

    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = {
        "benchmark": "index",
        "files": status["files"],
        "vault_mb": round(vault_bytes / 1e6, 1),
        "chunks": status["chunks"],
        "full_index_s": round(full_s, 2),
        "reindex_nothing_changed_s": round(noop_s, 3),
        "reindex_one_changed_s": round(one_s, 3),
        "one_changed_report": {"changed": one.changed, "unchanged": one.unchanged},
        "search_p50_ms": round(percentile(latencies, 50), 2),
        "search_p95_ms": round(percentile(latencies, 95), 2),
        "queries": len(qs),
        "queries_with_results": hits,
        **(hybrid or {}),
        "peak_rss_mb": round(self_rss, 1),
        "peak_rss_worker_mb": round(child_rss, 1),
        "database_mb": round(status["database_bytes"] / 1e6, 1),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    # After the peak RSS above: qmd's processes would count as this one's children.
    if qmd.on_path() and args.qmd_pairs > 0:
        with tempfile.TemporaryDirectory(prefix="memd-qmd-probe-") as probe:
            why_not = qmd.problem(Path(probe))
        if why_not is None:
            result.update(beside_qmd(config_raw, args.vault, args.qmd_pairs))
        else:
            result["qmd"] = f"not run: {why_not}"
    result["load_average"] = round(os.getloadavg()[0], 2)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
