"""Soak benchmark: a real `memd serve` under steady mixed traffic for a bounded time.

    python bench/soak_bench.py [--minutes 20] [--notes 500] [--provider none|local|stand-in]
                               [--steady] [--seed-vectors]
                               [--reloads 8] [--out bench/results/soak.json]

Traffic on a vault of ``--notes`` daily notes: 2 edits a second (an append, a ``sed -i``
style rewrite, a create, a rename, a delete), 5 searches a second, a flush every 10 s
whose id repeats every fifth time, a config-changing SIGHUP every 2 minutes. All the while
a prober appends a line and at once searches for it with ``wait_fresh: 2`` while 3 or 8
other connections search (alternating each minute): a miss is an answer without the line;
a lie is a miss that says ``stale: false``; an answer with the line that says its wait ran
out is counted apart (the issue allows a wait to run out, and the line was there). (An
answer with the line may say ``stale: true``: the other edits go on.) Every 30 s: RSS,
fds, threads, child processes, CPU, DB, WAL and log size. At the end: the RSS slope over
the last half of the run (MB/h), deleted notes still found, and RSS before and after
``--reloads`` config-changing reloads in a row on the quiet daemon.

``--seed-vectors`` (with ``--provider local``): the local model would take hours to embed a
5,000-note vault here, so a first daemon embeds it with the stand-in (384 dimensions, as the
local model's), and its rows are relabelled as the local model's before the soaked daemon
starts. That daemon then holds what it would hold after its own back-fill (the same rows,
the same matrix) and runs the real model for every question and every edit; only the
seeded vectors' values are not the model's, which memory does not see.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.daemon_bench import cpu_seconds, rss_mb  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402

EDITS_PER_S = 2.0
SEARCHES_PER_S = 5.0
FLUSH_EVERY_S = 10.0
RELOAD_EVERY_S = 120.0
READER_PHASE_S = 60.0
READER_COUNTS = (3, 8)


def snapshot(pid: int, state: Path, log: Path) -> dict:
    """The daemon's footprint now (sizes in MB)."""
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    children = [  # a child belongs to the thread that started it
        child
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in _read(task / "children").split()
    ]
    size = lambda p: p.stat().st_size / 2**20 if p.exists() else 0.0  # noqa: E731
    db = state / "index-default.sqlite"
    return {
        "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(status["Threads"]),
        "children": len(children),
        "children_rss_mb": round(sum(rss_mb(int(c)) for c in children if c), 1),
        "cpu_s": round(cpu_seconds(pid), 1),
        "db_mb": round(size(db), 2),
        "wal_mb": round(size(Path(f"{db}-wal")), 2),
        "log_mb": round(size(log), 3),
    }


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # the thread ended meanwhile
        return ""


def slope_mb_per_h(samples: list[dict]) -> float | None:
    """Least-squares slope of RSS over time, in MB an hour."""
    if len(samples) < 3:
        return None
    xs = [s["t_s"] / 3600 for s in samples]
    ys = [s["rss_mb"] for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return (
        round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den, 1)
        if den
        else None
    )


class Soak:
    """The traffic threads and what they counted."""

    def __init__(
        self, root: Path, sock: Path, pid: int, config: Path, text: str, steady: bool = False
    ) -> None:
        self.root, self.sock, self.pid = root, sock, pid
        self.config, self.config_text = config, text
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.rng = random.Random(7)
        self.started = time.monotonic()
        self.counts: dict[str, int] = {}
        self.probe_ms: dict[int, list[float]] = {n: [] for n in READER_COUNTS}
        self.misses: dict[int, list] = {n: [] for n in READER_COUNTS}
        self.ran_out: dict[int, list] = {n: [] for n in READER_COUNTS}  # found, wait ran out
        self.created: list[Path] = []
        self.steady = steady
        self.appended: list[Path] = []  # notes a soak line was appended to, oldest first
        self.deleted: list[tuple[str, str]] = []  # (its unique word, its path)
        self.reloads = 0

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def answered(self, answer: dict) -> None:
        """Count a search answer that fell back to keyword search for want of the model."""
        self.count("search answers")
        if "query embedding took over" in (answer.get("warning") or ""):
            self.count("keyword fallbacks (query embedding too slow)")

    def readers_now(self) -> int:
        phase = int((time.monotonic() - self.started) / READER_PHASE_S)
        return READER_COUNTS[phase % len(READER_COUNTS)]

    def paced(self, per_second: float, step) -> None:
        """Call ``step`` ``per_second`` times a second until stopped; errors are counted."""
        next_at = time.monotonic()
        while not self.stop.is_set():
            try:
                step()
            except (MemdError, OSError) as exc:
                self.count(f"error {type(exc).__name__}")
            next_at += 1 / per_second
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def edit(self) -> None:
        rng, daily = self.rng, sorted((self.root / "memory").glob("20*.md"))
        kinds, weights = ["append", "sed", "create", "rename", "delete"], [4, 2, 2, 1, 1]
        if self.steady:  # as much taken out as put in: the vault keeps its size
            kinds, weights = [*kinds, "trim"], [2, 2, 1, 1, 1, 2]
        kind = rng.choices(kinds, weights)[0]
        if kind in ("rename", "delete") and not self.created:
            kind = "create"
        if kind == "trim" and not self.appended:
            kind = "sed"
        if kind == "trim":  # the soak line appended longest ago goes again
            path = self.appended.pop(0)
            lines = path.read_text().splitlines(keepends=True)
            gone = next(n for n, line in enumerate(lines) if line.startswith("- soak note"))
            tmp = path.with_name(f".trim{rng.randrange(10**6)}")
            tmp.write_text("".join(lines[:gone] + lines[gone + 1 :]))
            os.replace(tmp, path)
        elif kind == "append":
            path = rng.choice(daily)
            with open(path, "a") as f:
                f.write(f"- soak note {rng.randrange(10**6)} about the release plan\n")
            self.appended.append(path)
        elif kind == "sed":  # sed -i: a new file beside, renamed over the old one
            path = rng.choice(daily)
            tmp = path.with_name(f".sed{rng.randrange(10**6)}")
            tmp.write_text(path.read_text().replace(" the ", " tha ", 1))
            os.replace(tmp, path)
        elif kind == "create":
            path = self.root / "memory" / "soak" / f"new-{rng.randrange(10**9)}.md"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"# New\nfresh note {path.stem.replace('-', '')}q\n")
            self.created.append(path)
        elif kind == "rename":
            path = self.created.pop(rng.randrange(len(self.created)))
            moved = path.with_name(f"moved-{rng.randrange(10**9)}.md")
            os.rename(path, moved)
            self.created.append(moved)
        else:
            path = self.created.pop(rng.randrange(len(self.created)))
            text = path.read_text()
            path.unlink()
            word = text.split("fresh note ", 1)[1].strip()
            self.deleted.append((word, str(path.relative_to(self.root))))
        self.count(f"edit {kind}")

    def search_loop(self) -> None:
        qs = queries(500)
        with Client(self.sock, timeout=30) as c:
            n = 0

            def step() -> None:
                nonlocal n
                self.answered(c.call("memory_search", {"query": qs[n % len(qs)]}))
                n += 1
                self.count("searches")

            self.paced(SEARCHES_PER_S, step)

    def flush_loop(self) -> None:
        answers: dict[str, dict] = {}
        with Client(self.sock, timeout=30) as c:
            n = 0

            def step() -> None:
                nonlocal n
                n += 1
                repeat = n % 5 == 0
                fid = f"soak-{n - 1 if repeat else n}"
                text = f"flushed {fid}: the deploy moves to Thursday"
                answer = c.call("memory_flush", {"entries": [{"text": text}], "flush_id": fid})
                if repeat:
                    ok = answer["duplicate"] and answer["written"] == answers[fid]["written"]
                    self.count("flush duplicates right" if ok else "flush duplicates WRONG")
                else:
                    answers[fid] = answer
                    self.count("flushes" if not answer["duplicate"] else "flushes WRONG")

            self.paced(1 / FLUSH_EVERY_S, step)

    def reload(self) -> None:
        """A SIGHUP with a changed config (max_results flips), as an operator's edit."""
        self.reloads += 1
        self.config.write_text(
            self.config_text + f"search: {{max_results: {6 + self.reloads % 2}}}\n"
        )
        os.kill(self.pid, signal.SIGHUP)

    def reader(self, slot: int) -> None:
        qs = queries(300, seed=slot + 10)
        with Client(self.sock, timeout=30) as c:
            n = 0
            while not self.stop.is_set():
                if slot >= self.readers_now():
                    self.stop.wait(0.2)
                    continue
                self.answered(c.call("memory_search", {"query": qs[n % len(qs)]}))
                n += 1
                self.stop.wait(0.01)

    def probe_loop(self) -> None:
        """Append a line to a note nobody else edits, then search for it with wait_fresh."""
        files = [self.root / "memory" / "probe" / f"p{n}.md" for n in range(5)]
        files[0].parent.mkdir(exist_ok=True)
        for path in files:
            path.write_text("# Probe\n")
        time.sleep(1)
        with Client(self.sock, timeout=30) as c:
            n = 0
            while not self.stop.is_set():
                n += 1
                path, token, readers = files[n % len(files)], f"kudu{n}x", self.readers_now()
                if self.steady and n > len(files):  # the probe file keeps one line
                    path.write_text("# Probe\n")
                with open(path, "a") as f:
                    f.write(f"- sighted {token}\n")
                line = path.read_text().count("\n")
                started = time.perf_counter()
                answer = c.call("memory_search", {"query": token, "min_score": 0, "wait_fresh": 2})
                self.probe_ms[readers].append((time.perf_counter() - started) * 1000)
                rel = str(path.relative_to(self.root))
                found = any(
                    r["path"] == rel and r["start_line"] <= line <= r["end_line"]
                    for r in answer["results"]
                )
                index = answer["index"]
                # ``stale: true`` with the line found is honest: others' edits since.
                self.count("probes answered stale" if index["stale"] else "probes answered fresh")
                # Other warnings (no vectors yet, a slow query embedding) are not misses.
                gave_up = "had not caught up" in (answer.get("warning") or "")
                if not found or gave_up:
                    (self.ran_out if found else self.misses)[readers].append(
                        {
                            "found": found,
                            "stale": index["stale"],
                            "pending": index["pending_files"],
                            "ms": round(self.probe_ms[readers][-1], 1),
                            "warning": answer.get("warning"),
                        }
                    )
                self.stop.wait(0.2)


def wait_ready(
    sock: Path, files: int, proc: subprocess.Popen, vectors: bool, timeout: float = 1800
) -> float:
    """Seconds until the vault is indexed (and, with ``vectors``, embedded): the soak
    measures steady work, not the first embedding of the vault (whose matrix grows)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"memd exited with {proc.returncode}")
        try:
            with Client(sock, timeout=5) as c:
                status = c.call("status")
            embedded = not vectors or status["pending_embeddings"] == 0
            if status["files"] >= files and status["pending_files"] == 0 and embedded:
                return time.monotonic() - started
        except MemdError:
            pass
        time.sleep(0.2)
    raise SystemExit("memd did not index the vault in time")


def stand_in_config(server) -> str:
    """The ``embeddings`` setting that asks the stand-in ``server`` for vectors."""
    return f"{{provider: openai, base_url: '{server.url}', model: stand-in}}"


def seed_vectors(tmp: Path, root: Path, state: Path, files: int) -> float:
    """Embed the vault with the stand-in in a first daemon, then relabel its rows as the
    local model's (``--seed-vectors``); the seconds it took."""
    import apsw

    from memd.embed.providers import LOCAL_MODEL
    from memd.sources.passages import FORMAT
    from tests.embedserver import EmbeddingServer

    started = time.monotonic()
    stand_in = EmbeddingServer(dims=384)
    proc, sock = start_daemon(tmp, "seed", root, f"embeddings: {stand_in_config(stand_in)}\n")
    try:
        wait_ready(sock, files, proc, vectors=True, timeout=3600)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        stand_in.close()
    (tmp / "seed-state").rename(state)  # start_daemon's state folder, now the soak's
    # As memd.index.index names them: the embedder's key, then the passage format.
    db = apsw.Connection(str(state / "index-default.sqlite"))
    db.execute(
        "UPDATE vectors SET model = ? WHERE model = ?",
        (f"local/{LOCAL_MODEL}/passages-{FORMAT}", f"openai/stand-in/passages-{FORMAT}"),
    )
    relabelled = db.changes()
    db.close()
    if not relabelled:
        raise SystemExit("the stand-in's vectors were not found to relabel")
    return time.monotonic() - started


def reload_growth(soak: Soak, count: int, state: Path, log: Path) -> dict:
    """RSS before and after ``count`` config-changing reloads on the quiet daemon, each
    followed by searches (which load the new embedder's model)."""
    qs = queries(5, seed=99)

    def settle() -> float:
        time.sleep(3)
        with Client(soak.sock, timeout=30) as c:
            for q in qs:
                c.call("memory_search", {"query": q})
        time.sleep(2)
        return snapshot(soak.pid, state, log)["rss_mb"]

    before = settle()
    after = before
    for _ in range(count):
        soak.reload()
        after = settle()
    return {
        "reloads": count,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "per_reload_mb": round((after - before) / max(count, 1), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--notes", type=int, default=500)
    ap.add_argument(
        "--provider",
        choices=["none", "local", "stand-in"],
        default="local",
        help="stand-in: an OpenAI-compatible server in this process (tests/embedserver.py, "
        "384 dimensions as the local model's): a big vault's vectors in minutes, not hours",
    )
    ap.add_argument("--sample-seconds", type=float, default=30.0)
    ap.add_argument("--reloads", type=int, default=8)
    ap.add_argument(
        "--steady",
        action="store_true",
        help="take out as much as is put in (the vault keeps its size): what RSS does then "
        "is not the index growing",
    )
    ap.add_argument(
        "--seed-vectors",
        action="store_true",
        help="with --provider local: the vault's vectors come from the stand-in, relabelled "
        "as the local model's, so a big vault's soak need not wait hours for its back-fill",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.seed_vectors and args.provider != "local":
        ap.error("--seed-vectors is for --provider local")
    steady = "-steady" if args.steady else ""
    seeded = "-seeded" if args.seed_vectors else ""
    out = args.out or HERE / "results" / f"soak-{args.provider}{seeded}{steady}.json"

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = make_vault(tmp / "vault", files=args.notes)
        sock, config, log, state = (
            tmp / "memd.sock",
            tmp / "memd.yaml",
            tmp / "memd.log",
            tmp / "state",
        )
        seeded_s = seed_vectors(tmp, root, state, args.notes) if args.seed_vectors else None
        embeddings = f"{{provider: {args.provider}}}"
        if args.provider == "stand-in":
            from tests.embedserver import EmbeddingServer

            stand_in = EmbeddingServer(dims=384)
            embeddings = stand_in_config(stand_in)
        text = (
            f"workspace: {root}\nstate_dir: {state}\nsocket: {sock}\n"
            f"log: {{level: info, format: json}}\nembeddings: {embeddings}\n"
        )
        config.write_text(text)
        with open(log, "ab") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "memd", "--config", str(config), "serve"],
                env={**os.environ, "HOME": str(tmp)},
                stdout=sink,
                stderr=sink,
            )
        soak = Soak(root, sock, proc.pid, config, text, args.steady)
        samples: list[dict] = []
        try:
            indexed_s = wait_ready(sock, args.notes, proc, args.provider != "none")
            start_cpu = cpu_seconds(proc.pid)
            soak.started = time.monotonic()
            threads = [
                threading.Thread(target=soak.paced, args=(EDITS_PER_S, soak.edit)),
                threading.Thread(target=soak.search_loop),
                threading.Thread(target=soak.flush_loop),
                threading.Thread(target=soak.probe_loop),
                *(threading.Thread(target=soak.reader, args=(n,)) for n in range(8)),
            ]
            for thread in threads:
                thread.start()
            end = soak.started + args.minutes * 60
            next_sample, next_reload = soak.started, soak.started + RELOAD_EVERY_S
            while (now := time.monotonic()) < end:
                if proc.poll() is not None:
                    raise SystemExit(f"memd exited with {proc.returncode}")
                if now >= next_sample:
                    sample = {"t_s": round(now - soak.started), **snapshot(proc.pid, state, log)}
                    samples.append(sample)
                    print(sample, flush=True)
                    next_sample += args.sample_seconds
                if now >= next_reload:
                    soak.reload()
                    next_reload += RELOAD_EVERY_S
                time.sleep(min(1.0, max(0.0, end - now)))
            soak.stop.set()
            for thread in threads:
                thread.join(30)
            samples.append(
                {"t_s": round(time.monotonic() - soak.started), **snapshot(proc.pid, state, log)}
            )
            with Client(sock, timeout=30) as c:
                # By path: with vectors, other "fresh note"s answer the word too.
                found_deleted = 0
                for word, gone in soak.deleted[-50:]:
                    params = {"query": word, "min_score": 0, "wait_fresh": 2}
                    results = c.call("memory_search", params)["results"]
                    found_deleted += any(r["path"] == gone for r in results)
            reloads = reload_growth(soak, args.reloads, state, log)
            stopping = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(10)
            stop_s = time.monotonic() - stopping
        finally:
            if proc.poll() is None:
                proc.kill()
        logged = log.read_text(errors="replace")
        log_lines = logged.count("\n")

    half = [s for s in samples if s["t_s"] >= samples[-1]["t_s"] / 2]
    soak_s = samples[-1]["t_s"]
    result = {
        "benchmark": "soak",
        "provider": args.provider,
        "notes": args.notes,
        "steady": args.steady,
        "seeded_vectors_s": None if seeded_s is None else round(seeded_s, 1),
        "minutes": args.minutes,
        "indexed_and_embedded_s": round(indexed_s, 1),
        "cpu_s_during_soak": round(samples[-1]["cpu_s"] - start_cpu, 1),
        "rss_start_mb": samples[0]["rss_mb"],
        "rss_end_mb": samples[-1]["rss_mb"],
        "rss_slope_last_half_mb_per_h": slope_mb_per_h(half),
        "fds_range": [min(s["fds"] for s in samples), max(s["fds"] for s in samples)],
        "threads_range": [min(s["threads"] for s in samples), max(s["threads"] for s in samples)],
        "children_end": samples[-1]["children"],
        "wal_max_mb": max(s["wal_mb"] for s in samples),
        "db_end_mb": samples[-1]["db_mb"],
        "log_lines": log_lines,
        "log_mb_per_h": round(samples[-1]["log_mb"] / max(soak_s, 1) * 3600, 2),
        "reloads_during_soak": soak.reloads - reloads["reloads"],
        # The soak's reloads change only search.max_results: the model stays (target 0).
        "model_reloads": logged.count('"model": "replaced"'),
        "reloads_model_kept": logged.count('"model": "kept"'),
        "interim_vectors_failed": logged.count('"interim_vectors_failed"'),
        "keyword_fallbacks": soak.counts.get("keyword fallbacks (query embedding too slow)", 0),
        "search_answers": soak.counts.get("search answers", 0),
        "reload_growth": reloads,
        "counts": dict(sorted(soak.counts.items())),
        "deleted_checked": min(50, len(soak.deleted)),
        "deleted_still_found": found_deleted,
        "stop_s": round(stop_s, 2),
        "stop_exit_code": code,
    }
    for readers in READER_COUNTS:
        ms = soak.probe_ms[readers]
        result[f"ryw_{readers}_readers"] = {
            "probes": len(ms),
            "misses": len(soak.misses[readers]),
            "lies": sum(not m["stale"] for m in soak.misses[readers]),
            "found_but_wait_ran_out": len(soak.ran_out[readers]),
            "p50_ms": round(percentile(ms, 50), 1) if ms else None,
            "p95_ms": round(percentile(ms, 95), 1) if ms else None,
            "first_misses": soak.misses[readers][:5],
            "first_waits_ran_out": soak.ran_out[readers][:5],
        }
    result["samples"] = samples
    write_result(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
