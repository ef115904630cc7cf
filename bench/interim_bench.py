"""The interim tier's cost: CPU time to give every chunk of a large vault its interim vectors.

    python bench/interim_bench.py [--files 10000] [--hashes] [--same-mtime] [--out FILE]

Writes a ``bench/vault.py`` vault, indexes it keyword-only in this process, then makes the
interim tier (``Index.build_interim``) with the local model, as the daemon does when a large
back-fill starts, and reports its CPU time (this process and its engine's threads), wall
time, chunks, distinct tokens and the words embedded. ``--hashes`` puts hash-, hex- and
number-like tokens in every note (a vault of security notes had 16,377 distinct ones of
33,872, and its interim tier never finished); ``--same-mtime`` gives every note one mtime
(a git checkout) and reports where the first 400 chunks (the first slice made searchable)
came from. Target: a 10,000-note vault's interim vectors in at most 3 CPU-minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import write_result  # noqa: E402
from bench.vault import make_vault  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.embed.interim import words  # noqa: E402
from memd.memory import Memory  # noqa: E402


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread, the engine's too
    return usage.ru_utime + usage.ru_stime


def add_hashes(vault: Path) -> None:
    """A line of commit ids, hex addresses, numbers and keys at the end of every note."""
    for n, path in enumerate(sorted(vault.rglob("*.md"))):
        digest = hashlib.sha256(str(n).encode()).hexdigest()
        line = (
            f"\n- commit {digest[:12]} at 0x{digest[12:20]}, build {n * 7919 % 100000}, "
            f"key {digest[20:52]}, host 10.{n % 250}.{n % 7}.{n % 13}\n"
        )
        with path.open("a", encoding="utf-8") as f:
            f.write(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--hashes", action="store_true", help="hash-like tokens in every note")
    ap.add_argument("--same-mtime", action="store_true", help="one mtime for every note")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "interim.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memd-interim-bench-") as tmp_name:
        tmp = Path(tmp_name)
        vault = make_vault(tmp / "vault", args.files)
        if args.hashes:
            add_hashes(vault)
        if args.same_mtime:
            checkout = time.time() - 3600
            for path in vault.rglob("*.md"):
                os.utime(path, (checkout, checkout))
        raw = {"workspace": str(vault), "state_dir": str(tmp / "state")}
        config = parse_config({**raw, "embeddings": {"provider": "local"}})
        with Memory(config) as memory:
            t = time.perf_counter()
            memory.index()
            index_s = time.perf_counter() - t
            memory.embedder.embed(["warm up"], "passage")  # the model's load is not the tier's
            cpu, wall = cpu_s(), time.perf_counter()
            memory.db.build_interim(threading.Event())
            cpu, wall = cpu_s() - cpu, time.perf_counter() - wall
            tier = memory.db.interim
            chunks = memory.db.read(lambda store: store.pending_chunks(
                memory.db.vector_key, 1 << 40, None, None))  # fmt: skip
            distinct = {w for _, heading, body, _, _ in chunks for w in words(f"{heading}\n{body}")}
            from memd.index.interim import reading_order

            files = memory.db.read(lambda store: store.file_times())
            first = {row[4] for row in reading_order(chunks, files)[:400]}
            dated = sorted(files[p][1] or "" for p in first)
        result = {
            "benchmark": "interim",
            "files": args.files,
            "hashes": args.hashes,
            "same_mtime": args.same_mtime,
            "index_s": round(index_s, 1),
            "chunks": tier.total,
            "chunks_done": tier.done,
            "distinct_tokens": len(distinct),
            "words_embedded": len(tier.words.table),
            "cpu_s": round(cpu, 1),
            "wall_s": round(wall, 1),
            "first_slice_notes": len(first),
            "first_slice_dates": [dated[0], dated[-1]] if dated else None,
            "target_cpu_s": 180,
            "cpus": os.cpu_count(),
            "load_average": round(os.getloadavg()[0], 2),
        }
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
