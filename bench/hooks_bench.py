"""How long an agent host waits for memd's hooks, as whole processes (issue 22).

    python bench/hooks_bench.py [--runs 20] [--out FILE.json]

Runs the commands `memd hooks install claude-code` writes, fed the hook inputs in
tests/data/hooks, on a workspace of a MEMORY.md and 30 daily notes: `memd context --hook`
(SessionStart), `memd recall --hook` (UserPromptSubmit) and `memd flush --hook`
(PreCompact), each ``--runs`` times with a daemon running and without one; p50 and p95 of
the wall time from start to exit. Keyword search (no embedding model), as a host's hook
would meet a daemon that already has its model loaded. Targets: context and recall
≤ 150 ms with a daemon, ≤ 400 ms without; flush returns at once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, write_result  # noqa: E402
from memd.client import Client  # noqa: E402

TESTS = HERE.parent / "tests" / "data"
TRANSCRIPT = "sessions/claude-code/-home-me-shop/6f1d2c3a-8b4e-4c1f-9a2b-3c4d5e6f7a8b.jsonl"
HOOKS = {"context": "session_start_startup", "recall": "user_prompt_submit",
         "flush": "pre_compact_auto"}  # fmt: skip


def workspace(root: Path) -> None:
    (root / "memory").mkdir(parents=True)
    core = ["# Memory", "", "## Decisions"]
    core += [f"- Decision {n}: the order service queues in Postgres {n}." for n in range(40)]
    (root / "MEMORY.md").write_text("\n".join(core) + "\n")
    for day in range(1, 31):
        lines = [f"# 2026-10-{day:02d}", ""]
        lines += [f"- Deployed build {day}.{n}; the shop's checkout was fine." for n in range(20)]
        (root / "memory" / f"2026-10-{day:02d}.md").write_text("\n".join(lines) + "\n")


def timed(command: list[str], stdin: str, env: dict, runs: int) -> list[float]:
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, check=True)
        took.append((time.perf_counter() - started) * 1000)
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "hooks.json")
    args = ap.parse_args()
    result: dict = {"benchmark": "hooks", "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="memd-hooks-bench-") as tmp_name:
        tmp = Path(tmp_name)
        workspace(tmp / "ws")
        transcript = tmp / "transcript.jsonl"
        shutil.copy(TESTS / TRANSCRIPT, transcript)
        sock = tmp / "memd.sock"
        config = tmp / "memd.yaml"
        config.write_text(f"workspace: {tmp / 'ws'}\nstate_dir: {tmp / 'state'}\n"
                          f"socket: {sock}\nembeddings: {{provider: none}}\n")  # fmt: skip
        env = {**os.environ, "HOME": str(tmp)}
        memd = [str(Path(sys.executable).parent / "memd"), "--config", str(config)]
        inputs = {
            name: (TESTS / "hooks" / f"{hook}.json").read_text()
            .replace("TRANSCRIPT", str(transcript)).replace("CWD", str(tmp / "shop"))
            for name, hook in HOOKS.items()
        }  # fmt: skip
        for daemon_up in (False, True):
            daemon = None
            if daemon_up:
                daemon = subprocess.Popen([*memd, "serve"], env=env, stderr=subprocess.DEVNULL)
                _wait(sock)
            where = "daemon" if daemon_up else "no_daemon"
            try:
                for name, stdin in inputs.items():
                    command = [*memd, name, "--hook"]
                    took = timed(command, stdin, env, args.runs)
                    result[f"{name}_{where}_p50_ms"] = round(percentile(took, 50), 1)
                    result[f"{name}_{where}_p95_ms"] = round(percentile(took, 95), 1)
            finally:
                if daemon is not None:
                    daemon.terminate()
                    daemon.wait(10)
    result.update(target_with_daemon_ms=150, target_without_daemon_ms=400, cpus=os.cpu_count())
    write_result(result, args.out)
    return 0


def _wait(sock: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with Client(sock, timeout=2) as c:
                if not c.call("status").get("indexing"):
                    return
        except Exception:
            pass
        time.sleep(0.1)
    raise SystemExit("the daemon did not start")


if __name__ == "__main__":
    raise SystemExit(main())
