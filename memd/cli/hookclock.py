"""A hook's time: its budget, the daemon's share of it, and how much a busy machine
stretches the work of this process (``memd.cli.hookrun`` decides its routes by these)."""

from __future__ import annotations

import os
import time
from typing import Any

BUDGET_S = 1.5  # a hook's whole answer, from its start (MEMD_HOOK_BUDGET_S sets another)
DAEMON_S = 0.7  # the daemon's share: past it the hook reads the index itself
# Kept at the end of the budget for MEMORY.md as written, printing and leaving the process
# (the host waits for its exit, not for the text): on a loaded machine that takes tenths.
EXIT_S = 0.3
INDEX_CPU_S = 0.2  # CPU seconds reading the index takes this process (5,000 notes: 0.15-0.25)
CONFIG_CPU_S = 0.05  # ... and loading the config before it
_STRETCH: list[float] = []  # measured once (``stretch``)


def daemon_share(started: float | None = None, budget: float | None = None) -> float:
    """The seconds a daemon asked now may take: ``DAEMON_S`` of the budget, and never
    into the time the other routes need (``started``: this process's start)."""
    budget = budget_s(os.environ) if budget is None else budget
    stretch()  # before the daemon is waited for
    now = time.monotonic()
    started = now - since_start() if started is None else started
    return max(min(budget * DAEMON_S / BUDGET_S, started + budget - EXIT_S - now), 0.05)


def budget_s(env: Any) -> float:
    """The hook's budget in seconds: ``MEMD_HOOK_BUDGET_S`` (a slow machine's own), else
    ``BUDGET_S``."""
    try:
        return max(float(env.get("MEMD_HOOK_BUDGET_S", BUDGET_S)), 0.5)
    except ValueError:
        return BUDGET_S


def in_time(started: float, deadline: float, cpu: float = 0.0) -> bool:
    """Whether work of ``cpu`` seconds (default: reading the index, ``INDEX_CPU_S``) can end
    by ``deadline``, stretched as much as this process's own start was (wall time over CPU
    time since it began). On a machine too busy for it, it is not started: its work would
    be thrown away, and it would hold the interpreter the answer at the deadline needs."""
    return time.monotonic() + (cpu or INDEX_CPU_S) * stretch() <= deadline


def stretch() -> float:
    """Wall time over CPU time from this process's start to the first call: how much the
    machine stretches this process's work, measured before any wait for the daemon."""
    if not _STRETCH:
        _STRETCH.append(max(since_start() / max(time.process_time(), 0.01), 1.0))
    return _STRETCH[0]


def since_start() -> float:
    """Seconds since this process started (Linux's /proc), else 0: starting Python and
    importing memd count against a hook's budget too."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return min(max(uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"), 0.0), 5.0)
    except (OSError, ValueError, IndexError):
        return 0.0
