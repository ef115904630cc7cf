"""What a host's PostgreSQL role may do in the team database, given by ``memd team
add-host`` and again by each migration that changes it."""

from __future__ import annotations

from typing import Any

# What a host role may do to each table: read (RLS picks the rows), add, and change the
# columns a publish changes. Never table-wide UPDATE, DELETE or MAINTAIN (each lets a role
# LOCK the table against every other host); deletes go through memd_delete_*.
HOST_COLUMNS = {
    "memd_files": "abspath, realpath, source, date, size, mtime_ns, hash, lines, tags, aliases, "
    "indexed_at",
    "memd_chunks": "fts_heading, fts_body, fts_meta, fts_cjk",
    "memd_vectors": None,
    "memd_session_files": "read_offset, lines, head, head_bytes, session_id, started, skipped",
    "memd_meta": "value",
    "memd_leases": "holder, about, until",
}
HOST_FUNCTIONS = (
    "memd_delete_files(text, bigint[]), memd_delete_scope(text, text), "
    "memd_delete_chunks(text, bigint[]), memd_clear_file(text, bigint), "
    "memd_drop_vectors(text, bigint, text, integer), memd_analyze(), memd_match(tsquery)"
)
HOST_SEQUENCES = "memd_files_id_seq, memd_chunks_id_seq, memd_vectors_id_seq"


def grant_host(conn: Any, role: str) -> None:
    """Give ``role`` exactly a host's privileges (taking back any others it was given)."""
    from psycopg import sql

    who = sql.Identifier(role)
    tables = ", ".join(HOST_COLUMNS)
    conn.execute(sql.SQL(f"REVOKE ALL ON {tables} FROM {{}}").format(who))
    conn.execute(sql.SQL(f"GRANT SELECT, INSERT ON {tables} TO {{}}").format(who))
    for table, columns in HOST_COLUMNS.items():
        if columns:
            conn.execute(sql.SQL(f"GRANT UPDATE ({columns}) ON {table} TO {{}}").format(who))
    conn.execute(sql.SQL(f"REVOKE ALL ON SEQUENCE {HOST_SEQUENCES} FROM {{}}").format(who))
    # USAGE (nextval) without SELECT: no reading of how far a sequence has counted.
    conn.execute(sql.SQL(f"GRANT USAGE ON SEQUENCE {HOST_SEQUENCES} TO {{}}").format(who))
    conn.execute(sql.SQL(f"GRANT EXECUTE ON FUNCTION {HOST_FUNCTIONS} TO {{}}").format(who))
    conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(
        sql.Identifier(conn.info.dbname), who))  # fmt: skip
