"""What keeping what-is-current costs on a large vault (bench/vault.py), in one process.

    python bench/currency_bench.py [--files 5000]

Times the index pass alone, then the first finding of updates over every note (what a
daemon does once after its first pass, in a loop of its own), then one edited note: its
index pass, and the refresh that reads that note again and pairs all statements anew.
In the daemon the refresh runs after the pass, so it does not delay when an edit is
searchable; it takes CPU beside the next searches.

Then, as a shell without a daemon runs it: ``memd index --wait`` once, and ``--runs``
times a one-shot ``memd search`` right after a line is appended to a note (a new process
that indexes the note and finds what is current before it answers), each beside a search
with no edit; medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.cli_bench import Command, memd_command, run_once  # noqa: E402
from bench.common import write_result  # noqa: E402
from bench.vault import make_vault  # noqa: E402
from memd.configfile import parse_config  # noqa: E402
from memd.memory import Memory  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "currency.json")
    ap.add_argument(
        "--provider",
        default="none",
        help="embeddings: none, or local (meaning "
        "as the second signal: each refresh embeds up to a batch of statements)",
    )
    ap.add_argument("--runs", type=int, default=7, help="one-shot searches after an edit")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_vault(Path(tmp) / "vault", args.files)
        raw = {"workspace": str(root), "state_dir": str(Path(tmp) / "state"),
               "embeddings": {"provider": args.provider}, "review": {"enabled": False}}  # fmt: skip
        with Memory(parse_config(raw, env={"HOME": tmp}), concurrent_reads=True) as memory:
            # concurrent_reads: as in the daemon, the pass does not refresh by itself
            started = time.perf_counter()
            memory.index()
            index_s = time.perf_counter() - started
            started = time.perf_counter()
            memory.currency.refresh()
            first_s = time.perf_counter() - started
            batches = 0
            while memory.currency.pending:  # as the daemon's loop: the next batch, and again
                memory.currency.refresh()
                batches += 1
            meaning_s = time.perf_counter() - started
            statements = len(memory.currency.statements())
            updates = len(memory.currency.updates)
            note = sorted((root / "memory").glob("*.md"))[-1]
            with note.open("a") as f:
                f.write("\n- The deploy target is production now.\n")
            started = time.perf_counter()
            memory.index_paths([str(note)])
            edit_index_s = time.perf_counter() - started
            started = time.perf_counter()
            memory.currency.refresh([str(note)])
            edit_refresh_s = time.perf_counter() - started
        shell = _one_shot(Path(tmp), raw, note, args.runs)
    write_result(
        {
            "benchmark": "currency",
            "files": args.files,
            "index_pass_s": round(index_s, 2),
            "provider": args.provider,
            "first_refresh_s": round(first_s, 2),
            "until_every_meaning_s": round(meaning_s, 2),
            "batches_after_the_first": batches,
            "statements_that_can_state_a_fact": statements,
            "updates_found": updates,
            "one_edit_index_s": round(edit_index_s, 3),
            "one_edit_refresh_s": round(edit_refresh_s, 3),
            **shell,
            "runs": args.runs,
        },
        args.out,
    )


def _one_shot(tmp: Path, raw: dict, note: Path, runs: int) -> dict:
    """Median wall time of a one-shot ``memd search`` with no edit and right after one."""
    config = tmp / "config.yaml"
    config.write_text(json.dumps(raw))  # JSON is YAML
    memd = [*memd_command(), "--config", str(config)]
    subprocess.run([*memd, "index", "--wait"], check=True, capture_output=True)
    plain = Command("search", [*memd, "search", "database migration", "--json"], dict(os.environ))
    edited = Command("edited", [*memd, "search", "release train", "--json"], plain.env)
    times: dict[str, list[float]] = {"search": [], "edited": []}
    for n in range(runs):
        times["search"].append(run_once(plain)[0])
        with note.open("a") as f:
            f.write(f"- The release train leaves on day {n} now.\n")
        times["edited"].append(run_once(edited)[0])
    return {
        "one_shot_search_s": round(statistics.median(times["search"]), 3),
        "one_shot_search_after_edit_s": round(statistics.median(times["edited"]), 3),
    }


if __name__ == "__main__":
    main()
