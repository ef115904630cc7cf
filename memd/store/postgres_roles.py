"""What a host's PostgreSQL role may do in the team database, given by ``memd team
add-host`` and again by each migration that changes it."""

from __future__ import annotations

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
