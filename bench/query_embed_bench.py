"""A search's own embedding during a back-fill, with the cores busy.

    python bench/query_embed_bench.py [--notes 300] [--minutes 2] [--readers 1,4]
                                      [--busy 2] [--out FILE]

Writes a ``bench/vault.py`` vault, starts a real ``memd serve`` on it with the local model
and an empty state folder (so the full model back-fills every chunk, and the interim tier is
made, while searches run), and starts ``--busy`` processes that spin (``yes``), as other
work on the machine would. Once keyword search is ready and the full model has made its
first vectors, ``--readers`` connections each ask questions back to back (none asked
twice, so none comes from the query cache) for ``--minutes`` per reader count. Reports,
per reader count:

- the question's own embedding as the daemon logged it (``query_embedded``, from the
  search's asking to its vector, waits included): p50 / p95 / max, and how many took
  over 0.5 s;
- the searches that fell back to keyword search ("query embedding took over 2 s");
- the search's wall time at the client, p50 / p95;
- the load average and the back-fill's progress over the phase, the model reloads.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.vault import make_vault, vocabulary  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402

FALLBACK = "query embedding took over"


def wait_ready(sock: Path, files: int, daemon: subprocess.Popen) -> dict:
    """The daemon's status once its first pass has indexed every note and the full model
    has made its first vectors (a question has vectors to be compared with)."""
    while True:
        if daemon.poll() is not None:
            raise SystemExit(f"memd exited with {daemon.returncode}")
        try:
            with Client(sock, timeout=10) as client:
                status = client.call("status")
            indexed = status["files"] >= files and not status.get("indexing")
            if indexed and (status.get("embedding") or {}).get("done"):
                return status
        except (MemdError, OSError):
            pass
        time.sleep(0.5)


def phase(sock: Path, readers: int, seconds: float, questions) -> dict:
    """``readers`` connections asking back to back for ``seconds``."""
    walls: list[float] = []
    fallbacks = [0]
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def ask() -> None:
        with Client(sock, timeout=60) as client:
            while time.monotonic() < end:
                with lock:
                    question = next(questions)
                started = time.perf_counter()
                answer = client.call("memory_search", {"query": question})
                took = time.perf_counter() - started
                with lock:
                    walls.append(took)
                    fallbacks[0] += FALLBACK in (answer.get("warning") or "")

    threads = [threading.Thread(target=ask) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"searches": len(walls), "keyword_fallbacks": fallbacks[0],
            "search_p50_ms": round(1000 * statistics.median(walls), 1),
            "search_p95_ms": round(1000 * percentile(walls, 95), 1)}  # fmt: skip


def embedded(log: Path, since: float, until: float) -> dict:
    """The daemon's ``query_embedded`` lines logged between ``since`` and ``until`` (epoch)."""
    ms = []
    for line in log.read_text(errors="replace").splitlines():
        if '"query_embedded"' not in line:
            continue
        event = json.loads(line)
        stamp = calendar.timegm(time.strptime(event["timestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
        if since - 1 <= stamp <= until + 1:
            ms.append(event["ms"])
    if not ms:
        return {"embeddings_logged": 0}
    return {"embeddings_logged": len(ms), "embed_p50_ms": round(statistics.median(ms), 1),
            "embed_p95_ms": round(percentile(ms, 95), 1), "embed_max_ms": round(max(ms), 1),
            "embed_over_500ms": sum(m > 500 for m in ms)}  # fmt: skip


def backfill(sock: Path) -> dict:
    with Client(sock, timeout=30) as client:
        embedding = client.call("status").get("embedding") or {}
    tier = embedding.get("interim") or {}
    return {"full_done": embedding.get("done"), "total": embedding.get("total"),
            "interim_done": tier.get("done")}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--minutes", type=float, default=2.0, help="per reader count")
    ap.add_argument("--readers", default="1,4", help="concurrent connections, per phase")
    ap.add_argument("--busy", type=int, default=2, help="spinning processes (yes)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "query-embed.json")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memd-query-embed-"))
    make_vault(tmp / "vault", args.notes)
    extra = "embeddings: {provider: local}\nreview: {enabled: false}\n"
    extra += "log: {level: debug, format: json}\n"  # query_embedded is a debug line
    log = tmp / "qe.log"
    daemon, sock = start_daemon(tmp, "qe", tmp / "vault", extra, log)
    words = vocabulary(random.Random(1))[20:4000]
    rng = random.Random(5)
    # Never the same question twice: each is embedded, none comes from the query cache.
    questions = iter(lambda: " ".join(rng.sample(words, 3)), None)
    result: dict = {"benchmark": "query-embed", "notes": args.notes, "busy": args.busy,
                    "minutes_per_phase": args.minutes}  # fmt: skip
    busy: list[subprocess.Popen] = []
    try:
        ready = wait_ready(sock, args.notes, daemon)
        busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
        result["chunks"] = ready["chunks"]
        for readers in (int(n) for n in args.readers.split(",")):
            since, before = time.time(), backfill(sock)
            found = phase(sock, readers, args.minutes * 60, questions)
            until = time.time()
            result[f"readers_{readers}"] = {
                **found, **embedded(log, since, until), "load_avg_1m": os.getloadavg()[0],
                "backfill_before": before, "backfill_after": backfill(sock),
            }  # fmt: skip
            print(readers, result[f"readers_{readers}"], flush=True)
    finally:
        for proc in busy:
            proc.terminate()
        daemon.terminate()
        daemon.wait(30)
    logged = log.read_text(errors="replace")
    result["model_reloads"] = logged.count('"model": "replaced"')
    result["interim_vectors_failed"] = logged.count('"interim_vectors_failed"')
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
