"""What a host's PostgreSQL role may do in the team database, given by ``memd team
add-host`` and again by each migration that changes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memd.store.postgres_functions import HOST_FUNCTIONS

# Every table and sequence of memd's: a host role holds no privilege on any of them (it
# reaches them through memd's functions alone).
TABLES = (
    "memd_files, memd_chunks, memd_vectors, memd_session_files, memd_meta, memd_leases, "
    "memd_hosts, memd_grants, memd_analyzed"
)
SEQUENCES = "memd_files_id_seq, memd_chunks_id_seq, memd_vectors_id_seq"
# What earlier versions gave host roles, taken back.
OLD_FUNCTIONS = (
    "memd_delete_files(text, bigint[]), memd_delete_scope(text, text), "
    "memd_delete_chunks(text, bigint[]), memd_clear_file(text, bigint), "
    "memd_drop_vectors(text, bigint, text, integer), memd_match(tsquery)"
)
# A host's session, unless it sets its own: an open transaction or a statement that lasts
# cannot hold what others need for long (a daemon's connection sets the same).
ROLE_SETTINGS = {
    "statement_timeout": "60s",
    "lock_timeout": "10s",
    "idle_in_transaction_session_timeout": "60s",
}


def grant_host(conn: Any, role: str) -> None:
    """Give ``role`` exactly a host's privileges (taking back any others it was given)."""
    from psycopg import sql

    who = sql.Identifier(role)
    conn.execute(sql.SQL(f"REVOKE ALL ON {TABLES} FROM {{}}").format(who))
    conn.execute(sql.SQL(f"REVOKE ALL ON SEQUENCE {SEQUENCES} FROM {{}}").format(who))
    conn.execute(sql.SQL(f"REVOKE ALL ON FUNCTION {OLD_FUNCTIONS} FROM {{}}").format(who))
    functions = ", ".join(HOST_FUNCTIONS)
    conn.execute(sql.SQL(f"GRANT EXECUTE ON FUNCTION {functions} TO {{}}").format(who))
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(
        sql.Identifier(conn.info.dbname), who))  # fmt: skip
    db = sql.Identifier(conn.info.dbname)
    for name, value in ROLE_SETTINGS.items():
        conn.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET {} = {}").format(
            who, db, sql.Identifier(name), sql.Literal(value)))  # fmt: skip


# Connections: each host role gets a limit, and the team's hosts together never more than
# ``HOSTS_SHARE`` of what the server lets roles that are not superusers open (the rest is
# left to administrators and other programs): per-role limits that added up past
# max_connections let a few hosts take every connection from the others.
HOST_CONNECTIONS = 10  # by default: a publisher per workspace, four team searches, the CLI
MIN_CONNECTIONS = 4  # fewer, and a daemon could not publish and search at once
HOSTS_SHARE = 0.75


@dataclass(frozen=True)
class Connections:
    """The server's connections as the team's hosts share them."""

    usable: int  # what roles that are not superusers may open on the server
    budget: int  # what the team's host roles may open together
    held: int  # what the other hosts' limits add up to (one without a limit: all usable)
    unlimited: tuple[str, ...]  # host roles with no limit


def connections(conn: Any, besides: str = "") -> Connections:
    """How the server's connections stand for the hosts of this team other than ``besides``."""
    (usable,) = conn.execute(
        "SELECT current_setting('max_connections')::int "
        "- current_setting('superuser_reserved_connections')::int "
        "- coalesce(current_setting('reserved_connections', true)::int, 0)"
    ).fetchone()
    rows = conn.execute(
        "SELECT r.rolname, r.rolconnlimit FROM memd_hosts h JOIN pg_roles r "
        "ON r.rolname = h.role WHERE h.role <> %s AND NOT r.rolsuper",
        (besides,),
    ).fetchall()
    unlimited = tuple(sorted(role for role, n in rows if n < 0))
    held = sum(usable if n < 0 else n for _, n in rows)
    return Connections(usable, int(usable * HOSTS_SHARE), held, unlimited)


def limit_connections(conn: Any, role: str, wanted: int | None, new: bool) -> int:
    """Give host role ``role`` a connection limit within the team's share: ``wanted``, or
    (None) the limit it has, or ``HOST_CONNECTIONS`` or what is left when less; a host
    added before keeps its own. Refuses one that does not fit; the limit given."""
    from psycopg import sql

    from memd.errors import InvalidParams

    (own,) = conn.execute(
        "SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (role,)
    ).fetchone()
    if wanted is None and own >= 0 and not new:
        return own
    c = connections(conn, role)
    room = c.budget - c.held
    n = wanted if wanted is not None else own if own >= 0 else min(HOST_CONNECTIONS, room)
    if n > room or n < (1 if wanted is not None else MIN_CONNECTIONS):
        without = f"; {', '.join(c.unlimited)} without a limit" if c.unlimited else ""
        raise InvalidParams(
            "connections",
            f"role {role} may not open {n} connections: the team's hosts may open "
            f"{c.budget} together ({HOSTS_SHARE:.0%} of the {c.usable} the server allows roles "
            f"that are not superusers) and the others hold {c.held}{without}, leaving "
            f"{max(room, 0)}. Raise max_connections, lower another host's with ALTER ROLE ... "
            "CONNECTION LIMIT, or give --connections N",
        )
    conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(
        sql.Identifier(role), sql.Literal(n)))  # fmt: skip
    return n
