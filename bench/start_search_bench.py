"""Searches through a daemon in the seconds after its first pass, while it finds what is
current (every note read once, at start).

    python bench/start_search_bench.py [--files 5000] [--seconds 15] [--tree DIR]
                                       [--out bench/results/start-search.json]

Generates the keyword-only vault of bench/vault.py, starts ``memd serve`` on it with a new
state folder (the code of ``--tree``, default this checkout), waits until its first pass is
done, then asks ``memory_search`` for a rare word ten times a second for ``--seconds`` and
reports the latency's p50, p95 and largest. Run it with ``--tree`` on an unpacked earlier
tree (``git archive REV memd | tar -x -C DIR``) to compare, in turn, on the same load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402


def first_pass_done(sock: Path, files: int, proc: subprocess.Popen, timeout: float) -> float:
    """Seconds until the daemon on ``sock`` has indexed every file."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit("memd serve exited early")
        try:
            with Client(sock, timeout=5) as c:
                status = c.call("status")
                if status["indexing"] is None and status["files"] > files:
                    return time.monotonic() - started
        except MemdError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"the first pass took over {timeout:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--tree", type=Path, default=HERE.parent, help="where memd's code is")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "start-search.json")
    args = ap.parse_args()
    vault = make_vault(HERE / ".data" / f"vault-{args.files}", args.files)
    query = queries(3)[1]
    with tempfile.TemporaryDirectory(prefix="memd-start-") as tmp_name:
        tmp = Path(tmp_name)
        sock = tmp / "memd.sock"
        config = tmp / "config.yaml"
        config.write_text(f"workspace: {vault}\nstate_dir: {tmp / 'state'}\nsocket: {sock}\n"
                          "embeddings: {provider: none}\n")  # fmt: skip
        env = {**os.environ, "HOME": str(tmp), "PYTHONPATH": str(args.tree.resolve())}
        serve = [sys.executable, "-m", "memd", "--config", str(config), "serve"]
        proc = subprocess.Popen(serve, cwd=args.tree, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            pass_s = first_pass_done(sock, args.files, proc, 600.0)
            latencies = []
            with Client(sock, timeout=30) as c:
                end = time.monotonic() + args.seconds
                while time.monotonic() < end:
                    t = time.perf_counter()
                    c.call("memory_search", {"query": query})
                    latencies.append((time.perf_counter() - t) * 1000)
                    time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(30)
    write_result(
        {
            "benchmark": "start-search",
            "tree": str(args.tree.resolve()),
            "files": args.files,
            "first_pass_s": round(pass_s, 1),
            "searches": len(latencies),
            "search_p50_ms": round(percentile(latencies, 50), 1),
            "search_p95_ms": round(percentile(latencies, 95), 1),
            "search_max_ms": round(max(latencies), 1),
            "cpus": os.cpu_count(),
            "load_average": round(os.getloadavg()[0], 2),
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
