"""Finding what later notes replaced after ``memd index`` has returned, in a child process,
as ``git gc --auto`` does its work: the index is searchable when the command ends, and
what is current follows within seconds.

``start`` (in ``memd index``) takes the finish lock (``memd.index.finishlock``) and hands
it to a detached child, ``python -m memd.cli.finish``, that loads the same config the same
way and refreshes what is current (``Currency.catch_up``) while it holds the lock. The
child writes only in the state folder (the index, its statements cache, ``finish.log``),
runs at normal priority (readers wait for it), and logs every failure to ``finish.log``.
A workspace or state folder gone meanwhile ends it quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from memd.errors import MemdError
from memd.index.finishlock import FinishLock, Handed
from memd.log import get_logger

if TYPE_CHECKING:
    from pathlib import Path

    from memd.config import Config
    from memd.memory import Memory

log = get_logger()
T = TypeVar("T")

_LOG_BYTES = 1 << 20  # finish.log past this is kept as finish.log.1 and begun afresh
_ROUNDS = 3  # refreshes at most, while later ``memd index`` runs keep changing the index


def start(memory: Memory, config_arg: str | None) -> dict:
    """Hand finding what is current to a child process, if there is work: what ``memd
    index --json`` adds to its answer (``current``: "pending", and the child's ``pid``,
    ``queued`` behind an earlier finish, and its ``log``); empty when there is none."""
    if not memory.currency.waiting():
        return {}
    config = memory.config
    lock = FinishLock(config.state_dir, memory.workspace.name)
    try:
        handed = lock.hand_off()
    except OSError as exc:  # no lock file to hold: found here, as with --wait
        return _here(memory, exc)
    if handed is None:  # a child waits already and has not read the index: it will
        return {"current": "pending", "finishing": {"pid": None, "queued": True}}
    command = [sys.executable, "-B", "-m", "memd.cli.finish", "--workspace",
               memory.workspace.name, f"--{handed.kind}-fd", str(handed.fd)]  # fmt: skip
    if config_arg is not None:
        command += ["--config", os.path.abspath(config_arg)]
    try:
        with _log_file(lock) as out:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                     pass_fds=(handed.fd,), start_new_session=True)  # fmt: skip
    except OSError as exc:  # no process to start (limits), or no log to write
        os.close(handed.fd)
        return _here(memory, exc)
    with contextlib.suppress(OSError):  # who holds it, for status: the child's pid now
        lock.stamp(handed, child.pid)
    os.close(handed.fd)  # the child holds it now
    finishing = {"pid": child.pid, "queued": handed.kind == "queue", "log": str(lock.log)}
    return {"current": "pending", "finishing": finishing}


def _here(memory: Memory, exc: OSError) -> dict:
    """What is current found in this process after all, with why."""
    log.warning("finish_not_started", workspace=memory.workspace.name, error=str(exc))
    memory.currency.catch_up()
    return {}


def started_line(added: dict) -> str | None:
    """What ``memd index`` says of a finish it started (None: none was needed)."""
    if not added:
        return None
    pid = added["finishing"]["pid"]
    who = f"pid {pid}" if pid is not None else "after the one in flight"
    return (f"finding what later notes replaced in the background ({who}); "
            "'memd index --wait' waits for it")  # fmt: skip


def _log_file(lock: FinishLock) -> BinaryIO:
    from memd.store.private import private_file

    try:
        if lock.log.stat().st_size > _LOG_BYTES:
            os.replace(lock.log, f"{lock.log}.1")
    except FileNotFoundError:
        pass
    private_file(lock.log)
    return open(lock.log, "ab")  # closed by the caller's ``with``


def main(argv: Sequence[str] | None = None) -> int:
    """The child: hold the lock handed over, refresh what is current, log, exit."""
    parser = argparse.ArgumentParser(prog="python -m memd.cli.finish")
    parser.add_argument("--config")
    parser.add_argument("--workspace", required=True)
    fd = parser.add_mutually_exclusive_group(required=True)
    fd.add_argument("--run-fd", type=int)
    fd.add_argument("--queue-fd", type=int)
    args = parser.parse_args(argv)
    from memd.log import configure_logging

    configure_logging("info", "json", sys.stderr)  # stderr is finish.log
    queued = args.run_fd is None
    handed = Handed(args.queue_fd, "queue") if queued else Handed(args.run_fd, "run")
    try:
        return _finish(args.config, args.workspace, handed)
    except Exception as exc:  # anything: in the log, never lost silently
        why = f"{type(exc).__name__}: {exc}"
        log.exception("finish_failed", workspace=args.workspace, error=why)
        return 1


def _finish(config_arg: str | None, name: str, handed: Handed) -> int:
    from memd.configfile import load_config
    from memd.index.index import database_path

    config = load_config(config_arg)
    lock = FinishLock(config.state_dir, name)
    if handed.kind == "queue":
        log.info("finish_queued", workspace=name)
        try:
            handed = lock.take_run(handed)
        except FileNotFoundError:  # the state folder went while this child waited
            log.info("finish_skipped", workspace=name, why=f"{config.state_dir} is gone")
            return 0
    started = time.perf_counter()
    gone = _gone(config, name, database_path(config, name))
    if gone is not None:
        log.info("finish_skipped", workspace=name, why=gone)
        return 0
    from memd.memory import Memory

    memory = Memory(config, name, commit=_unless_daemon(config))
    try:
        rounds = 0
        while rounds < _ROUNDS and memory.currency.waiting():
            memory.currency.catch_up()
            rounds += 1
        updates = len(memory.currency.updates)
    finally:
        memory.close()
    gone = _gone(config, name, database_path(config, name))
    if gone is not None:  # what was found there is of no use; nothing else to say
        log.info("finish_skipped", workspace=name, why=gone)
        return 0
    import resource

    from memd.index.workers import stop_fork_server

    stop_fork_server()  # its workers' CPU counts once it has ended
    # The CPU of this process and of the workers that took the notes apart, for the log.
    own, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    cpu = own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime
    log.info("finish_done", workspace=name, rounds=rounds, updates=updates,
             ms=round((time.perf_counter() - started) * 1000), cpu_s=round(cpu, 2))  # fmt: skip
    return 0


def _unless_daemon(config: Config) -> Callable[[Callable[[], T]], T | None]:
    """Writes that are skipped once a daemon answers on this config's socket: it started
    while this child read the notes, and its own first refresh (of every note, as ever)
    reads them as they are now, where this child's rows would be as they were."""
    from memd.client import connect

    def commit(write: Callable[[], T]) -> T | None:
        try:
            client = connect(config, timeout=2.0)
        except MemdError:  # a daemon of another config on this socket: not this one's
            client = None
        if client is None:
            return write()
        client.close()
        log.info("finish_left_to_daemon", socket=str(config.socket))
        return None

    return commit


def _gone(config: Config, name: str, database: Path) -> str | None:
    """Why there is nothing to finish: the workspace or the index is gone (None: both are
    there). Checked first, so a state folder removed meanwhile is not made again."""
    try:
        folder = config.workspace(name).path
    except MemdError as exc:
        return str(exc)
    if not folder.is_dir():
        return f"the workspace folder {folder} is gone"
    if not database.is_file():
        return f"the index {database} is gone"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
