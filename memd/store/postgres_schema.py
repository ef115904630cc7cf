"""What a PostgreSQL team database holds: its tables, and the migrations that build them.

The schema version lives in ``memd_schema``; each migration runs once, in a transaction,
under a lock on it (the first, an advisory lock), so administrators do not race.
"""

from __future__ import annotations

from typing import Any

from memd.store.postgres_functions import V5, V5_PRIVILEGES
from memd.store.postgres_nearest import NEAREST
from memd.store.postgres_reads import READS
from memd.store.postgres_roles import grant_host
from memd.store.postgres_scoped import SCOPED
from memd.store.postgres_sessions import TURN, V6
from memd.store.postgres_storage import ROWS

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

# pgvector: every passage vector also as a ``vector``, ranked by cosine in the database.
_V3 = """
CREATE EXTENSION IF NOT EXISTS vector;
ALTER TABLE memd_vectors ADD COLUMN embedding vector;
"""

# Trust (issue 27). Every function names its tables with their schema (@s) and runs with a
# fixed search_path, so a role's temporary table of the same name changes nothing. Host
# roles hold SELECT, INSERT and UPDATE of named columns only: PostgreSQL lets any role
# with table-wide UPDATE, DELETE or MAINTAIN lock a table against everyone, so deletes and
# ANALYZE go through the SECURITY DEFINER functions below, each limited to the caller's
# own rows. Chunks and vectors carry their file's scope (a foreign key keeps it the
# file's), so each policy tests indexed columns of its own row against the caller's
# readable hosts, resolved once per statement. The shared embedding cache goes: a row
# keyed by a text's hash proved the text was in someone's notes, whoever could read them.
_V4 = """
DROP TABLE memd_embedding_cache;
DROP SEQUENCE memd_cache_clock;
DROP POLICY memd_read ON memd_files; DROP POLICY memd_own ON memd_files;
DROP POLICY memd_read ON memd_chunks; DROP POLICY memd_own ON memd_chunks;
DROP POLICY memd_read ON memd_vectors; DROP POLICY memd_own ON memd_vectors;
DROP POLICY memd_own ON memd_session_files; DROP POLICY memd_own ON memd_meta;
DROP FUNCTION memd_may_read(text, text);
DROP FUNCTION memd_my_host();

ALTER TABLE memd_files ADD CONSTRAINT memd_files_scope UNIQUE (id, host, workspace);
ALTER TABLE memd_chunks ADD COLUMN host text, ADD COLUMN workspace text;
UPDATE memd_chunks c SET host = f.host, workspace = f.workspace FROM memd_files f
    WHERE f.id = c.file_id;
ALTER TABLE memd_chunks ALTER host SET NOT NULL, ALTER workspace SET NOT NULL,
    ADD CONSTRAINT memd_chunks_scope FOREIGN KEY (file_id, host, workspace)
        REFERENCES memd_files (id, host, workspace) ON DELETE CASCADE,
    ADD CONSTRAINT memd_chunks_scope_id UNIQUE (id, host, workspace);
ALTER TABLE memd_vectors ADD COLUMN host text, ADD COLUMN workspace text;
UPDATE memd_vectors v SET host = c.host, workspace = c.workspace FROM memd_chunks c
    WHERE c.id = v.chunk_id;
ALTER TABLE memd_vectors ALTER host SET NOT NULL, ALTER workspace SET NOT NULL,
    ADD CONSTRAINT memd_vectors_scope FOREIGN KEY (chunk_id, host, workspace)
        REFERENCES memd_chunks (id, host, workspace) ON DELETE CASCADE;
CREATE INDEX memd_chunks_scope_idx ON memd_chunks (host, workspace);

-- Which daemon publishes a scope: one at a time, or two would delete each other's files.
CREATE TABLE memd_leases (
    host text NOT NULL,
    workspace text NOT NULL,
    holder text NOT NULL,
    about text NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (host, workspace)
);

CREATE FUNCTION memd_my_host() RETURNS text LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT host FROM @s.memd_hosts WHERE role = current_user $$;
-- The hosts whose every workspace the caller reads (its own, and grants of '*').
CREATE FUNCTION memd_read_hosts() RETURNS text[] LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT coalesce(array_agg(h), '{}') FROM (
        SELECT host FROM @s.memd_hosts WHERE role = current_user
        UNION SELECT host FROM @s.memd_grants WHERE grantee = current_user AND workspace = '*'
    ) AS t(h) $$;
-- The single workspaces granted to the caller, as 'host/workspace'.
CREATE FUNCTION memd_read_scopes() RETURNS text[] LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT coalesce(array_agg(host || '/' || workspace), '{}') FROM @s.memd_grants
        WHERE grantee = current_user AND workspace <> '*' $$;

CREATE POLICY memd_read ON memd_files FOR SELECT USING (
    host = ANY ((SELECT @s.memd_read_hosts())::text[])
    OR host || '/' || workspace = ANY ((SELECT @s.memd_read_scopes())::text[]));
CREATE POLICY memd_add ON memd_files FOR INSERT WITH CHECK (host = (SELECT @s.memd_my_host()));
CREATE POLICY memd_change ON memd_files FOR UPDATE USING (host = (SELECT @s.memd_my_host()))
    WITH CHECK (host = (SELECT @s.memd_my_host()));
CREATE POLICY memd_read ON memd_chunks FOR SELECT USING (
    host = ANY ((SELECT @s.memd_read_hosts())::text[])
    OR host || '/' || workspace = ANY ((SELECT @s.memd_read_scopes())::text[]));
CREATE POLICY memd_add ON memd_chunks FOR INSERT WITH CHECK (host = (SELECT @s.memd_my_host()));
CREATE POLICY memd_change ON memd_chunks FOR UPDATE USING (host = (SELECT @s.memd_my_host()))
    WITH CHECK (host = (SELECT @s.memd_my_host()));
CREATE POLICY memd_read ON memd_vectors FOR SELECT USING (
    host = ANY ((SELECT @s.memd_read_hosts())::text[])
    OR host || '/' || workspace = ANY ((SELECT @s.memd_read_scopes())::text[]));
CREATE POLICY memd_add ON memd_vectors FOR INSERT WITH CHECK (host = (SELECT @s.memd_my_host()));
CREATE POLICY memd_own ON memd_session_files FOR ALL
    USING (EXISTS (SELECT 1 FROM @s.memd_files f
        WHERE f.id = file_id AND f.host = (SELECT @s.memd_my_host())))
    WITH CHECK (EXISTS (SELECT 1 FROM @s.memd_files f
        WHERE f.id = file_id AND f.host = (SELECT @s.memd_my_host())));
CREATE POLICY memd_own ON memd_meta FOR ALL
    USING (host = (SELECT @s.memd_my_host())) WITH CHECK (host = (SELECT @s.memd_my_host()));
ALTER TABLE memd_leases ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_own ON memd_leases FOR ALL
    USING (host = (SELECT @s.memd_my_host())) WITH CHECK (host = (SELECT @s.memd_my_host()));
-- Each role sees its own host and its own grants, no one else's.
ALTER TABLE memd_hosts ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_mine ON memd_hosts FOR SELECT USING (role = current_user);
ALTER TABLE memd_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY memd_mine ON memd_grants FOR SELECT USING (grantee = current_user);

-- Deletes and ANALYZE, as the tables' owner, of rows the caller may write: its own host's
-- (or any, for the owner and superusers). Inside a SECURITY DEFINER function current_user
-- is the owner, so the caller is session_user (a role that may SET ROLE to another is that
-- role's member, and may act as it anyway).
CREATE FUNCTION memd_may_write(h text) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT EXISTS (SELECT 1 FROM @s.memd_hosts WHERE role = session_user
            AND (h IS NULL OR host = h))
        OR pg_has_role(session_user, (SELECT relowner FROM pg_class
            WHERE oid = '@s.memd_files'::regclass), 'USAGE') $$;
CREATE FUNCTION memd_delete_files(h text, ids bigint[]) RETURNS bigint LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ WITH d AS (DELETE FROM @s.memd_files WHERE @s.memd_may_write(h) AND host = h
        AND id = ANY (ids) RETURNING 1) SELECT count(*) FROM d $$;
CREATE FUNCTION memd_delete_scope(h text, ws text) RETURNS bigint LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ DELETE FROM @s.memd_meta WHERE @s.memd_may_write(h) AND host = h AND workspace = ws;
        WITH d AS (DELETE FROM @s.memd_files WHERE @s.memd_may_write(h) AND host = h
        AND workspace = ws RETURNING 1) SELECT count(*) FROM d $$;
CREATE FUNCTION memd_delete_chunks(h text, ids bigint[]) RETURNS bigint LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ WITH d AS (DELETE FROM @s.memd_chunks WHERE @s.memd_may_write(h) AND host = h
        AND id = ANY (ids) RETURNING 1) SELECT count(*) FROM d $$;
CREATE FUNCTION memd_clear_file(h text, file bigint) RETURNS bigint LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ WITH d AS (DELETE FROM @s.memd_chunks WHERE @s.memd_may_write(h) AND host = h
        AND file_id = file RETURNING 1) SELECT count(*) FROM d $$;
CREATE FUNCTION memd_drop_vectors(h text, chunk bigint, model_name text, keep_bytes integer)
    RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ WITH d AS (DELETE FROM @s.memd_vectors WHERE @s.memd_may_write(h) AND host = h
        AND chunk_id = chunk AND model = model_name AND length(vector) <> keep_bytes
        RETURNING 1) SELECT count(*) FROM d $$;
-- The planner's statistics after a bulk write: at most once in 30 s, whoever asks.
CREATE TABLE memd_analyzed (one boolean PRIMARY KEY CHECK (one), at timestamptz NOT NULL);
CREATE FUNCTION memd_analyze() RETURNS boolean LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ BEGIN
        IF NOT @s.memd_may_write(NULL) OR EXISTS (SELECT 1 FROM @s.memd_analyzed
            WHERE at > now() - interval '30 s') THEN RETURN false; END IF;
        INSERT INTO @s.memd_analyzed VALUES (true, now())
            ON CONFLICT (one) DO UPDATE SET at = excluded.at;
        ANALYZE @s.memd_files, @s.memd_chunks, @s.memd_vectors;
        RETURN true;
    END $$;
-- The chunks a full-text query matches that the caller may read. Under row-level security
-- PostgreSQL may not use an index for an operator it cannot prove leaks nothing (@@ is
-- one), so a search read every row's tsvector (86 ms at 18k chunks; 2.4 as the owner):
-- this finds them by the GIN index as the owner, with the same rule as the policies (of
-- session_user: who logged in), and the query around it still reads under the policies.
CREATE FUNCTION memd_match(q tsquery) RETURNS SETOF bigint LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1000
    AS $$ WITH me AS (SELECT
            coalesce((SELECT array_agg(h) FROM (
                SELECT host FROM @s.memd_hosts WHERE role = session_user
                UNION SELECT host FROM @s.memd_grants
                    WHERE grantee = session_user AND workspace = '*') AS t(h)), '{}') AS hosts,
            coalesce((SELECT array_agg(host || '/' || workspace) FROM @s.memd_grants
                WHERE grantee = session_user AND workspace <> '*'), '{}') AS scopes,
            pg_has_role(session_user, (SELECT relowner FROM pg_class
                WHERE oid = '@s.memd_files'::regclass), 'USAGE') AS everything)
        SELECT c.id FROM @s.memd_chunks c, me WHERE c.tsv @@ q AND (me.everything
            OR c.host = ANY (me.hosts) OR c.host || '/' || c.workspace = ANY (me.scopes)) $$;
REVOKE EXECUTE ON FUNCTION memd_may_write(text), memd_delete_files(text, bigint[]),
    memd_delete_scope(text, text), memd_delete_chunks(text, bigint[]),
    memd_clear_file(text, bigint), memd_drop_vectors(text, bigint, text, integer),
    memd_analyze(), memd_match(tsquery) FROM PUBLIC;
"""

# Each entry moves the schema from version i to i + 1; append, never edit.
# The fifth: host roles reach the tables through memd's functions alone; the sixth: a
# session a host holds too long is ended; the seventh: every row counts against a share,
# analyze's turn is a lock no host may take, and reads start from the caller's scopes;
# the eighth: search by meaning reads no other scope's vectors (no graph serves all).
_V5 = V5 + READS + V5_PRIVILEGES
MIGRATIONS = [_V1, _V2, _V3, _V4, _V5, V6, ROWS + TURN + SCOPED, NEAREST]
SCHEMA_VERSION = len(MIGRATIONS)
FIRST_MIGRATION_LOCK = 0x6D656D64  # later ones lock memd_schema, which no host may


def migrate(conn: Any) -> None:
    """Bring the database to ``SCHEMA_VERSION``; refuse one a newer memd made."""
    import psycopg

    from memd.errors import StoreError

    current = _version(conn)
    if current == SCHEMA_VERSION:
        return  # a host's role may not create anything, and need not
    if current is not None and current > SCHEMA_VERSION:
        raise StoreError(
            f"the team database has schema version {current}, newer than this memd "
            f"({SCHEMA_VERSION}); upgrade memd"
        )
    try:
        with conn.transaction():
            first = f"SELECT pg_advisory_xact_lock({FIRST_MIGRATION_LOCK})"
            conn.execute(first if current is None else "LOCK TABLE memd_schema IN EXCLUSIVE MODE")
            _migrate(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        has = "no memd tables" if current is None else f"schema version {current}"
        raise StoreError(
            f"the team database has {has} and this memd needs version {SCHEMA_VERSION}, "
            "which only an administrator may make: memd team init --dsn <an administrator's DSN>"
        ) from exc


def _migrate(conn: Any) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS memd_schema (version integer NOT NULL)")
    row = conn.execute("SELECT version FROM memd_schema").fetchone()
    version = row[0] if row else 0
    if version == SCHEMA_VERSION:
        return  # another administrator's init got there first
    schema = _schema(conn)
    for step in range(version, SCHEMA_VERSION):
        statements = MIGRATIONS[step].replace("@s", schema)
        if "@v" in statements:
            statements = statements.replace("@v", _vector_schema(conn))
        conn.execute(statements)
    if version < 6:  # hosts added before: their privileges as they are now given
        hosts = "SELECT role FROM memd_hosts WHERE role IN (SELECT rolname FROM pg_roles)"
        for (role,) in conn.execute(hosts).fetchall():
            grant_host(conn, role)
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


def _vector_schema(conn: Any) -> str:
    """The schema pgvector is installed in, quoted."""
    from psycopg import sql

    (name,) = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    return sql.Identifier(name).as_string(conn)


def _schema(conn: Any) -> str:
    """The schema memd's tables are in (where the first migration made them), quoted."""
    from psycopg import sql

    (name,) = conn.execute("SELECT current_schema()").fetchone()
    row = conn.execute(
        "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = 'memd_files' AND c.relkind = 'r' AND n.nspname !~ '^pg_temp' "
        "ORDER BY n.nspname = current_schema() DESC LIMIT 1"
    ).fetchone()
    return sql.Identifier(row[0] if row else name).as_string(conn)
