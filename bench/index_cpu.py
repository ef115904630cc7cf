"""Where a full keyword index's CPU goes: the main process (SQLite writes) and the worker
processes (read, parse, chunk, count tokens, FTS columns), for ``Memory.index()`` of the
generated vault; optionally paired against another copy of the code, and a profile.

    python bench/index_cpu.py [--files 5000] [--runs 3] [--against DIR] [--profile 1500]
                              [--stages] [--alone] [--once]
                              [--out bench/results/index-cpu.json]

Each index runs in a new process into a new state folder (keyword only). ``--against DIR``
runs the same in turn with the ``memd`` package found in DIR (e.g. ``git archive main memd
| tar -x -C DIR``), so a shared machine's load falls on both alike, and reports the median
of the pairs' ratios. ``--profile N`` prints a cProfile of ``prepare`` over N notes, in
this process (workers' time is not seen by a profile of the main process). ``--stages``
times each stage of the workers' work over every note in one process (both copies of the
code, two runs each, in turn), and the notes' text counted once by memd and by tiktoken.
``--alone`` also indexes with no workers (this code, each run after the pair): what the
pool of workers costs in CPU against what it saves in wall time. ``--once`` indexes as a
process that indexes once and exits (``Memory.index(regrow=False)``: no file's tail is
worked out; a copy of the code without that choice indexes as it does). A fork server's
workers are its children: the figures count them once it has ended.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = "database migration"  # as bench/cli_bench.py: a line every note holds


def one(code: Path, vault: Path, state: Path, alone: bool = False, once: bool = False) -> dict:
    """One full keyword index of ``vault`` by the ``memd`` in ``code``: CPU-s of this
    process during ``Memory.index()`` and of the workers it started, and wall seconds;
    ``alone``: with no workers (every file read, parsed and chunked in this process);
    ``once``: as a process that indexes once (``regrow=False``, where the code has it)."""
    import inspect
    import resource
    import time

    sys.path.insert(0, str(code))
    from memd.configfile import parse_config
    from memd.index import prepare
    from memd.log import configure_logging
    from memd.memory import Memory

    try:
        from memd.index import workers
    except ImportError:  # code from before the pool had a module of its own
        workers = prepare
    if alone:
        workers._PARALLEL_MIN = sys.maxsize  # as for a pass with few files to read

    configure_logging("warning")
    raw = {"workspace": str(vault), "state_dir": str(state), "embeddings": {"provider": "none"}}
    memory = Memory(parse_config(raw, env=os.environ))
    before = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    once = once and "regrow" in inspect.signature(memory.index).parameters
    report = memory.index(regrow=False) if once else memory.index()
    wall = time.perf_counter() - t
    main_cpu = _cpu(resource.RUSAGE_SELF)
    memory.close()
    # Workers forked by a fork server are its children: their CPU counts once it ended.
    if stop := getattr(workers, "stop_fork_server", None):
        stop()
    workers_cpu = _cpu(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": wall,
        "main_cpu_s": main_cpu - before[0],
        "workers_cpu_s": workers_cpu - before[1],  # and the fork server's, if any
        "chunks": report.chunks,
    }


def _cpu(who: int) -> float:
    import resource

    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run_one(
    code: Path, vault: Path, tmp: Path, n: int, alone: bool = False, once: bool = False
) -> dict:
    """``one`` in a new process (a fresh interpreter: no module or encoder loaded yet)."""
    state = tmp / f"state-{code.name}-{n}-{alone}"
    child = [sys.executable, __file__, "--one", str(code), "--vault", str(vault)]
    flags = [*(["--alone"] if alone else []), *(["--once"] if once else [])]
    out = subprocess.run(
        [*child, "--state", str(state), *flags],
        check=True,
        capture_output=True,
        text=True,
        **in_code(code),
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def in_code(code: Path) -> dict:
    """How a child is run so that the workers a fork server forks for it import the
    ``memd`` in ``code`` too: the fork server imports what it preloads by its own
    ``sys.path`` (its working folder first, then ``PYTHONPATH``), not by the child's."""
    return {"cwd": code, "env": {**os.environ, "PYTHONPATH": str(code)}}


def profile(vault: Path, notes: int, top: int = 25) -> None:
    """cProfile of ``prepare`` over the first ``notes`` notes, in this process."""
    import cProfile
    import pstats

    sys.path.insert(0, str(HERE.parent))
    from memd.config import Chunking
    from memd.index.prepare import Job, prepare
    from memd.sources.chunker import encoder
    from memd.sources.layout import FileEntry

    encoder()  # loaded once per worker: not what a note costs
    paths = sorted((vault / "memory").glob("*.md"))[:notes]
    jobs = [
        Job(FileEntry(f"memory/{p.name}", str(p), str(p), "daily", p.stem, 0, 0), None, Chunking())
        for p in paths
    ]
    prof = cProfile.Profile()
    prof.enable()
    for job in jobs:
        prepare(job)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def stages(code: Path, vault: Path) -> dict:
    """CPU-s of each stage of the workers' work over every note of ``vault``, in this
    process, with the ``memd`` in ``code``; and the notes' text counted once, by this
    code's ``count_tokens`` and by tiktoken itself."""
    import hashlib
    import time

    sys.path.insert(0, str(code))
    from memd.index.regrow import tail_of
    from memd.sources.chunker import chunk_with_restart, count_tokens, encoder
    from memd.sources.markdown import parse
    from memd.store.rows import FileMeta, chunk_rows

    paths = sorted((vault / "memory").glob("*.md"))
    count_tokens("warm")  # the encoder and its expressions are loaded once per worker
    out: dict = {}
    clock = time.process_time()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.process_time()
        out[name] = round(now - clock, 3)
        clock = now

    datas = [p.read_bytes() for p in paths]
    digests = [hashlib.sha256(d).hexdigest() for d in datas]
    texts = [d.decode() for d in datas]
    lap("read_hash_decode_s")
    docs = [parse(text) for text in texts]
    lap("parse_s")
    chunked = [chunk_with_restart(doc, 400, 80) for doc in docs]
    lap("chunk_and_count_s")
    metas = [
        FileMeta(f"memory/{p.name}", str(p), str(p), "daily", p.stem, len(d), 0, h, len(doc.lines))
        for p, d, h, doc in zip(paths, datas, digests, docs, strict=True)
    ]
    clock = time.process_time()
    for meta, (chunks, _) in zip(metas, chunked, strict=True):
        chunk_rows(meta, chunks)
    lap("fts_rows_s")
    for data, digest, doc, (_, restart) in zip(datas, digests, docs, chunked, strict=True):
        tail_of(data, digest, doc, restart)
    lap("tail_of_s")
    out["all_s"] = round(sum(out.values()), 3)
    for text in texts:
        count_tokens(text)
    lap("notes_counted_once_s")
    for text in texts:
        encoder().encode_ordinary(text)
    lap("notes_counted_once_by_tiktoken_s")
    return out


def summary(runs: list[dict]) -> dict:
    return {
        key: round(statistics.median(r[key] for r in runs), 2)
        for key in ("wall_s", "main_cpu_s", "workers_cpu_s")
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--vault", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--against", type=Path, help="a folder holding another memd package")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="profile N notes")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "index-cpu.json")
    ap.add_argument("--stages", action="store_true", help="time the workers' stages too")
    ap.add_argument(
        "--alone", action="store_true", help="also index with no workers, in one process"
    )
    ap.add_argument(
        "--once",
        action="store_true",
        help="index as a process that indexes once: no tails kept (Memory.index(regrow=False))",
    )
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a child's code folder
    ap.add_argument("--stages-of", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    vault = args.vault or HERE / ".data" / f"vault-{args.files}-common"
    if args.one:
        print(json.dumps(one(args.one, vault, args.state, args.alone, args.once)))
        return 0
    if args.stages_of:
        print(json.dumps(stages(args.stages_of, vault)))
        return 0
    sys.path.insert(0, str(HERE.parent))
    from bench.common import write_result
    from bench.vault import make_vault

    make_vault(vault, args.files, every_note=COMMON)
    if args.profile:
        profile(vault, args.profile)
    mine, theirs, alone = [], [], []
    with tempfile.TemporaryDirectory(prefix="memd-index-cpu-") as tmp:
        for n in range(args.runs):
            mine.append(run_one(HERE.parent, vault, Path(tmp), n, once=args.once))
            if args.against:
                theirs.append(run_one(args.against.resolve(), vault, Path(tmp), n, once=args.once))
            print(json.dumps({"this": mine[-1], "against": theirs[-1] if theirs else None}))
            if args.alone:
                alone.append(run_one(HERE.parent, vault, Path(tmp), n, True, args.once))
                print(json.dumps({"alone": alone[-1]}))
    result: dict = {"benchmark": "index-cpu", "files": args.files, "runs": args.runs,
                    "once": args.once, "chunks": mine[0]["chunks"], **summary(mine)}  # fmt: skip
    if alone:
        result["alone"] = summary(alone)
    if args.stages:  # two runs of each, in turn
        codes = [HERE.parent, *([args.against.resolve()] if args.against else [])]
        keys = ["stages", "against_stages"][: len(codes)]
        result.update({key: [] for key in keys})
        for _ in range(2):
            for key, code in zip(keys, codes, strict=True):
                child = [sys.executable, __file__, "--stages-of", str(code), "--vault", str(vault)]
                done = subprocess.run(child, check=True, capture_output=True, text=True)
                result[key].append(json.loads(done.stdout.strip().splitlines()[-1]))
    if theirs:
        result["against"] = summary(theirs)
        for key in ("wall_s", "main_cpu_s", "workers_cpu_s"):
            pairs = [a[key] / b[key] for a, b in zip(mine, theirs, strict=True)]
            result[f"paired_ratio_{key}"] = round(statistics.median(pairs), 3)
        cpu = [
            (a["main_cpu_s"] + a["workers_cpu_s"]) / (b["main_cpu_s"] + b["workers_cpu_s"])
            for a, b in zip(mine, theirs, strict=True)
        ]
        result["paired_ratio_cpu_total"] = round(statistics.median(cpu), 3)
    result["load_average"] = round(os.getloadavg()[0], 2)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
