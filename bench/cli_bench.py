"""Command-line speed: wall time of one `memd search` / `memd get` as a shell runs it.

    python bench/cli_bench.py [--files 5000] [--runs 10] [--vault DIR] [--out FILE.json]

Generates a vault of ``--files`` daily notes in a temp dir (or uses ``--vault``), each with
a line that holds both words of the common-word query ("database migration", so it matches
every note, as the rare-word query matches a few), indexes it
keyword-only (``embeddings.provider: none``: the local model would take hours on 5,000
notes, and a one-shot command's cost is start-up, config and the socket, not the vector
side), then times the median wall time of ``--runs`` runs of each command, as a new process
each time, without a daemon and with one (once the daemon is idle: its work after the first
pass done). Also times ``python -c pass``, importing ``memd.cli.main``, and the keyword
index alone (the library's ``Memory.index()``, without what ``memd index`` also finds of
what is current) on the same vault. When ``qmd`` is on PATH, the same vault is added as a
qmd collection (timed: its full index against memd's) and ``qmd search`` / ``qmd get`` are
timed in the same run; otherwise the ratios are to ``QMD_REFERENCE``, qmd 2.8.3 measured on
this generated vault with the same queries (``farm-bench -n 10``, load about 0.6). Targets:
the common-word search without a daemon ≤ 1.0× qmd's, with a daemon ≤ 0.25× (≤ 0.09 s); a
full keyword index ≤ 0.35× qmd's.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import memd as memd_package  # noqa: E402
from bench.common import write_result  # noqa: E402
from bench.daemon_bench import cpu_seconds  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402


def memd_command() -> list[str]:
    """The ``memd`` script of this installation, as a user runs it."""
    script = Path(sys.executable).with_name("memd")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memd"]


def wall(cmd: list[str], runs: int, env: dict) -> tuple[float, float, float]:
    """Median and fastest wall time in seconds of ``runs`` runs of ``cmd`` (after one
    warm-up run), and its median CPU time (user + system). The median is the target's
    measure; the fastest shows what the command costs when nothing else competes for the
    CPU; the CPU time is what a quiet machine's wall time comes to for a command that only
    computes (a shared machine's load moves the wall times, much less the CPU time)."""
    times, cpu = [], []
    for n in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.decode()[-500:]}")
        if n:
            times.append(elapsed)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return (
        round(statistics.median(times), 3),
        round(min(times), 3),
        round(statistics.median(cpu), 3),
    )


def timed(result: dict, name: str, cmd: list[str], runs: int, env: dict) -> None:
    result[f"{name}_s"], result[f"{name}_fastest_s"], result[f"{name}_cpu_s"] = wall(cmd, runs, env)


def wait_ready(sock: Path, proc: subprocess.Popen, timeout: float = 300.0) -> float:
    """Until the daemon answers, has finished its first pass and is idle: its background
    work after the pass (what is current: every note read once at start) done, so the
    timed commands measure answers, not answers beside that work. Returns the seconds
    from the first pass's end to idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("memd serve exited early")
        try:
            with Client(sock, timeout=5) as c:
                status = c.call("status")
                if status["indexing"] is None and status["pending_files"] == 0:
                    break
        except MemdError:
            pass
        time.sleep(0.1)
    passed = time.monotonic()
    while time.monotonic() < deadline:
        before = cpu_seconds(proc.pid)
        time.sleep(1.0)
        if cpu_seconds(proc.pid) - before < 0.05:  # under 5 % of a core for a second
            return round(time.monotonic() - passed, 1)
    raise SystemExit(f"memd serve did not get ready and idle in {timeout:.0f} s")


KEYWORD_ONLY = """
import sys, time
from memd.configfile import parse_config
from memd.memory import Memory
config = parse_config({"workspace": sys.argv[1], "state_dir": sys.argv[2],
                       "embeddings": {"provider": "none"}}, env={})
if __name__ == "__main__":
    t = time.perf_counter()
    Memory(config).index()
    print(time.perf_counter() - t)
"""


def keyword_only_index(vault: Path, state: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the keyword index alone (``Memory.index()``, the library:
    chunks and full-text search, not what is current), in a child process."""
    script = state.with_name("keyword_only.py")
    script.write_text(KEYWORD_ONLY)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, str(script), str(vault), str(state)],
                         check=True, capture_output=True, text=True)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return round(float(out.stdout.split()[-1]), 2), round(cpu, 2)


COMMON = "database migration"  # bench.vault's topic, put in every note by make_vault(every_note=)
# qmd 2.8.3 on the same 5,000-note vault, common-word query (seconds), for when qmd cannot
# run here (its better-sqlite3 needs a native build).
QMD_REFERENCE = {"qmd_search_common_s": 0.355, "qmd_index_s": 17.1}


def qmd_figures(vault: Path, query: str, rel: str, runs: int, home: Path) -> dict:
    """``qmd search`` and ``qmd get`` on the same vault, its index in a temp HOME."""
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    add = ["qmd", "collection", "add", str(vault), "--name", "bench", "--mask", "**/*.md"]
    t = time.perf_counter()
    out = subprocess.run(add, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return {"qmd_error": out.stderr.strip()[-300:]}
    result: dict = {"qmd_index_s": round(time.perf_counter() - t, 2)}
    timed(result, "qmd_search", ["qmd", "search", query, "-c", "bench"], runs, env)
    timed(result, "qmd_search_common", ["qmd", "search", COMMON, "-c", "bench"], runs, env)
    timed(result, "qmd_get", ["qmd", "get", f"bench/{rel}:1", "-l", "20"], runs, env)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--vault", type=Path, help="an existing vault (default: generate one)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cli.json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="memd-cli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        t = time.perf_counter()
        every = f"Notes on the {COMMON}."
        vault = (
            args.vault.resolve()
            if args.vault
            else make_vault(tmp / "vault", args.files, every_note=every)
        )
        generate_s = time.perf_counter() - t
        config = tmp / "config.yaml"
        config.write_text(
            f"workspace: {vault}\nstate_dir: {tmp / 'state'}\nsocket: {tmp / 'run' / 'memd.sock'}\n"
            "embeddings: {provider: none}\n"
        )
        env = {**os.environ, "MEMD_CONFIG": str(config), "HOME": str(tmp)}
        memd = memd_command()
        # Byte-compiled, as ``pip install`` leaves a package (an editable install does not,
        # and PYTHONDONTWRITEBYTECODE would have every run compile memd again).
        package = Path(memd_package.__file__).parent
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([*memd, "index"], env=env, check=True, stdout=subprocess.DEVNULL)
        index_s = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        index_cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

        query = queries(3)[1]
        names = sorted(os.listdir(vault / "memory"))
        rel = f"memory/{names[len(names) // 2]}"
        search = [*memd, "search", query]
        common = [*memd, "search", COMMON, "--json"]
        get = [*memd, "get", rel, "--from", "1", "--lines", "20"]
        python = [sys.executable, "-c", "pass"]
        result: dict = {
            "benchmark": "cli",
            "files": args.files,
            "query": query,
            "query_common": COMMON,
            "generate_s": round(generate_s, 1),
            "index_s": round(index_s, 2),
            # Both cores busy end to end would make a quiet wall time of half of this.
            "index_cpu_s": round(index_cpu_s, 2),
        }
        # The same vault's keyword index alone (no what-is-current), in the same run.
        keyword_s, keyword_cpu_s = keyword_only_index(vault, tmp / "keyword-state")
        result.update(index_keyword_only_s=keyword_s, index_keyword_only_cpu_s=keyword_cpu_s)
        timed(result, "python_start", python, args.runs, env)
        timed(result, "import_memd_cli", [*python[:2], "import memd.cli.main"], args.runs, env)
        timed(result, "import_memd_thin", [*python[:2], "import memd.cli.thin"], args.runs, env)
        timed(result, "search_no_daemon", search, args.runs, env)
        timed(result, "search_common_no_daemon", common, args.runs, env)
        timed(result, "get_no_daemon", get, args.runs, env)

        daemon = subprocess.Popen(
            [*memd, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            result["daemon_idle_after_first_pass_s"] = wait_ready(tmp / "run" / "memd.sock", daemon)
            timed(result, "search_daemon", search, args.runs, env)
            timed(result, "search_common_daemon", common, args.runs, env)
            timed(result, "get_daemon", get, args.runs, env)
            timed(result, "status_daemon", [*memd, "status"], args.runs, env)
        finally:
            daemon.terminate()
            daemon.wait(10)

        qmd = (
            qmd_figures(vault, query, rel, args.runs, tmp / "qmd-home")
            if shutil.which("qmd")
            else {}
        )
        if "qmd_index_s" not in qmd:
            result["qmd"] = f"not run here ({qmd.get('qmd_error', 'not on PATH')}): ratios to "
            result["qmd"] += "qmd 2.8.3's figures on this vault (QMD_REFERENCE)"
            qmd = QMD_REFERENCE
        result.update(qmd)
        reference = result["qmd_search_common_s"]
        result["index_ratio_to_qmd"] = round(index_s / result["qmd_index_s"], 2)
        result["index_keyword_only_ratio_to_qmd"] = round(keyword_s / result["qmd_index_s"], 2)
        for side in ("no_daemon", "daemon"):
            result[f"search_common_{side}_ratio_to_qmd"] = round(
                result[f"search_common_{side}_s"] / reference, 2
            )
            # CPU time against qmd's quiet wall time: what the ratio comes to on a quiet
            # machine (with a daemon, the daemon's own work for the answer is not in it).
            result[f"search_common_{side}_cpu_ratio_to_qmd"] = round(
                result[f"search_common_{side}_cpu_s"] / reference, 2
            )
        result.update(
            runs=args.runs,
            target_common_no_daemon_ratio_to_qmd=1.0,
            target_common_daemon_ratio_to_qmd=0.25,
            target_daemon_s=0.09,
            target_index_ratio_to_qmd=0.35,
            cpus=os.cpu_count(),
            load_average=round(os.getloadavg()[0], 2),
            python=platform.python_version(),
        )
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
