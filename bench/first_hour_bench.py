"""The first hour with a big vault: how soon search by meaning is useful, from nothing.

    python bench/first_hour_bench.py [--files 5000] [--minutes 12] [--no-interim] [--out FILE]

Writes a ``bench/vault.py`` vault (5,000 daily notes, ~42k chunks), starts a real ``memd
serve`` on it with the local model and an empty state folder, and every few seconds reads
``status`` over the socket and the index (read-only) to report:

- ``keyword_ready_s``: the first pass has indexed every note (keyword search works);
- ``recent_full_s``: every chunk of the newest 7 days of notes has the full model's vectors
  (target ≤ 60 s);
- ``every_chunk_s``: every chunk has a vector of some tier (the interim tier, made from the
  words, ``memd.index.interim``; target ≤ 300 s);
- ``full_s`` if the full model reached every chunk within ``--minutes``, else
  ``full_eta_s``: the daemon's own estimate at the end (elapsed + its ``eta_s``);
- hybrid search p50/p95 over the socket while the back-fill runs (vault queries, one every
  half second after the first pass), and the daemon's RSS.

``--no-interim`` runs the same with ``embeddings.interim: false``: the figures before it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import apsw  # noqa: E402

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.soak_bench import snapshot  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.embed.providers import LOCAL_MODEL  # noqa: E402
from memd.errors import MemdError  # noqa: E402
from memd.sources.passages import FORMAT  # noqa: E402

FULL_KEY = f"local/{LOCAL_MODEL}/passages-{FORMAT}"  # as memd.index.index names them


def recent_without_vectors(db: Path, since: str) -> int | None:
    """Chunks of notes dated ``since`` or later that lack the full model's vectors."""
    if not db.exists():
        return None
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(2000)
        return con.execute(
            "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.date >= ? AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.chunk_id = c.id AND v.model = ?)",
            (since, FULL_KEY),
        ).fetchone()[0]
    except apsw.Error:
        return None
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--minutes", type=float, default=12.0, help="how long to watch at most")
    ap.add_argument("--no-interim", action="store_true", help="embeddings.interim: false")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    name = "first-hour-nointerim" if args.no_interim else "first-hour"
    out = args.out or HERE / "results" / f"{name}.json"
    tmp = Path(tempfile.mkdtemp(prefix="memd-first-hour-"))
    vault = tmp / "vault"
    make_vault(vault, args.files)
    dates = sorted(p.stem for p in (vault / "memory").glob("*.md"))
    since = dates[-7]  # the newest 7 days of notes
    interim = "false" if args.no_interim else "true"
    extra = f"embeddings: {{provider: local, interim: {interim}}}\nreview: {{enabled: false}}\n"
    daemon, sock = start_daemon(tmp, "fh", vault, extra)
    state, log = tmp / "fh-state", tmp / "fh-state" / "memd.log"
    db = state / "index-default.sqlite"
    result: dict = {"benchmark": "first-hour", "files": args.files, "interim": not args.no_interim}
    marks: dict[str, float] = {}
    latencies: list[float] = []
    samples: list[dict] = []
    asks = queries(400)
    started = time.monotonic()
    last_status: dict = {}
    next_sample = 0.0
    try:
        while (elapsed := time.monotonic() - started) < args.minutes * 60:
            if daemon.poll() is not None:
                raise SystemExit(f"memd exited with {daemon.returncode}")
            try:
                with Client(sock, timeout=30) as client:
                    last_status = status = client.call("status")
                    if status["files"] >= args.files and not status.get("indexing"):
                        marks.setdefault("keyword_ready_s", elapsed)
                    if "keyword_ready_s" in marks and "full_s" not in marks:
                        t = time.perf_counter()
                        client.call("memory_search", {"query": asks[len(latencies) % 400]})
                        latencies.append(time.perf_counter() - t)
            except (MemdError, OSError):
                time.sleep(0.5)
                continue
            embedding = status.get("embedding") or {}
            recent_due = "keyword_ready_s" in marks and "recent_full_s" not in marks
            if recent_due and recent_without_vectors(db, since) == 0:
                marks["recent_full_s"] = elapsed
            tier = embedding.get("interim")
            if tier and tier["total"] and tier["done"] >= tier["total"]:
                marks.setdefault("every_chunk_s", elapsed)
            if "keyword_ready_s" in marks and status.get("pending_embeddings") == 0:
                marks.setdefault("full_s", elapsed)
                marks.setdefault("every_chunk_s", elapsed)
                break
            if elapsed >= next_sample:
                next_sample = elapsed + 30
                snap = snapshot(daemon.pid, state, log)
                samples.append({"t_s": round(elapsed), "rss_mb": snap["rss_mb"],
                                "embedding": embedding})  # fmt: skip
                print(f"{elapsed:6.0f} s  rss {snap['rss_mb']:6.1f} MB  {embedding}", flush=True)
            time.sleep(0.5)
    finally:
        daemon.terminate()
        daemon.wait(30)
    embedding = last_status.get("embedding") or {}
    result.update({k: round(v, 1) for k, v in marks.items()})
    if "full_s" not in marks and embedding.get("eta_s") is not None:
        result["full_eta_s"] = round(time.monotonic() - started + embedding["eta_s"])
    result["chunks"] = last_status.get("chunks")
    result["embedded_at_end"] = embedding.get("done")
    result["full_per_s_at_end"] = embedding.get("per_s")
    if latencies:
        result["search_during_backfill_p50_ms"] = round(1000 * statistics.median(latencies), 1)
        result["search_during_backfill_p95_ms"] = round(1000 * percentile(latencies, 95), 1)
        result["searches"] = len(latencies)
    result["rss_mb_max"] = max((s["rss_mb"] for s in samples), default=None)
    result["rss_mb_end"] = samples[-1]["rss_mb"] if samples else None
    result["samples"] = samples
    result["run_at"] = dt.datetime.now().isoformat(timespec="seconds")
    write_result(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
