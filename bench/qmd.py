"""qmd beside memd: run the ``qmd`` command on PATH on the same vault, as a user runs it.

qmd (npm ``@tobilu/qmd``) keeps one index per user: every call here gets a HOME of its
own (index, config and cache folders inside it, and that folder as the working directory,
so no project-local ``.qmd`` is picked up), so a new HOME is a new, empty index. Keyword
search (``qmd search``) and ``qmd get`` load no model; nothing here runs ``qmd embed`` or
``qmd query``, which would fetch one. docs/benchmarks.md says how qmd was installed.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path


def on_path() -> bool:
    """Whether a ``qmd`` command is on PATH."""
    return shutil.which("qmd") is not None


def environment(home: Path) -> dict:
    """The environment of a qmd call whose index lives under ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QMD_")}
    return {
        **env,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


def version() -> str:
    """``qmd --version`` and the Node.js that runs it, for the result file."""
    try:
        qmd = subprocess.run(["qmd", "--version"], capture_output=True, text=True, timeout=60)
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return f"{qmd.stdout.strip() or qmd.stderr.strip()[-200:]} on Node.js {node.stdout.strip()}"


class QmdFailed(RuntimeError):
    """A qmd command exited non-zero; the message carries the command and its stderr."""


def run(cmd: list[str], home: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one qmd call with its index under ``home``."""
    env = environment(home)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        how = f"exited {out.returncode}"
        if out.returncode < 0:  # a native module that does not fit this Node.js crashes it
            how = f"was killed by {signal.Signals(-out.returncode).name}"
        raise QmdFailed(f"{' '.join(cmd)} {how}: {out.stderr.decode()[-500:]}")
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def problem(home: Path) -> str | None:
    """None when qmd runs here (``qmd status`` opens an index, so its native SQLite module
    loads); else why not, for the result file."""
    try:
        run(["qmd", "status"], home)
    except (OSError, QmdFailed) as exc:
        return str(exc)
    return None


def index(vault: Path, home: Path, name: str = "bench") -> tuple[float, float]:
    """Wall and CPU seconds of qmd's full keyword index of ``vault`` (``qmd collection
    add``) into a new index under ``home``, which must not hold one yet."""
    if (home / ".cache" / "qmd").exists():
        raise QmdFailed(f"{home} already holds a qmd index: give each full index a new HOME")
    return run(["qmd", "collection", "add", str(vault), "--name", name, "--mask", "**/*.md"], home)


def search(query: str, name: str = "bench") -> list[str]:
    """The ``qmd search`` command for ``query`` in collection ``name``."""
    return ["qmd", "search", query, "-c", name]


def get(rel: str, lines: int, name: str = "bench") -> list[str]:
    """The ``qmd get`` command for the first ``lines`` lines of the note at ``rel``."""
    return ["qmd", "get", f"{name}/{rel}:1", "-l", str(lines)]
