"""Whether what is current is being found in the background, as two lock files in the
private state folder: ``memd index`` returns once the index is searchable and a child
process finds what later notes replaced (``memd.cli.finish``), holding a lock meanwhile.

- ``finish-<workspace>.lock`` is held (flock, exclusive) by the process finding it, for
  the whole finish. ``memd index`` takes it before it starts the child and hands the
  open file over, so no reader ever sees "nothing in flight" before the work began.
- ``finish-<workspace>.queue`` is held by a child that waits for an earlier one to end
  (a second ``memd index`` while the first's finish runs): two never write at once, and
  readers wait for the queued one too. With one queued already, a third ``memd index``
  needs no child: the queued one has not looked at the index yet, so it sees the newest.

Readers (a one-shot ``memd search``, ``memd context``, ...) poll with a shared lock,
which a holder's exclusive lock refuses, and give up after a bound. A holder that dies
frees its lock with it: a crash never leaves readers waiting. Each file holds
``{"pid": ..., "since": ...}`` of its holder, for ``memd status``.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memd.store.private import private_folder

_POLL_S = 0.05  # how often a reader looks again
# A reader's shared lock lasts a few system calls; a holder's, the whole finish. So one
# ``memd index`` that cannot take a lock at once tries again for this long before it
# takes it for held by a finish (and one that gives up early only queues a child more).
_PATIENCE_S = 0.3
# Seconds a one-shot reader waits for what is current, by method; ``MEMD_CURRENT_WAIT_S``
# sets one bound for all (0: never wait). Status never waits: it says what is in flight.
WAITS = {"status": 0.0, "memory_review": 30.0, "memory_search": 10.0,
         "memory_context": 10.0, "memory_recall": 10.0}  # fmt: skip


@dataclass(frozen=True)
class Finishing:
    """A finish in flight: its process and since when it was asked for."""

    pid: int | None
    since: str | None
    queued: bool  # waiting for an earlier finish to end

    def as_dict(self) -> dict:
        return {"pid": self.pid, "since": self.since, "queued": self.queued}


@dataclass(frozen=True)
class Handed:
    """A lock ``memd index`` took for its child: the open file (passed to the child) and
    which of the two it is (``run``: the child starts at once; ``queue``: it waits)."""

    fd: int
    kind: str


class FinishLock:
    """The two lock files of one workspace's finish in ``state_dir``."""

    def __init__(self, state_dir: Path, workspace: str) -> None:
        self.state_dir = state_dir
        self.run = state_dir / f"finish-{workspace}.lock"
        self.queue = state_dir / f"finish-{workspace}.queue"
        self.log = state_dir / "finish.log"

    # -- memd index: take a lock for the child ----------------------------------------------

    def hand_off(self) -> Handed | None:
        """A lock for a new child to hold, taken now: ``run`` when no finish is in flight,
        ``queue`` when one runs; None when a child already waits (it will read the index
        as it is now). Raises ``OSError`` when the state folder cannot be written."""
        private_folder(self.state_dir)
        queue = _take(self.queue)
        if queue is None:
            return None
        run = _take(self.run)
        if run is not None:
            os.close(queue)  # the queue is free again: nothing runs before this child
            handed = Handed(run, "run")
        else:
            handed = Handed(queue, "queue")
        self.stamp(handed, os.getpid())  # until the child's own pid is known
        return handed

    def stamp(self, handed: Handed, pid: int, since: str | None = None) -> None:
        """Write who holds ``handed`` and since when (now unless ``since``)."""
        since = since or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        _write(handed.fd, {"pid": pid, "since": since})

    # -- the child ----------------------------------------------------------------------------

    def take_run(self, queued: Handed) -> Handed:
        """Wait for the finish in flight to end, then hold the run lock and free the queue
        (the child a later ``memd index`` queued). Raises ``OSError``."""
        fd = _opened(self.run)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held from here on, before the queue is let go
        held = Handed(fd, "run")
        self.stamp(held, os.getpid(), _read(self.queue).get("since"))
        os.close(queued.fd)
        return held

    # -- readers ------------------------------------------------------------------------------

    def in_flight(self) -> Finishing | None:
        """The finish in flight (running or queued), or None."""
        # The queue first: a queued child takes the run lock before it lets the queue go,
        # so one seen free here is running (or done) when the run lock is looked at.
        queued = _held(self.queue)
        if _held(self.run):
            found = _read(self.run)
            return Finishing(found.get("pid"), found.get("since"), False)
        if queued:
            found = _read(self.queue)
            return Finishing(found.get("pid"), found.get("since"), True)
        return None

    def wait(self, seconds: float) -> Finishing | None:
        """Wait up to ``seconds`` for a finish in flight to end; the one still in flight
        then, or None (found, or none was in flight)."""
        until = time.monotonic() + seconds
        while (flight := self.in_flight()) is not None and time.monotonic() < until:
            time.sleep(min(_POLL_S, max(until - time.monotonic(), 0.0)))
        return flight


def wait_bounds(env: Mapping[str, str]) -> dict[str, float]:
    """Each method's wait for what is current: ``WAITS``, or ``MEMD_CURRENT_WAIT_S`` for
    all of them (a script that wants no wait sets 0)."""
    raw = env.get("MEMD_CURRENT_WAIT_S")
    if raw is None:
        return dict(WAITS)
    try:
        seconds = max(float(raw), 0.0)
    except ValueError:
        return dict(WAITS)
    return dict.fromkeys(WAITS, seconds)


def _take(path: Path) -> int | None:
    """``path`` opened (0600) and held exclusively, or None when a holder keeps it."""
    fd = _opened(path)
    until = time.monotonic() + _PATIENCE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= until:
                os.close(fd)
                return None
            time.sleep(0.01)


def _opened(path: Path) -> int:
    """``path`` opened for a holder, made if missing, private whatever the umask."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def _held(path: Path) -> bool:
    """Whether a holder keeps ``path`` locked (a reader's test: never creates it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no such file (nothing ever ran), or no state folder
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it the shared lock


def _write(fd: int, value: dict) -> None:
    data = json.dumps(value).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _read(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):  # being written: no pid or time this once
        return {}
    return value if isinstance(value, dict) else {}
