"""The systemd notify protocol: tell the service manager we are ready, stopping, alive.

Does nothing when ``NOTIFY_SOCKET`` is not set (not started by systemd with Type=notify).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from memd.log import get_logger

log = get_logger()


def sd_notify(message: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``message`` (e.g. ``READY=1``) to ``$NOTIFY_SOCKET``; False when there is none."""
    env = os.environ if env is None else env
    address = env.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract socket namespace
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError as exc:
        log.warning("sd_notify_failed", message=message, error=str(exc))
        return False
    return True


def watchdog_interval(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds between WATCHDOG=1 pings (half of ``$WATCHDOG_USEC``), or None if unset."""
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 2e6, 0.05)
    except ValueError:
        return None
