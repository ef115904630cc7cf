"""Which daemon publishes a scope of the team database: one at a time, or two daemons
publishing as the same host and workspace would delete each other's files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memd.errors import StoreError

LEASE_S = 180  # a publisher that stops renewing its scope's lease gives it up after this


class LeaseHeld(StoreError):
    """Another daemon publishes this host's workspace: this one must not write to it."""


@dataclass(frozen=True)
class Lease:
    """Who publishes a scope: a daemon's lasting id (its state folder's) and, for the
    message another daemon gets, where it runs."""

    holder: str
    about: str


def renew(db: Any, host: str | None, workspace: str | None, lease: Lease) -> None:
    """Take or extend ``host``/``workspace``'s lease on connection ``db`` (in the write's
    own transaction), or raise ``LeaseHeld`` naming its holder."""
    took = db.execute(
        "INSERT INTO memd_leases AS l VALUES (%s, %s, %s, %s, now() + %s * interval '1 s') "
        "ON CONFLICT (host, workspace) DO UPDATE SET holder = excluded.holder, "
        "about = excluded.about, until = excluded.until "
        "WHERE l.holder = excluded.holder OR l.until < now() RETURNING 1",
        (host, workspace, lease.holder, lease.about, LEASE_S),
    ).fetchall()
    if not took:
        about, left = db.execute(
            "SELECT about, ceil(extract(epoch FROM until - now())) FROM memd_leases "
            "WHERE host = %s AND workspace = %s",
            (host, workspace),
        ).fetchone()
        raise LeaseHeld(
            f"another memd publishes {host}/{workspace} to the team database ({about}); this "
            f"one publishes nothing until it stops (its lease runs out {int(left)} s after "
            "its last write), or give this one its own team.host"
        )
