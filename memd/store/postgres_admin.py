"""Running a team database: its tables, which role publishes as which host, who may read
whose workspaces, and how far each host has published. An administrator's connection."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from memd.errors import StoreError
from memd.store.postgres import database_errors
from memd.store.postgres_roles import grant_host
from memd.store.postgres_schema import SCHEMA_VERSION, migrate

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
END $$
"""


@contextlib.contextmanager
def _admin(dsn: str) -> Iterator[Any]:
    import psycopg

    with database_errors(dsn), psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        yield conn


def init(dsn: str, dims: tuple[int, ...] = (384,), lock_timeout_s: float = 10.0) -> int:
    """Create or migrate the tables, functions and policies, and an HNSW index for vectors
    of each size in ``dims`` (idempotent); the schema version.

    A step that needs a table another session holds waits ``lock_timeout_s`` at most, then
    fails naming who holds it: waiting longer would queue every host's publishing behind
    it (PostgreSQL grants locks in order)."""
    import psycopg

    with _admin(dsn) as conn:
        conn.execute("SELECT set_config('lock_timeout', %s, false)",
                     (f"{max(1, round(lock_timeout_s * 1000))}ms",))  # fmt: skip
        try:
            migrate(conn)
            for n in dims:
                # Cosine distance on the vectors of one size (a model's): what team search asks.
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS memd_vectors_hnsw_{int(n)} ON memd_vectors "
                    f"USING hnsw ((embedding::vector({int(n)})) vector_cosine_ops) "
                    f"WHERE vector_dims(embedding) = {int(n)}"
                )
            conn.execute(f"ANALYZE {_TABLES}")  # the planner then knows the new index pays
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreError(
                f"memd team init waited {lock_timeout_s:g} s for a lock on the team tables "
                f"and gave up, changing nothing; held by {_lock_holders(conn)}. Try again when "
                "they are done, or wait longer with --lock-timeout"
            ) from exc
        _close_side_doors(conn)
    return SCHEMA_VERSION


def _lock_holders(conn: Any) -> str:
    """Who holds locks on memd's tables now (other sessions): role, pid, state and for how
    long its transaction has been open."""
    rows = conn.execute(
        "SELECT DISTINCT a.usename, a.pid, a.state, "
        "round(extract(epoch FROM now() - a.xact_start)) FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid JOIN pg_class c ON c.oid = l.relation "
        "WHERE c.relname LIKE 'memd\\_%' AND l.granted AND a.pid <> pg_backend_pid() "
        "ORDER BY a.pid"
    ).fetchall()
    if not rows:
        return "a session that has since let go"
    return "; ".join(
        f"role {role} (pid {pid}, {state}, transaction open {int(age or 0)} s)"
        for role, pid, state, age in rows
    )


HOST_CONNECTIONS = 32


def add_host(dsn: str, role: str, host: str) -> None:
    """Let PostgreSQL role ``role`` publish as ``host`` (its own rows only; at most
    ``HOST_CONNECTIONS`` connections, unless the role has a limit of its own)."""
    from psycopg import sql

    with _admin(dsn) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO memd_hosts VALUES (%s, %s) ON CONFLICT (role) DO UPDATE SET host = %s",
            (role, host, host),
        )
        grant_host(conn, role)
        # Enough for a daemon (a publisher per workspace, a few team searches, the CLI),
        # not enough to take every connection the server has from the other hosts.
        who = sql.Identifier(role)
        limit = conn.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (role,))
        if limit.fetchone()[0] < 0:
            conn.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(
                who, sql.Literal(HOST_CONNECTIONS)))  # fmt: skip


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
    """Let role ``grantee`` read ``host``'s workspace (``*``: all of that host's)."""
    with _admin(dsn) as conn:
        conn.execute(
            "INSERT INTO memd_grants VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (grantee, host, workspace),
        )


def revoke(dsn: str, grantee: str, host: str, workspace: str = "*") -> None:
    with _admin(dsn) as conn:
        conn.execute(
            "DELETE FROM memd_grants WHERE grantee = %s AND host = %s AND workspace = %s",
            (grantee, host, workspace),
        )


def status(dsn: str) -> list[dict]:
    """Each published workspace: its host, files, chunks, vectors and last publish."""
    with _admin(dsn) as conn:
        rows = conn.execute(
            "SELECT f.host, f.workspace, count(DISTINCT f.id), count(c.id), "
            "(SELECT count(*) FROM memd_vectors v JOIN memd_chunks c2 ON c2.id = v.chunk_id "
            " JOIN memd_files f2 ON f2.id = c2.file_id "
            " WHERE f2.host = f.host AND f2.workspace = f.workspace), "
            "to_timestamp(max(f.indexed_at)) "
            "FROM memd_files f LEFT JOIN memd_chunks c ON c.file_id = f.id "
            "GROUP BY f.host, f.workspace ORDER BY f.host, f.workspace"
        ).fetchall()
    return [
        {
            "host": host,
            "workspace": workspace,
            "files": files,
            "chunks": chunks,
            "vectors": vectors,
            "published_at": at.isoformat(timespec="seconds") if at else None,
        }
        for host, workspace, files, chunks, vectors, at in rows
    ]


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
