"""Running a team database: its tables, which role publishes as which host, who may read
whose workspaces, and how far each host has published. An administrator's connection."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

from memd.config import HOST_NAME, HOST_NAME_RULE
from memd.errors import InvalidParams, StoreError
from memd.store import postgres_roles as roles
from memd.store.postgres_errors import database_errors
from memd.store.postgres_functions import HOST_MAX_BYTES
from memd.store.postgres_roles import grant_host, limit_connections
from memd.store.postgres_schema import FIRST_MIGRATION_LOCK, SCHEMA_VERSION, migrate
from memd.store.postgres_sessions import HOLD_S, may_reap

_TABLES = "memd_files, memd_chunks, memd_vectors, memd_session_files, memd_meta, memd_leases"

# What any role of the database could otherwise read about rows it may not: PostgreSQL's
# per-table and per-database counters (pg_stat_user_tables and the functions under it),
# relation sizes, and how far a sequence has counted. Taken from PUBLIC in memd's database
# only; superusers and pg_monitor keep them. (The planner's row estimates, pg_class.reltuples
# and EXPLAIN, stay readable: PostgreSQL has no way to hide them.)
_REVEALING = r"""
DO $$ DECLARE f regprocedure; BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND (
            (p.proname ~ '^pg_stat_get_' AND p.proargtypes[0] = 'oid'::regtype)
            OR p.proname IN ('pg_relation_size', 'pg_total_relation_size', 'pg_table_size',
                             'pg_indexes_size', 'pg_sequence_last_value'))
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO pg_monitor', f);
    END LOOP;
    -- Large objects: any role could store as many as it liked, past its host's share.
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace
        AND p.proname IN ('lo_creat', 'lo_create', 'lo_from_bytea', 'lo_import', 'lowrite',
                          'lo_put')
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END $$
"""


@contextlib.contextmanager
def _admin(dsn: str) -> Iterator[Any]:
    import psycopg

    with database_errors(dsn), psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        yield conn


def init(dsn: str, dims: tuple[int, ...] = (384,), lock_timeout_s: float = 10.0) -> int:
    """Create or migrate the tables, functions and policies (idempotent); the schema
    version. ``dims`` builds nothing any more: no vector index serves every host, since a
    graph walked through others' passages told where they lie (``postgres_nearest``).

    A step that needs a table another session holds waits ``lock_timeout_s`` at most, then
    fails naming who holds it: waiting longer would queue every host's publishing behind
    it (PostgreSQL grants locks in order)."""
    import psycopg

    del dims  # kept so that scripts passing --dims still run
    with _admin(dsn) as conn:
        conn.execute("SELECT set_config('lock_timeout', %s, false)",
                     (f"{max(1, round(lock_timeout_s * 1000))}ms",))  # fmt: skip
        try:
            migrate(conn)
            conn.execute(f"ANALYZE {_TABLES}")  # the planner then knows the new indexes pay
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreError(
                f"memd team init waited {lock_timeout_s:g} s for a lock on the team tables "
                f"and gave up, changing nothing; held by {_lock_holders(conn)}. Try again when "
                "they are done, or wait longer with --lock-timeout"
            ) from exc
        _close_side_doors(conn)
        _warn_of_bounds(conn)
    return SCHEMA_VERSION


def _warn_of_bounds(conn: Any) -> None:
    """Warn where the server leaves a bound of hosts unkept: the owner may not end a
    session held too long, or the hosts' connection limits add up past their share."""
    from memd.log import get_logger

    log = get_logger()
    if not may_reap(conn):
        log.warning("team_sessions_unbounded", role=conn.info.user, fix="GRANT pg_signal_backend, "
                    f"pg_read_all_stats TO {conn.info.user} (as a superuser); until then a host "
                    "that keeps a transaction open is not ended")  # fmt: skip
    c = roles.connections(conn)
    if c.held > c.budget:
        log.warning("team_connections_over", hosts_may_open=c.held, share=c.budget,
                    server_allows=c.usable, unlimited=", ".join(c.unlimited) or None,
                    fix="lower hosts' limits: ALTER ROLE ... CONNECTION LIMIT N")  # fmt: skip


def _lock_holders(conn: Any) -> str:
    """Who holds locks on memd's tables (or the first migration's) now (other sessions):
    role, pid, state and for how long its transaction has been open."""
    rows = conn.execute(
        "SELECT DISTINCT a.usename, a.pid, a.state, "
        "round(extract(epoch FROM now() - a.xact_start)) FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid LEFT JOIN pg_class c ON c.oid = l.relation "
        "WHERE (c.relname LIKE 'memd\\_%%' OR l.locktype = 'advisory' AND l.objid = %s) "
        "AND l.granted AND a.pid <> pg_backend_pid() AND a.datname = current_database() "
        "ORDER BY a.pid",
        (FIRST_MIGRATION_LOCK,),
    ).fetchall()
    if not rows:
        return "a session that has since let go"
    return "; ".join(
        f"role {role} (pid {pid}, {state}, "
        + ("in no transaction)" if age is None else f"transaction open {int(age)} s)")
        for role, pid, state, age in rows
    )


WORKSPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # as the config names them


def add_host(
    dsn: str,
    role: str,
    host: str,
    max_bytes: int | None = None,
    max_hold_s: int | None = None,
    connections: int | None = None,
) -> None:
    """Let PostgreSQL role ``role`` publish as ``host``: its own rows only, at most
    ``max_bytes`` stored (default ``HOST_MAX_BYTES``), no transaction open longer than
    ``max_hold_s`` (default ``HOLD_S``), at most ``connections`` at once (default: the
    role's own limit, else ``HOST_CONNECTIONS``), the team's hosts together within a share
    of the server's. Refuses a host name the config would refuse, a role that does not
    exist, a host another role publishes as, and connections the server cannot give."""
    if not HOST_NAME.fullmatch(host or ""):
        raise InvalidParams("host", f"{host!r}: {HOST_NAME_RULE}")
    for name, value in (("max-bytes", max_bytes), ("max-hold-s", max_hold_s),
                        ("connections", connections)):  # fmt: skip
        if value is not None and value <= 0:
            raise InvalidParams(name, "must be a positive number")
    with _admin(dsn) as conn, conn.transaction():
        _known_role(conn, role)
        other = conn.execute(
            "SELECT role FROM memd_hosts WHERE host = %s AND role <> %s", (host, role)
        ).fetchone()
        if other:
            raise InvalidParams("host", f"role {other[0]} publishes as {host} already")
        new = not conn.execute("SELECT 1 FROM memd_hosts WHERE role = %s", (role,)).fetchone()
        conn.execute(
            "INSERT INTO memd_hosts (role, host, max_bytes, max_hold_s) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (role) DO UPDATE SET host = excluded.host, "
            "max_bytes = coalesce(excluded.max_bytes, memd_hosts.max_bytes), "
            "max_hold_s = coalesce(excluded.max_hold_s, memd_hosts.max_hold_s)",
            (role, host, max_bytes, max_hold_s),
        )
        conn.execute(  # what the host stores already (its files may predate the row)
            "UPDATE memd_hosts h SET used_bytes = (SELECT coalesce(sum(f.bytes), 0) "
            "FROM memd_files f WHERE f.host = h.host) WHERE h.role = %s",
            (role,),
        )
        grant_host(conn, role)
        limit_connections(conn, role, connections, new)


def _known_role(conn: Any, role: str) -> None:
    if (
        not role
        or not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    ):
        raise InvalidParams(
            "role", f"no PostgreSQL role {role!r} on this server: CREATE ROLE ... LOGIN first"
        )


def _known_host(conn: Any, host: str) -> None:
    if not conn.execute("SELECT 1 FROM memd_hosts WHERE host = %s", (host,)).fetchone():
        raise InvalidParams("host", f"no host {host!r}: memd team add-host ROLE {host} first")


def _workspace_or_all(workspace: str) -> None:
    if workspace != "*" and not WORKSPACE_NAME.fullmatch(workspace or ""):
        raise InvalidParams(
            "workspace",
            f"{workspace!r}: name one workspace (letters, digits, '-', '_' and '.'), or * for "
            "all of the host's",
        )


def _close_side_doors(conn: Any) -> None:
    """No role makes temporary tables or objects in memd's database unless given them by
    name, and counters of others' rows are not public (a warning where not allowed)."""
    from psycopg import sql

    from memd.log import get_logger

    db = sql.Identifier(conn.info.dbname)
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(db))
    (schema,) = conn.execute("SELECT current_schema()").fetchone()
    conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(sql.Identifier(schema)))
    try:
        with conn.transaction():
            conn.execute(_REVEALING)
    except Exception as exc:  # not a superuser: the tables are safe, the counters are not
        get_logger().warning("team_counters_public", error=str(exc).strip())


def grant(dsn: str, grantee: str, host: str, workspace: str = "*") -> None:
    """Let role ``grantee`` read ``host``'s workspace (``*``: all of that host's). Refuses
    an empty or malformed workspace, a role that does not exist, a host not added."""
    _workspace_or_all(workspace)
    with _admin(dsn) as conn:
        _known_role(conn, grantee)
        _known_host(conn, host)
        conn.execute(
            "INSERT INTO memd_grants VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (grantee, host, workspace),
        )


def revoke(dsn: str, grantee: str, host: str, workspace: str = "*") -> None:
    """Take back exactly one grant; refuses one that was never given."""
    _workspace_or_all(workspace)
    with _admin(dsn) as conn:
        gone = conn.execute(
            "DELETE FROM memd_grants WHERE grantee = %s AND host = %s AND workspace = %s",
            (grantee, host, workspace),
        ).rowcount
        if not gone:
            given = [f"{h}/{w}" for h, w in conn.execute(
                "SELECT host, workspace FROM memd_grants WHERE grantee = %s ORDER BY 1, 2",
                (grantee,)).fetchall()]  # fmt: skip
            raise InvalidParams(
                "role",
                f"role {grantee} has no grant of {host}/{workspace} (it has: "
                f"{', '.join(given) or 'none'})",
            )


def status(dsn: str) -> dict:
    """What the connection's role may see of the team: each published workspace it reads
    (its host, files, chunks, vectors and last publish), the hosts (role, host, bytes
    stored and the most it may, the longest it may hold a transaction, its connection
    limit) and the grants; an administrator sees them all, a host its
    own."""
    with _admin(dsn) as conn:
        published = conn.execute("SELECT * FROM memd_status()").fetchall()
        owner = conn.execute(
            "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class "
            "WHERE oid = 'memd_files'::regclass"
        ).fetchone()[0]
        if owner:
            hosts = conn.execute(
                "SELECT h.role, h.host, h.used_bytes, coalesce(h.max_bytes, %s), "
                "coalesce(h.max_hold_s, %s), (SELECT rolconnlimit FROM pg_roles "
                "WHERE rolname = h.role) FROM memd_hosts h ORDER BY h.host",
                (HOST_MAX_BYTES, HOLD_S),
            ).fetchall()
            grants = conn.execute(
                "SELECT grantee, host, workspace FROM memd_grants ORDER BY 1, 2, 3"
            ).fetchall()
        else:
            host, given = conn.execute("SELECT * FROM memd_me()").fetchone()
            hosts = [(conn.info.user, host, None, None, None, None)] if host else []
            grants = [(conn.info.user, *g.split("/", 1)) for g in given]
    return {
        "workspaces": [
            {
                "host": host,
                "workspace": workspace,
                "files": files,
                "chunks": chunks,
                "vectors": vectors,
                "published_at": _when(at),
            }
            for host, workspace, files, chunks, vectors, at in published
        ],
        "hosts": [
            {
                "role": role,
                "host": host,
                "bytes": _int(used),
                "max_bytes": _int(most),
                "max_hold_s": hold,
                "connections": None if n is None or n < 0 else n,
            }
            for role, host, used, most, hold, n in hosts
        ],
        "grants": [{"role": r, "host": h, "workspace": w} for r, h, w in grants],
    }


def _int(n: Any) -> int | None:
    return None if n is None else int(n)  # sum() of bigints is numeric: Decimal in Python


def _when(at: float | None) -> str | None:
    if at is None:
        return None
    return dt.datetime.fromtimestamp(at, dt.UTC).isoformat(timespec="seconds")


def whoami(dsn: str) -> dict:
    """What a host's connection is: the server, the schema version (None: no tables), the
    role, the host it publishes as (None: not added), and whether it is a superuser."""
    with _admin(dsn) as conn:
        server, role, superuser, exists = conn.execute(
            "SELECT current_setting('server_version'), current_user, "
            "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
            "to_regclass('memd_schema') IS NOT NULL"
        ).fetchone()
        version = host = None
        if exists:
            version = conn.execute("SELECT version FROM memd_schema").fetchone()[0]
            host = conn.execute(
                "SELECT host FROM memd_me()"
                if version >= 5
                else "SELECT host FROM memd_hosts WHERE role = current_user"
            ).fetchone()
            host = host[0] if host else None
    return {"server": server, "version": version, "role": role, "host": host, "super": superuser}
