"""What a PostgreSQL team database holds: its tables, and the migrations that build them.

The schema version lives in ``memd_schema``; each migration runs once, in a transaction,
under an advisory lock, so hosts starting together do not race.
"""

from __future__ import annotations

from typing import Any

_V1 = """
CREATE TABLE memd_files (
    id bigserial PRIMARY KEY,
    host text NOT NULL,
    workspace text NOT NULL,
    path text NOT NULL,
    abspath text NOT NULL,
    realpath text NOT NULL,
    source text NOT NULL,
    date text,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    hash text NOT NULL,
    lines integer NOT NULL,
    tags jsonb NOT NULL DEFAULT '[]',
    aliases jsonb NOT NULL DEFAULT '[]',
    indexed_at double precision NOT NULL,
    UNIQUE (host, workspace, path)
);
CREATE INDEX memd_files_date ON memd_files (host, workspace, date);
CREATE TABLE memd_chunks (
    id bigserial PRIMARY KEY,
    file_id bigint NOT NULL REFERENCES memd_files ON DELETE CASCADE,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    heading text NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    fts_heading text NOT NULL,
    fts_body text NOT NULL,
    fts_meta text NOT NULL,
    fts_cjk text NOT NULL,
    -- FTS5's columns and weights: heading and tags count more than the body.
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', fts_heading), 'A')
        || setweight(to_tsvector('english', fts_meta), 'B')
        || setweight(to_tsvector('english', fts_body), 'C')
    ) STORED
);
CREATE INDEX memd_chunks_file ON memd_chunks (file_id, start_line);
CREATE INDEX memd_chunks_tsv ON memd_chunks USING gin (tsv);
CREATE TABLE memd_vectors (
    id bigserial PRIMARY KEY,
    chunk_id bigint NOT NULL REFERENCES memd_chunks ON DELETE CASCADE,
    model text NOT NULL,
    part integer NOT NULL,
    vector bytea NOT NULL,
    terms text NOT NULL,
    UNIQUE (chunk_id, model, part)
);
CREATE INDEX memd_vectors_model ON memd_vectors (model, id);
-- One embedding per text, team-wide: the key is the content hash and the model.
CREATE TABLE memd_embedding_cache (
    key bytea PRIMARY KEY,
    vector bytea NOT NULL,
    used bigint NOT NULL
);
CREATE INDEX memd_embedding_cache_used ON memd_embedding_cache (used);
CREATE TABLE memd_session_files (
    file_id bigint PRIMARY KEY REFERENCES memd_files ON DELETE CASCADE,
    read_offset bigint NOT NULL,
    lines integer NOT NULL,
    head text NOT NULL,
    head_bytes integer NOT NULL,
    session_id text NOT NULL,
    started text,
    skipped integer NOT NULL DEFAULT 0
);
CREATE TABLE memd_meta (
    host text NOT NULL,
    workspace text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (host, workspace, key)
);
CREATE SEQUENCE memd_cache_clock;
"""

# Who may read and write what: each host connects as its own role (memd_hosts), writes only
# its own rows, and reads its own and what memd_grants gives it. Chunks, vectors and read
# positions follow their file. The embedding cache is shared: a vector says nothing of whose.
_V2 = """
CREATE TABLE memd_hosts (role name PRIMARY KEY, host text NOT NULL UNIQUE);
CREATE TABLE memd_grants (
    grantee name NOT NULL,
    host text NOT NULL,
    workspace text NOT NULL DEFAULT '*',
    PRIMARY KEY (grantee, host, workspace)
);
CREATE FUNCTION memd_my_host() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT host FROM memd_hosts WHERE role = current_user $$;
CREATE FUNCTION memd_may_read(h text, w text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT h = memd_my_host() OR EXISTS (SELECT 1 FROM memd_grants g
        WHERE g.grantee = current_user AND g.host = h AND g.workspace IN (w, '*'))
$$;
ALTER TABLE memd_files ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_read ON memd_files FOR SELECT USING (memd_may_read(host, workspace));
CREATE POLICY memd_own ON memd_files FOR ALL
    USING (host = memd_my_host()) WITH CHECK (host = memd_my_host());
ALTER TABLE memd_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_read ON memd_chunks FOR SELECT
    USING (EXISTS (SELECT 1 FROM memd_files f WHERE f.id = file_id));
CREATE POLICY memd_own ON memd_chunks FOR ALL
    USING (EXISTS (SELECT 1 FROM memd_files f WHERE f.id = file_id AND f.host = memd_my_host()))
    WITH CHECK (EXISTS (SELECT 1 FROM memd_files f
        WHERE f.id = file_id AND f.host = memd_my_host()));
ALTER TABLE memd_vectors ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_read ON memd_vectors FOR SELECT
    USING (EXISTS (SELECT 1 FROM memd_chunks c WHERE c.id = chunk_id));
CREATE POLICY memd_own ON memd_vectors FOR ALL
    USING (EXISTS (SELECT 1 FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id
        WHERE c.id = chunk_id AND f.host = memd_my_host()))
    WITH CHECK (EXISTS (SELECT 1 FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id
        WHERE c.id = chunk_id AND f.host = memd_my_host()));
ALTER TABLE memd_session_files ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_own ON memd_session_files FOR ALL
    USING (EXISTS (SELECT 1 FROM memd_files f WHERE f.id = file_id AND f.host = memd_my_host()))
    WITH CHECK (EXISTS (SELECT 1 FROM memd_files f
        WHERE f.id = file_id AND f.host = memd_my_host()));
ALTER TABLE memd_meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_own ON memd_meta FOR ALL
    USING (host = memd_my_host()) WITH CHECK (host = memd_my_host());
GRANT SELECT ON memd_schema, memd_hosts, memd_grants TO PUBLIC;
"""

# pgvector: every passage vector also as a ``vector``, searched by cosine distance in the
# database (an HNSW index per vector size: ``postgres_admin.ann_index``).
_V3 = """
CREATE EXTENSION IF NOT EXISTS vector;
ALTER TABLE memd_vectors ADD COLUMN embedding vector;
"""

# Each entry moves the schema from version i to i + 1; append, never edit.
MIGRATIONS = [_V1, _V2, _V3]
SCHEMA_VERSION = len(MIGRATIONS)
_LOCK = 0x6D656D64  # "memd": one advisory lock for every memd migration


def migrate(conn: Any) -> None:
    """Bring the database to ``SCHEMA_VERSION``; refuse one a newer memd made."""
    from memd.errors import StoreError

    if _version(conn) == SCHEMA_VERSION:
        return  # a host's role may not create anything, and need not
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS memd_schema (version integer NOT NULL)")
        row = conn.execute("SELECT version FROM memd_schema").fetchone()
        version = row[0] if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the team database has schema version {version}, newer than this memd "
                f"({SCHEMA_VERSION}); upgrade memd"
            )
        for step in range(version, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[step])
        if row is None:
            conn.execute("INSERT INTO memd_schema VALUES (%s)", (SCHEMA_VERSION,))
        else:
            conn.execute("UPDATE memd_schema SET version = %s", (SCHEMA_VERSION,))


def _version(conn: Any) -> int | None:
    exists = conn.execute("SELECT to_regclass('memd_schema') IS NOT NULL").fetchone()[0]
    if not exists:
        return None
    row = conn.execute("SELECT version FROM memd_schema").fetchone()
    return row[0] if row else None
