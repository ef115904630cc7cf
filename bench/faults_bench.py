"""Faults benchmark: the load and fault cases of issue 11, rerun against a real `memd serve`.

    python bench/faults_bench.py [--files 1000] [--edits 500] [--reloads 100]
                                 [--out bench/results/faults.json]

Reports, on a synthetic vault (bench/vault.py):

- stale answers after ``--edits`` mixed-pattern edits once settled (target 0): every file's
  last token found, every overwritten token gone;
- answers claiming fresh (``stale: false``) while missing a token written just before the
  request (target 0), and misses of searches that asked ``wait_fresh`` (target 0);
- open fds, inotify instances and threads before and after ``--reloads`` SIGHUP reloads
  (target: unchanged);
- ``health`` latency while hostile globs are searched and while 8 clients send ~1 MB
  queries (target p95 ≤ 50 ms), with what the hostile requests themselves took, and RSS.

Flush latency and lost/torn entries are bench/flush_bench.py's. Default run: about 2 minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from bench.vault import make_vault  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402

EDIT_FILES = 50
HOSTILE_GLOBS = ["**?**?**?**?**?**?**?**!", "*a*a*a*a*a*a*a*a*a*a*a*b", "?*" * 200 + "!"]


class Daemon:
    def __init__(self, vault: Path, tmp: Path) -> None:
        self.sock = tmp / "memd.sock"
        self.config = tmp / "config.yaml"
        self.base = (
            f"workspace: {vault}\nstate_dir: {tmp}/state\nsocket: {self.sock}\n"
            "log: {level: info}\nembeddings: {provider: none}\n"
        )
        self.config.write_text(self.base)
        self.log = tmp / "daemon.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memd", "--config", str(self.config), "serve"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def call(self, method: str, **params: object) -> dict:
        with Client(self.sock, timeout=120) as c:
            return c.call(method, params)

    def wait(self, predicate: Callable[[], object], timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if predicate():
                    return
            except MemdError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"timed out; daemon log tail:\n{self.log.read_text()[-2000:]}")

    def settled(self) -> bool:
        return not self.call("memory_search", query="settle", min_score=0)["index"]["stale"]

    def resources(self) -> dict:
        pid = self.proc.pid
        fds = os.listdir(f"/proc/{pid}/fd")
        inotify = 0
        for fd in fds:
            with contextlib.suppress(OSError):
                inotify += "inotify" in os.readlink(f"/proc/{pid}/fd/{fd}")
        return {
            "fds": len(fds),
            "inotify": inotify,
            "threads": len(os.listdir(f"/proc/{pid}/task")),
        }

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


def edit(path: Path, text: str, pattern: int) -> None:
    """Write ``text`` to ``path`` the way one of six editors does."""
    kind = pattern % 6
    if kind == 0 or not path.exists():  # in place, truncating
        path.write_text(text)
    elif kind == 1:  # a temporary file renamed over it (most editors' atomic save)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    elif kind == 2:  # delete and re-create
        path.unlink()
        path.write_text(text)
    elif kind == 3:  # vim: move the original to a backup, write anew, drop the backup
        backup = path.with_name(path.name + "~")
        os.replace(path, backup)
        path.write_text(text)
        backup.unlink()
    elif kind == 4:  # same size and the old mtime put back (cp -p, rsync -t)
        st = os.stat(path)
        old = path.read_text()
        path.write_text(text[: len(old)].ljust(len(old)))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:  # truncate, then write in two parts
        with open(path, "w") as f:
            f.write(text[: len(text) // 2])
            f.flush()
            f.write(text[len(text) // 2 :])


def token(n: int) -> str:
    return f"qz{n:05d}tok"  # fixed width: a same-size edit keeps the size


def mixed_edits(d: Daemon, folder: Path, edits: int) -> dict:
    """``edits`` edits over EDIT_FILES files, then settle: each file's last token must be
    found there and every token it held before must be gone."""
    last: dict[Path, int] = {}
    overwritten: list[tuple[Path, int]] = []
    for n in range(edits):
        path = folder / f"e{n % EDIT_FILES:02d}.md"
        if path in last:
            overwritten.append((path, last[path]))
        edit(path, f"# Edit\n{token(n)} mixed edit\n", n // EDIT_FILES)
        last[path] = n
        if n % 25 == 24:
            time.sleep(0.05)  # bursts, not one stream
    d.wait(d.settled)
    stale = 0
    for path, n in last.items():
        hits = d.call("memory_search", query=token(n), min_score=0)["results"]
        stale += not any(h["path"].endswith(path.name) for h in hits)
    for path, n in overwritten[-EDIT_FILES:]:
        hits = d.call("memory_search", query=token(n), min_score=0)["results"]
        stale += any(h["path"].endswith(path.name) for h in hits)
    return {"mixed_edits": edits, "stale_answers_after_settle": stale}


def immediate_reads(d: Daemon, folder: Path, rounds: int) -> dict:
    """Write, then search at once: a miss must say stale. With wait_fresh: never a miss."""
    lies = misses_waiting = 0
    waited: list[float] = []
    with Client(d.sock, timeout=60) as c:
        for n in range(rounds):
            tok = token(90000 + n)
            edit(folder / f"r{n % 5}.md", f"# Read\n{tok} just written\n", n)
            answer = c.call("memory_search", query=tok, min_score=0)
            found = any(tok in h["snippet"] for h in answer["results"])
            lies += not found and not answer["index"]["stale"]
            tok = token(95000 + n)
            edit(folder / f"w{n % 5}.md", f"# Wait\n{tok} just written\n", n)
            t = time.perf_counter()
            answer = c.call("memory_search", query=tok, min_score=0, wait_fresh=5)
            waited.append((time.perf_counter() - t) * 1000)
            misses_waiting += not any(tok in h["snippet"] for h in answer["results"])
    return {
        "read_after_write_rounds": rounds,
        "answers_fresh_but_missing_token": lies,
        "wait_fresh_misses": misses_waiting,
        "wait_fresh_p50_ms": round(percentile(waited, 50), 1),
        "wait_fresh_p95_ms": round(percentile(waited, 95), 1),
    }


def reloads(d: Daemon, count: int) -> dict:
    def reloaded() -> int:
        return d.log.read_text(errors="replace").count('"config_reloaded"')

    def reload(n: int) -> None:
        before = reloaded()
        tmp = d.config.with_suffix(".tmp")
        tmp.write_text(d.base + f"search: {{max_results: {n % 7 + 1}}}\n")
        os.replace(tmp, d.config)
        d.proc.send_signal(signal.SIGHUP)
        d.wait(lambda: reloaded() > before, timeout=60)

    warm = max(3, count // 5)
    for n in range(warm):  # pools and per-thread connections fill up once, then stay
        reload(n)
        d.call("memory_search", query="budget")
    d.wait(d.settled)
    before = d.resources()
    for n in range(count):
        reload(n + warm)
        d.call("memory_search", query="budget")
    d.wait(d.settled)
    # Replaced indexes close once the requests before the reload are done; a stopped
    # watch's worker thread may idle a few seconds before it ends (anyio).
    with contextlib.suppress(SystemExit):
        d.wait(lambda: d.resources()["fds"] <= before["fds"], timeout=15)
    with contextlib.suppress(SystemExit):
        d.wait(lambda: d.resources()["threads"] <= before["threads"], timeout=15)
    after = d.resources()
    return {
        "reloads": count,
        "reloads_before_measuring": warm,
        "fds_before": before["fds"],
        "fds_after": after["fds"],
        "inotify_before": before["inotify"],
        "inotify_after": after["inotify"],
        "threads_before": before["threads"],
        "threads_after": after["threads"],
    }


def health_during(d: Daemon, load: Callable[[], float], clients: int, seconds: float) -> dict:
    """``health`` round trips (ms) while ``clients`` threads run ``load`` (which returns
    how long its request took, ms) for ``seconds``."""
    stop = threading.Event()
    health: list[float] = []
    loads: list[float] = []

    def prober() -> None:
        with Client(d.sock, timeout=120) as c:
            while not stop.is_set():
                t = time.perf_counter()
                c.call("health")
                health.append((time.perf_counter() - t) * 1000)
                time.sleep(0.01)

    def loader() -> None:
        while not stop.is_set():
            loads.append(load())

    threads = [threading.Thread(target=loader) for _ in range(clients)]
    threads.append(threading.Thread(target=prober))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return {
        "health_p50_ms": round(percentile(health, 50), 2),
        "health_p95_ms": round(percentile(health, 95), 2),
        "health_max_ms": round(max(health), 2),
        "requests": len(loads),
        "request_p50_ms": round(percentile(loads, 50), 1),
        "request_max_ms": round(max(loads), 1),
    }


def timed(d: Daemon, **params: object) -> Callable[[], float]:
    def run() -> float:
        t = time.perf_counter()
        d.call("memory_search", **params)
        return (time.perf_counter() - t) * 1000

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=500)
    ap.add_argument("--reads", type=int, default=100)
    ap.add_argument("--reloads", type=int, default=100)
    ap.add_argument("--load-seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "faults.json")
    args = ap.parse_args()
    started = time.perf_counter()
    result: dict = {"benchmark": "faults", "files": args.files}
    with tempfile.TemporaryDirectory() as tmp:
        vault = make_vault(Path(tmp) / "vault", args.files)
        folder = vault / "memory" / "bench-edits"
        folder.mkdir()
        d = Daemon(vault, Path(tmp))
        try:
            d.wait(lambda: d.call("status")["files"] >= args.files and d.settled())
            result.update(mixed_edits(d, folder, args.edits))
            result.update(immediate_reads(d, folder, args.reads))
            result.update(reloads(d, args.reloads))
            rss_before = d.rss_mb()
            glob = health_during(
                d, timed(d, query="budget", paths=HOSTILE_GLOBS), 2, args.load_seconds
            )
            result.update({f"hostile_glob_{k}": v for k, v in glob.items()})
            huge = " ".join(f"w{i}" for i in range(120_000))  # ~0.9 MB, 120,000 words
            heavy = health_during(d, timed(d, query=huge, min_score=0), 8, args.load_seconds)
            result.update({f"huge_queries_{k}": v for k, v in heavy.items()})
            plain = [timed(d, query="budget")() for _ in range(20)]
            result["plain_search_after_load_p50_ms"] = round(percentile(plain, 50), 2)
            result["rss_before_load_mb"] = round(rss_before, 1)
            result["rss_after_load_mb"] = round(d.rss_mb(), 1)
        finally:
            d.proc.terminate()
            d.proc.wait(10)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
