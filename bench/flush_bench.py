"""Flush benchmark: a real `memd serve` on the 5,000-note vault, flushing over its socket.

    python bench/flush_bench.py [--notes 5000] [--out bench/results/flush.json]

Reports memory_flush latency (request to answer; the answer comes once the entry is
indexed) p50/p95 with 1, 8 and 32 concurrent clients, each client count into a note of its
own that starts empty, and p50/p95 of flushes into a note that already holds 3,000 entries.
Every entry is then checked to be in its note exactly once and the last one searchable.
Targets (issue 11, F8): flush p95 ≤ 50 ms with 8 clients; p50 into a 3,000-entry note
≤ 10 ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402

BIG_DATE = "2031-01-01"  # notes of their own, removed afterwards
BIG_ENTRIES = 3000
PHASES = {1: ("2031-02-01", 100), 8: ("2031-02-08", 200), 32: ("2031-02-28", 320)}


def big_note(entries: int) -> str:
    """A daily note shaped like memd's own flushes: a timed heading and a paragraph each."""
    blocks = [
        f"\n## {9 + n // 600:02d}:{n % 60:02d} — entry {n}\n\n"
        f"Decision {n}: the deploy window for service {n % 37} moves to Thursday, "
        f"owner team {n % 11}, reviewed in sprint {n // 14}.\n"
        for n in range(entries)
    ]
    return f"# {BIG_DATE}\n" + "".join(blocks)


def flushes(sock: Path, count: int, clients: int, date: str, tag: str) -> list[float]:
    """Request-to-answer milliseconds of ``count`` flushes spread over ``clients``."""
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def worker(n: int) -> None:
        with Client(sock, timeout=120) as c:
            c.call("health")
            barrier.wait()
            for i in range(count // clients):
                text = f"{tag} {n}-{i}: the standup moves to 9:30 for team {n}."
                t = time.perf_counter()
                c.call("memory_flush", entries=[{"text": text, "title": f"{tag} {n}-{i}"}],
                       date=date)  # fmt: skip
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def check(note: Path, tag: str, count: int, clients: int) -> None:
    """Every entry of a phase is in its note exactly once."""
    text = note.read_text(encoding="utf-8")
    for n in range(clients):
        for i in range(count // clients):
            found = text.count(f"— {tag} {n}-{i}\n")
            assert found == 1, f"{note.name}: entry {tag} {n}-{i} found {found} times"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", type=Path, default=HERE / ".data" / "vault-5000")
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "flush.json")
    args = ap.parse_args()
    args.vault = args.vault.resolve()  # the config file lives elsewhere
    subprocess.run(
        [sys.executable, str(HERE / "vault.py"), str(args.vault), str(args.notes)], check=True
    )
    memory = args.vault / "memory"
    big = memory / f"{BIG_DATE}.md"
    big.write_text(big_note(BIG_ENTRIES), encoding="utf-8")
    written = [big, *(memory / f"{date}.md" for date, _ in PHASES.values())]

    result: dict = {"benchmark": "flush", "files": args.notes + 1}
    with tempfile.TemporaryDirectory() as tmp:
        sock = Path(tmp) / "memd.sock"
        config = Path(tmp) / "config.yaml"
        config.write_text(
            f"workspace: {args.vault}\nstate_dir: {tmp}/state\nsocket: {sock}\n"
            "log: {level: warning}\nembeddings: {provider: none}\n"
        )
        proc = subprocess.Popen([sys.executable, "-m", "memd", "--config", str(config), "serve"])
        try:
            deadline = time.monotonic() + 600
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, "never indexed"
                try:
                    with Client(sock, timeout=5) as c:
                        status = c.call("status")
                    if status["files"] >= args.notes + 2 and status["pending_files"] == 0:
                        break
                except MemdError:
                    pass
                time.sleep(0.2)
            time.sleep(1)

            big_ms = flushes(sock, 100, 1, BIG_DATE, "big")
            result["big_note_entries"] = BIG_ENTRIES
            result["flush_3000_entry_note_p50_ms"] = round(percentile(big_ms, 50), 2)
            result["flush_3000_entry_note_p95_ms"] = round(percentile(big_ms, 95), 2)
            check(big, "big", 100, 1)
            for clients, (date, count) in PHASES.items():
                ms = flushes(sock, count, clients, date, f"c{clients}")
                result[f"flush_{clients}_clients_p50_ms"] = round(percentile(ms, 50), 2)
                result[f"flush_{clients}_clients_p95_ms"] = round(percentile(ms, 95), 2)
                result[f"flush_{clients}_clients_count"] = len(ms)
                check(memory / f"{date}.md", f"c{clients}", count, clients)
            with Client(sock) as c:  # the last entry is searchable at once
                hits = c.call("memory_search", query="c32 31-9 standup", min_score=0)["results"]
                assert any("c32 31-9" in h["snippet"] for h in hits), "last flush not searchable"
        finally:
            proc.terminate()
            proc.wait(10)
            for path in written:
                path.unlink(missing_ok=True)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
