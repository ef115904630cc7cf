"""Which daemon publishes a scope of the team database: one at a time, or two daemons
publishing as the same host and workspace would delete each other's files. The database
keeps the lease and checks it on every write (``memd_writer``); a daemon renews it on a
timer whatever it publishes."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from memd.errors import StoreError

LEASE_S = 180  # a publisher that stops renewing its scope's lease gives it up after this
RENEWALS = 6  # a running publisher renews its lease this many times a lease


class LeaseHeld(StoreError):
    """Another daemon publishes this host's workspace: this one must not write to it."""


@dataclass(frozen=True)
class Lease:
    """Who publishes a scope: a daemon's lasting id (its machine's and state folder's),
    for the message another daemon gets where it runs, and how long a renewal lasts."""

    holder: str
    about: str
    seconds: float = LEASE_S
    # The name an older memd gave the same daemon (a uuid in its state folder): a lease
    # still held under it is taken over at once, not waited out, after an upgrade.
    former: str | None = None


# A store opened outside a daemon (a tool, a test) writes under its process's lease.
THIS_PROCESS = Lease(uuid.uuid4().hex, f"{socket.gethostname()} pid {os.getpid()}")


def renew(db: Any, host: str | None, workspace: str | None, lease: Lease) -> None:
    """Take or extend ``host``'s lease of ``workspace`` on connection ``db``, or raise
    ``LeaseHeld`` naming its holder (the caller turns psycopg's errors into memd's)."""
    took, about, left = _take(db, host, workspace, lease.holder, lease)
    if not took and lease.former and _take(db, host, workspace, lease.former, lease)[0]:
        db.execute("SELECT memd_release(%s, %s)", (workspace, lease.former))
        took, about, left = _take(db, host, workspace, lease.holder, lease)
    if not took:
        raise LeaseHeld(
            f"another memd publishes {host}/{workspace} to the team database ({about}); this "
            f"one publishes nothing until it stops (its lease runs out {left} s after its "
            "last renewal), or give this one its own team.host"
        )


def _take(db: Any, host: str | None, workspace: str | None, holder: str, lease: Lease) -> tuple:
    """``memd_lease`` as ``holder``: (taken, who holds it, seconds it has left)."""
    return db.execute(
        "SELECT * FROM memd_lease(%s, %s, %s, %s, %s)",
        (host, workspace, holder, lease.about, round(lease.seconds)),
    ).fetchone()
