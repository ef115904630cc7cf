"""Scale: a 20,000-note Obsidian-style vault (~100 MB), keyword only.

    python bench/scale_bench.py [--notes 20000] [--out bench/results/scale.json]

Reports the first full index (as `memd index` runs it, in its own process, with its peak
RSS), a daemon restart with nothing changed (process start to the first search answered),
and keyword search p50/p95 over the socket. Targets (issue 6): index ≤ 60 s, peak RSS
≤ 400 MB, restart searchable ≤ 3 s, search p95 ≤ 30 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from bench.vault import queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=20000)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "scale.json")
    args = ap.parse_args()
    vault = HERE / ".data" / f"obsidian-{args.notes}"
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, str(HERE / "vault.py"), str(vault), str(args.notes), "obsidian"],
        check=True,
    )
    generate_s = time.perf_counter() - t
    vault_bytes = sum(p.stat().st_size for p in vault.rglob("*.md"))

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.yaml"
        sock = Path(tmp) / "memd.sock"
        config.write_text(
            f"workspace: {tmp}/ws\nextra_paths: [{vault}]\nstate_dir: {tmp}/state\n"
            f"socket: {sock}\nembeddings: {{provider: none}}\nlog: {{level: warning}}\n"
        )
        (Path(tmp) / "ws").mkdir()
        base = [sys.executable, "-m", "memd", "--config", str(config)]
        t = time.perf_counter()
        out = subprocess.run([*base, "index", "--json"], capture_output=True, text=True, check=True)
        index_s = time.perf_counter() - t
        report = json.loads(out.stdout)
        peak_index_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

        t = time.perf_counter()  # a restart: the index exists and nothing changed
        proc = subprocess.Popen([*base, "serve"])
        try:
            while True:
                try:
                    with Client(sock, timeout=5) as c:
                        # Answered from the existing index: restart is done.
                        if c.call("memory_search", query=queries(1)[0])["index"]["generation"]:
                            break
                except MemdError:
                    time.sleep(0.02)
            restart_s = time.perf_counter() - t
            latencies = []
            with Client(sock) as c:
                # Time searches once the start-up sweep (a stat of every file) is done.
                while c.call("memory_search", query="x")["index"]["stale"]:
                    time.sleep(0.1)
                for q in queries(220)[:20]:
                    c.call("memory_search", query=q)
                for q in queries(220)[20:]:
                    t = time.perf_counter()
                    c.call("memory_search", query=q)
                    latencies.append((time.perf_counter() - t) * 1000)
        finally:
            proc.terminate()
            proc.wait(10)

    write_result(
        {
            "benchmark": "scale",
            "notes": report["added"],
            "vault_mb": round(vault_bytes / 1e6, 1),
            "generate_s": round(generate_s, 1),
            "full_index_s": round(index_s, 1),
            "chunks": report["chunks"],
            "index_peak_rss_mb": round(peak_index_mb, 1),
            "restart_to_first_search_s": round(restart_s, 2),
            "search_p50_ms": round(percentile(latencies, 50), 2),
            "search_p95_ms": round(percentile(latencies, 95), 2),
            "cpus": os.cpu_count(),
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
