"""Command-line speed: wall time of one `memd search` / `memd get` as a shell runs it,
beside qmd's on the same vault in the same run.

    python bench/cli_bench.py [--files 5000] [--runs 10] [--index-runs 3] [--vault DIR]
                              [--index-only] [--out FILE.json]

Generates a vault of ``--files`` daily notes in a temp dir (or uses ``--vault``), each with
a line that holds both words of the common-word query ("database migration", so it matches
every note, as the rare-word query matches a few), indexes it keyword-only
(``embeddings.provider: none``: the local model would take hours on 5,000 notes, and a
one-shot command's cost is start-up, config and the socket, not the vector side), then
times each command as a new process each time, without a daemon and with one (once the
daemon is idle: its work after the first pass done). Also times ``python -c pass``,
importing ``memd.cli.main``, ``memd index`` (until it returns, the index searchable; and
until the process it leaves to find what later notes replaced has ended), ``memd index
--wait`` (all of it before returning), and the keyword index alone (the library's
``Memory.index()``, without what is current).

When ``qmd`` is on PATH (docs/benchmarks.md says how it was installed), the same vault is
indexed by qmd (``qmd collection add``) and ``qmd search`` / ``qmd get`` are timed in the
same run, each memd command and its qmd counterpart in alternation (one run of each in
turn, ``--runs`` pairs, ``--index-runs`` for the full index, each into a new state folder
and a new qmd index), so a shared machine's load falls on both alike: the result has each
side's median, fastest and CPU time and the median of the pairs' ratios. Without qmd the
ratios are to ``QMD_REFERENCE``, qmd 2.8.3's figures on this generated vault first
measured with the same queries. Targets: the common-word search without a daemon ≤ 1.0×
qmd's, with a daemon ≤ 0.25× (≤ 0.09 s); a full keyword index ≤ 0.35× qmd's.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import memd as memd_package  # noqa: E402
from bench import qmd  # noqa: E402
from bench.common import write_result  # noqa: E402
from bench.daemon_bench import cpu_seconds  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.errors import MemdError  # noqa: E402


def memd_command() -> list[str]:
    """The ``memd`` script of this installation, as a user runs it."""
    script = Path(sys.executable).with_name("memd")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memd"]


@dataclass
class Command:
    """One command line to time, under ``name`` in the result (``name_s`` and so on)."""

    name: str
    argv: list[str]
    env: dict
    cwd: Path | None = None


def run_once(command: Command) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run of ``command``, a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(
        command.argv, env=command.env, cwd=command.cwd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command.argv)} failed: {out.stderr.decode()[-500:]}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def summarise(result: dict, name: str, times: list[float], cpu: list[float]) -> None:
    """The median wall time (the target's measure), the fastest (what the command costs
    when nothing else competes for the CPU) and the median CPU time (what a quiet
    machine's wall time comes to for a command that only computes: a shared machine's
    load moves the wall times, much less the CPU time)."""
    result[f"{name}_s"] = round(statistics.median(times), 3)
    result[f"{name}_fastest_s"] = round(min(times), 3)
    result[f"{name}_cpu_s"] = round(statistics.median(cpu), 3)


def timed(result: dict, runs: int, *commands: Command) -> None:
    """Time ``commands`` in turn, one run of each, ``runs`` rounds after one warm-up
    round. With two commands (memd's, then qmd's), also the median of the rounds' wall
    ratios, first / second, as ``<first>_paired_ratio``: the load of a shared machine
    falls on both sides of each pair alike."""
    walls: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    for n in range(runs + 1):
        for i, command in enumerate(commands):
            elapsed, cpu = run_once(command)
            if n:
                walls[i].append(elapsed)
                cpus[i].append(cpu)
    for command, times, cpu in zip(commands, walls, cpus, strict=True):
        summarise(result, command.name, times, cpu)
    if len(commands) == 2:
        ratios = [a / b for a, b in zip(*walls, strict=True)]
        result[f"{commands[0].name}_paired_ratio"] = round(statistics.median(ratios), 3)


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
    return float(out.stdout.split()[-1]), cpu


def memd_index(config: Path, home: Path, wait: bool = False) -> tuple[float, float, float]:
    """``memd index`` of a new state folder as a user runs it: the wall and CPU seconds
    until it returns (the index searchable), and the wall seconds until what is current
    is found too (the process it leaves for that has ended; with ``wait``, the same)."""
    from memd.configfile import load_config
    from memd.index.finishlock import FinishLock

    env = {**os.environ, "MEMD_CONFIG": str(config), "HOME": str(home)}
    argv = [*memd_command(), "index", *(["--wait"] if wait else [])]
    t = time.perf_counter()
    wall, cpu = run_once(Command("index", argv, env))
    if FinishLock(load_config(config).state_dir, "default").wait(600.0) is not None:
        raise SystemExit("what is current was not found within 10 minutes")
    return wall, cpu, time.perf_counter() - t


def write_config(tmp: Path, vault: Path, n: int | str) -> Path:
    """A keyword-only config whose state folder is new (the ``n``-th of this run)."""
    suffix = "" if n == 0 else f"-{n}"
    config = tmp / f"config{suffix}.yaml"
    config.write_text(
        f"workspace: {vault}\nstate_dir: {tmp / f'state{suffix}'}\n"
        f"socket: {tmp / 'run' / 'memd.sock'}\nembeddings: {{provider: none}}\n"
    )
    return config


# memd's full indexes: ``memd index`` until it returns and until what is current is found
# after it, ``memd index --wait``, and the library's keyword index alone.
INDEXES = ("index", "index_until_current", "index_wait", "index_keyword_only")


def full_indexes(result: dict, tmp: Path, vault: Path, runs: int, with_qmd: bool) -> None:
    """``memd index``, the keyword index alone and (``with_qmd``) ``qmd collection add`` of
    the whole vault in turn, ``runs`` rounds, each into a new state folder or qmd index.
    The first round's state folder and qmd index are the ones the searches then use."""
    names = [*INDEXES, *(["qmd_index"] if with_qmd else [])]
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for n in range(runs):
        wall, cpu, current = memd_index(write_config(tmp, vault, n), tmp)
        waited, waited_cpu, _ = memd_index(write_config(tmp, vault, f"wait-{n}"), tmp, wait=True)
        figures = {
            "index": (wall, cpu),
            # The CPU of the process that finds what is current is not this one's child's.
            "index_until_current": (current, cpu),
            "index_wait": (waited, waited_cpu),
            "index_keyword_only": keyword_only_index(vault, tmp / f"keyword-state-{n}"),
        }
        if with_qmd:
            figures["qmd_index"] = qmd.index(vault, tmp / f"qmd-home-{n}")
        for name, (wall, cpu) in figures.items():
            walls[name].append(wall)
            cpus[name].append(cpu)
    for name in names:
        summarise(result, name, walls[name], cpus[name])
    if with_qmd:
        for name in INDEXES:
            ratios = [a / b for a, b in zip(walls[name], walls["qmd_index"], strict=True)]
            result[f"{name}_paired_ratio"] = round(statistics.median(ratios), 3)


COMMON = "database migration"  # bench.vault's topic, put in every note by make_vault(every_note=)
# qmd 2.8.3 on the same 5,000-note vault, common-word query (seconds), as first measured
# (with bun, a quiet machine): the reference when no qmd is on PATH.
QMD_REFERENCE = {"qmd_search_common_s": 0.355, "qmd_index_s": 17.1}

# (label, memd's figure, qmd's figure, target ratio) for the side-by-side table.
SIDE_BY_SIDE = [
    ("search, common word, no daemon", "search_common_no_daemon", "qmd_search_common", 1.0),
    ("search, rare word, no daemon", "search_no_daemon", "qmd_search", None),
    ("get, no daemon", "get_no_daemon", "qmd_get", None),
    ("search, common word, daemon", "search_common_daemon", "qmd_search_common_vs_daemon", 0.25),
    ("search, rare word, daemon", "search_daemon", "qmd_search_vs_daemon", None),
    ("get, daemon", "get_daemon", "qmd_get_vs_daemon", None),
    ("memd index, until searchable", "index", "qmd_index", 0.35),
    ("memd index, until current", "index_until_current", "qmd_index", None),
    ("memd index --wait", "index_wait", "qmd_index", None),
    ("keyword index alone", "index_keyword_only", "qmd_index", 0.35),
]


def print_side_by_side(result: dict) -> None:
    """memd and qmd in one table: median wall seconds of each, the ratio of the medians,
    the median of the paired ratios (where timed in pairs) and the target."""
    print(f"{'':32} {'memd s':>8} {'qmd s':>8} {'ratio':>6} {'paired':>7} {'target':>6}")
    for label, mine, theirs, target in SIDE_BY_SIDE:
        if f"{mine}_s" not in result or f"{theirs}_s" not in result:
            continue
        a, b = result[f"{mine}_s"], result[f"{theirs}_s"]
        paired = result.get(f"{mine}_paired_ratio")
        print(
            f"{label:32} {a:8.3f} {b:8.3f} {a / b:6.2f} "
            f"{'' if paired is None else f'{paired:.2f}':>7} {'' if target is None else target:>6}"
        )


def index_only(result: dict, with_qmd: bool, why_not: str | None, out: Path) -> int:
    """``--index-only``: the full indexes' figures, written and printed."""
    if not with_qmd:
        result["qmd"] = f"not run ({why_not}): ratios to qmd 2.8.3's first figures (QMD_REFERENCE)"
        result["qmd_index_s"] = QMD_REFERENCE["qmd_index_s"]
    for name in INDEXES:
        result[f"{name}_ratio_to_qmd"] = round(result[f"{name}_s"] / result["qmd_index_s"], 2)
    result.update(load_average=round(os.getloadavg()[0], 2), cpus=os.cpu_count(),
                  python=platform.python_version())  # fmt: skip
    write_result(result, out)
    print_side_by_side(result)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument(
        "--index-runs", type=int, help="full indexes of each side, in turn (default: 3 with qmd)"
    )
    ap.add_argument("--vault", type=Path, help="an existing vault (default: generate one)")
    ap.add_argument("--index-only", action="store_true", help="only the full indexes")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cli.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memd-cli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        why_not = qmd.problem(tmp / "qmd-probe") if qmd.on_path() else "not on PATH"
        with_qmd = why_not is None
        index_runs = args.index_runs or (3 if with_qmd else 1)
        t = time.perf_counter()
        every = f"Notes on the {COMMON}."
        vault = (
            args.vault.resolve()
            if args.vault
            else make_vault(tmp / "vault", args.files, every_note=every)
        )
        generate_s = time.perf_counter() - t
        env = {**os.environ, "MEMD_CONFIG": str(write_config(tmp, vault, 0)), "HOME": str(tmp)}
        memd = memd_command()
        # Byte-compiled, as ``pip install`` leaves a package (an editable install does not,
        # and PYTHONDONTWRITEBYTECODE would have every run compile memd again).
        package = Path(memd_package.__file__).parent
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)

        query = queries(3)[1]
        names = sorted(os.listdir(vault / "memory"))
        rel = f"memory/{names[len(names) // 2]}"
        result: dict = {
            "benchmark": "cli",
            "files": args.files,
            "query": query,
            "query_common": COMMON,
            "generate_s": round(generate_s, 1),
            "qmd_version": qmd.version() if with_qmd else why_not,
            "index_runs": index_runs,
            "load_average_start": round(os.getloadavg()[0], 2),
        }
        # Both cores busy end to end would make a quiet wall time of half index_cpu_s.
        full_indexes(result, tmp, vault, index_runs, with_qmd)
        if args.index_only:
            return index_only(result, with_qmd, why_not, args.out)

        def cmd(name: str, argv: list[str]) -> Command:
            return Command(name, argv, env)

        home = tmp / "qmd-home-0"

        def theirs(name: str, argv: list[str]) -> list[Command]:
            return [Command(name, argv, qmd.environment(home), home)] if with_qmd else []

        search, common = [*memd, "search", query], [*memd, "search", COMMON, "--json"]
        get = [*memd, "get", rel, "--from", "1", "--lines", "20"]
        python = [sys.executable, "-c", "pass"]
        timed(result, args.runs, cmd("python_start", python))
        timed(result, args.runs, cmd("import_memd_cli", [*python[:2], "import memd.cli.main"]))
        timed(result, args.runs, cmd("import_memd_thin", [*python[:2], "import memd.cli.thin"]))
        timed(result, args.runs, cmd("search_no_daemon", search),
              *theirs("qmd_search", qmd.search(query)))  # fmt: skip
        timed(result, args.runs, cmd("search_common_no_daemon", common),
              *theirs("qmd_search_common", qmd.search(COMMON)))  # fmt: skip
        timed(result, args.runs, cmd("get_no_daemon", get),
              *theirs("qmd_get", qmd.get(rel, 20)))  # fmt: skip

        daemon = subprocess.Popen(
            [*memd, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            result["daemon_idle_after_first_pass_s"] = wait_ready(tmp / "run" / "memd.sock", daemon)
            # qmd has no daemon for its command line: its one-shot commands again, in
            # turn with memd's through the daemon.
            timed(result, args.runs, cmd("search_daemon", search),
                  *theirs("qmd_search_vs_daemon", qmd.search(query)))  # fmt: skip
            timed(result, args.runs, cmd("search_common_daemon", common),
                  *theirs("qmd_search_common_vs_daemon", qmd.search(COMMON)))  # fmt: skip
            timed(result, args.runs, cmd("get_daemon", get),
                  *theirs("qmd_get_vs_daemon", qmd.get(rel, 20)))  # fmt: skip
            timed(result, args.runs, cmd("status_daemon", [*memd, "status"]))
        finally:
            daemon.terminate()
            daemon.wait(10)

    if not with_qmd:
        result["qmd"] = f"not run ({why_not}): ratios to qmd 2.8.3's first figures (QMD_REFERENCE)"
        result.update(QMD_REFERENCE)
        result["qmd_search_common_vs_daemon_s"] = QMD_REFERENCE["qmd_search_common_s"]
    for name in INDEXES:
        result[f"{name}_ratio_to_qmd"] = round(result[f"{name}_s"] / result["qmd_index_s"], 2)
    pairs = (("no_daemon", "qmd_search_common"), ("daemon", "qmd_search_common_vs_daemon"))
    for side, theirs_name in pairs:
        reference = result[f"{theirs_name}_s"]
        result[f"search_common_{side}_ratio_to_qmd"] = round(
            result[f"search_common_{side}_s"] / reference, 2
        )
        # CPU time against qmd's wall time: what the ratio comes to on a quiet machine
        # (with a daemon, the daemon's own work for the answer is not in it).
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
    print_side_by_side(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
