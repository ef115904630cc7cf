"""Daemon benchmark: a real `memd serve` on the 5,000-note vault, measured over its socket.

    python bench/daemon_bench.py [--idle-seconds 60] [--out bench/results/daemon.json]

Reports save-to-searchable latency (edit a file, poll memory_search until the new text is
found; p50/p95 over 50 edits, default 300 ms debounce), memory_search round trip p50/p95
with 1 and 8 concurrent clients, idle CPU over a quiet minute, and the daemon's RSS after
indexing, and memory_flush latency (request to searchable) over 200 flushes with 1 and 8
clients. Targets: save-to-searchable p95 ≤ 1 s, round trip p50 ≤ 10 ms with one client,
idle CPU < 1 %, RSS ≤ 200 MB (issue 3); flush p95 ≤ 50 ms with one client (issue 5).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from bench.vault import queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def round_trips(sock: Path, qs: list[str], clients: int) -> list[float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(part: list[str]) -> None:
        with Client(sock) as c:
            for q in part:
                t = time.perf_counter()
                c.call("memory_search", query=q)
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=worker, args=(qs[i::clients],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def flushes(sock: Path, count: int, clients: int, tag: str) -> list[float]:
    """Request-to-answer time of ``count`` flushes; the answer comes once it is indexed."""
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        with Client(sock) as c:
            for i in range(count // clients):
                text = f"{tag} flush {n}-{i}: the deploy window moves to Thursday."
                t = time.perf_counter()
                c.call("memory_flush", entries=[{"text": text}], date=FLUSH_DATE)
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


FLUSH_DATE = "2030-01-01"  # a note of its own, removed afterwards


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", type=Path, default=HERE / ".data" / "vault-5000")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "daemon.json")
    args = ap.parse_args()
    subprocess.run([sys.executable, str(HERE / "vault.py"), str(args.vault), "5000"], check=True)

    with tempfile.TemporaryDirectory() as tmp:
        sock = Path(tmp) / "memd.sock"
        config = Path(tmp) / "config.yaml"
        config.write_text(
            f"workspace: {args.vault}\nstate_dir: {tmp}/state\nsocket: {sock}\n"
            "log: {level: warning}\nembeddings: {provider: none}\n"
        )
        proc = subprocess.Popen([sys.executable, "-m", "memd", "--config", str(config), "serve"])
        try:
            started = time.perf_counter()
            while True:
                try:
                    with Client(sock, timeout=5) as c:
                        status = c.call("status")
                    if status["files"] >= 5001 and status["pending_files"] == 0:
                        break
                except MemdError:
                    pass
                time.sleep(0.1)
            first_index_s = time.perf_counter() - started
            time.sleep(1)
            rss_after_index = rss_mb(proc.pid)

            # Save to searchable: append a unique word, poll until a search finds it.
            notes = sorted((args.vault / "memory").iterdir())
            latencies = []
            originals = {}
            with Client(sock) as c:
                for i in range(args.edits):
                    path = notes[(i * 97) % len(notes)]
                    originals.setdefault(path, path.read_text(encoding="utf-8"))
                    word = f"zqx{i}marker"
                    t = time.perf_counter()
                    with open(path, "a", encoding="utf-8") as f:
                        f.write(f"\n## 23:59 — bench\n{word}\n")
                    while not c.call("memory_search", query=word, min_score=0)["results"]:
                        time.sleep(0.01)
                    latencies.append((time.perf_counter() - t) * 1000)
                    time.sleep(0.4)
            for path, text in originals.items():
                path.write_text(text, encoding="utf-8")
            time.sleep(1.5)

            qs = queries(400)
            round_trips(sock, qs[:40], 1)  # warm
            one = round_trips(sock, qs[:200], 1)
            eight = round_trips(sock, qs, 8)

            flush_one = flushes(sock, 200, 1, "solo")
            flush_eight = flushes(sock, 200, 8, "octet")
            with Client(sock) as c:  # the last one is searchable
                assert c.call("memory_search", query="octet flush 7-24", min_score=0)["results"]
            (args.vault / "memory" / f"{FLUSH_DATE}.md").unlink()

            cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
            time.sleep(args.idle_seconds)
            idle_pct = (cpu_seconds(proc.pid) - cpu0) / (time.perf_counter() - t0) * 100
            rss_end = rss_mb(proc.pid)
            peak = rss_mb(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            proc.wait(10)

    result = {
        "benchmark": "daemon",
        "files": 5001,
        "start_to_indexed_s": round(first_index_s, 2),
        "save_to_searchable_p50_ms": round(percentile(latencies, 50), 1),
        "save_to_searchable_p95_ms": round(percentile(latencies, 95), 1),
        "edits": len(latencies),
        "search_1_client_p50_ms": round(percentile(one, 50), 2),
        "search_1_client_p95_ms": round(percentile(one, 95), 2),
        "search_8_clients_p50_ms": round(percentile(eight, 50), 2),
        "search_8_clients_p95_ms": round(percentile(eight, 95), 2),
        "flush_1_client_p50_ms": round(percentile(flush_one, 50), 2),
        "flush_1_client_p95_ms": round(percentile(flush_one, 95), 2),
        "flush_8_clients_p50_ms": round(percentile(flush_eight, 50), 2),
        "flush_8_clients_p95_ms": round(percentile(flush_eight, 95), 2),
        "idle_cpu_percent": round(idle_pct, 3),
        "idle_seconds": args.idle_seconds,
        "rss_after_index_mb": round(rss_after_index, 1),
        "rss_end_mb": round(rss_end, 1),
        "rss_peak_mb": round(peak, 1),
    }
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
