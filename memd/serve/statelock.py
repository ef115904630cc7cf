"""The state folder's lock: one daemon per state folder, for the life of its process."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from memd.errors import DaemonError
from memd.store.private import private_folder


def take_lock(state_dir: Path) -> int:
    """Hold ``memd.lock`` in the state folder for the life of the process."""
    try:
        private_folder(state_dir)
        fd = os.open(state_dir / "memd.lock", os.O_RDWR | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)  # a lock file left readable by an older memd
    except OSError as exc:
        raise DaemonError(f"cannot use state folder {state_dir}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise DaemonError(
            f"memd is already running (pid {holder}) with state folder {state_dir}"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd
