"""What a host's role may call in the team database: memd's own functions, and nothing else.

Host roles hold no privilege on any table or sequence. Each way through that the earlier
design left (the planner's statistics read by EXPLAIN, ids taken ahead of a sequence,
locks, shadowing tables) came from giving them table privileges under row-level security,
so they get what databases serving hostile tenants give: EXECUTE on a few ``SECURITY
DEFINER`` functions that run as the tables' owner. Each takes its caller from
``session_user`` (who logged in; inside such a function ``current_user`` is the owner),
assigns ids itself, bounds what it accepts, and waits for a lock a few seconds at most.
Row-level security stays on the tables as a second wall.
"""

from __future__ import annotations

FILE_MAX_BYTES = 8 * 1024 * 1024  # one file's stored text (its chunks and their search columns)
HOST_MAX_BYTES = 4 * 1024**3  # a host's whole share, unless `team add-host --max-bytes` says
LOCK_WAIT = "5s"  # a function waits this long for a lock, then fails (the publisher retries)

# SQLSTATEs memd's functions raise: a file the database will not take (the rest publish),
# a host over its share, and a write without the scope's lease.
FILE_REFUSED, HOST_FULL, NO_LEASE = "MDF01", "MDQ01", "MDL01"

# pgvector's types and operators are found in its schema (@v), after the catalog's own; no
# one but the owner may create anything there.
DEFINER = (
    f"SECURITY DEFINER SET search_path = pg_catalog, @v, pg_temp SET lock_timeout = '{LOCK_WAIT}'"
)

V5 = f"""
ALTER TABLE memd_files ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE memd_hosts ADD COLUMN max_bytes bigint,
    ADD COLUMN used_bytes bigint NOT NULL DEFAULT 0;
REVOKE SELECT ON memd_hosts, memd_grants FROM PUBLIC;

-- Each host's stored bytes, kept by the statements that change its files: a publish
-- checks the host's share in constant time (a sum over its files grew with every file).
CREATE FUNCTION memd_count_bytes() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$ BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE @s.memd_hosts h SET used_bytes = h.used_bytes - g.n
                FROM (SELECT host, sum(bytes) AS n FROM gone GROUP BY host) AS g
                WHERE h.host = g.host;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            UPDATE @s.memd_hosts h SET used_bytes = h.used_bytes + g.n
                FROM (SELECT host, sum(bytes) AS n FROM added GROUP BY host) AS g
                WHERE h.host = g.host;
        END IF;
        RETURN NULL;
    END $$;
CREATE TRIGGER memd_bytes_added AFTER INSERT ON memd_files REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_bytes();
CREATE TRIGGER memd_bytes_changed AFTER UPDATE ON memd_files
    REFERENCING OLD TABLE AS gone NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_bytes();
CREATE TRIGGER memd_bytes_removed AFTER DELETE ON memd_files REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_bytes();

CREATE TYPE memd_hit AS (id bigint, path text, start_line integer, end_line integer,
    heading text, text text, source text, date text, host text, workspace text,
    file_id bigint, tsv tsvector, fts_cjk text);

-- The host the logged-in role publishes as (NULL: none).
-- (The tables' owner, memd's own tools, acts as the host its session names in memd.host.)
CREATE FUNCTION memd_caller() RETURNS text LANGUAGE sql STABLE {DEFINER}
    AS $$ SELECT coalesce((SELECT host FROM @s.memd_hosts WHERE role = session_user),
        CASE WHEN pg_has_role(session_user, (SELECT relowner FROM pg_class
            WHERE oid = '@s.memd_files'::regclass), 'USAGE')
        THEN nullif(current_setting('memd.host', true), '') END) $$;

-- What the logged-in role reads: its host's and every-workspace grants' hosts, single
-- granted workspaces as 'host/workspace', or everything (the tables' owner).
CREATE FUNCTION memd_reader(OUT hosts text[], OUT scopes text[], OUT everything boolean)
    LANGUAGE sql STABLE {DEFINER}
    AS $$ SELECT
        coalesce((SELECT array_agg(h) FROM (
            SELECT host FROM @s.memd_hosts WHERE role = session_user
            UNION SELECT host FROM @s.memd_grants
                WHERE grantee = session_user AND workspace = '*') AS t(h)), '{{}}'),
        coalesce((SELECT array_agg(host || '/' || workspace) FROM @s.memd_grants
            WHERE grantee = session_user AND workspace <> '*'), '{{}}'),
        pg_has_role(session_user, (SELECT relowner FROM pg_class
            WHERE oid = '@s.memd_files'::regclass), 'USAGE') $$;

-- The logged-in role's host and what it may read, for doctor and whoami.
CREATE FUNCTION memd_me() RETURNS TABLE (host text, grants text[]) LANGUAGE sql STABLE
    {DEFINER}
    AS $$ SELECT @s.memd_caller(), coalesce((SELECT array_agg(g.host || '/' || g.workspace
        ORDER BY g.host, g.workspace) FROM @s.memd_grants g WHERE g.grantee = session_user),
        '{{}}') $$;

-- Whose a write is, refused unless the caller is a host, the workspace is named and the
-- caller's daemon ``holder`` holds the scope's lease now.
CREATE FUNCTION memd_writer(w text, holder text) RETURNS text LANGUAGE plpgsql STABLE
    {DEFINER}
    AS $$ DECLARE me text := @s.memd_caller(); BEGIN
        IF me IS NULL THEN
            RAISE EXCEPTION 'role % publishes as no host: memd team add-host', session_user
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF coalesce(w, '') = '' OR length(w) > 200 THEN
            RAISE EXCEPTION 'no workspace named' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM @s.memd_leases l WHERE l.host = me AND l.workspace = w
                AND l.holder = memd_writer.holder AND l.until > now()) THEN
            RAISE EXCEPTION 'this daemon does not hold the lease of %/%', me, w
                USING ERRCODE = '{NO_LEASE}';
        END IF;
        RETURN me;
    END $$;

-- Refuse (HOST_FULL) host ``me`` storing ``adding`` bytes more, ``freed`` fewer, past its share.
CREATE FUNCTION memd_check_share(me text, adding bigint, freed bigint) RETURNS void
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE used bigint; share bigint; BEGIN
        SELECT h.used_bytes, h.max_bytes INTO used, share FROM @s.memd_hosts h WHERE h.host = me;
        share := coalesce(share, {HOST_MAX_BYTES});
        IF coalesce(used, 0) - freed + adding > share THEN
            RAISE EXCEPTION 'host % would take % bytes, more than its share of %', me,
                coalesce(used, 0) - freed + adding, share USING ERRCODE = '{HOST_FULL}';
        END IF;
    END $$;

-- Take or extend the caller's lease of workspace ``w`` for ``seconds``: granted when free,
-- run out, or already ``holder``'s; else who holds it and for how long yet.
-- ``h``: the host the daemon means to publish as (refused when it is not the caller's).
CREATE FUNCTION memd_lease(h text, w text, holder text, about text, seconds integer)
    RETURNS TABLE (took boolean, held_by text, left_s integer) LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE me text := @s.memd_caller(); BEGIN
        IF me IS NULL THEN
            RAISE EXCEPTION 'role % publishes as no host: memd team add-host', session_user
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF h IS DISTINCT FROM me THEN
            RAISE EXCEPTION 'role % publishes as %, not as %', session_user, me, h
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF coalesce(w, '') = '' OR length(w) > 200 OR coalesce(holder, '') = '' THEN
            RAISE EXCEPTION 'a lease needs a workspace and a holder'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        INSERT INTO @s.memd_leases AS l VALUES (me, w, left(holder, 200), left(about, 500),
                now() + least(greatest(seconds, 10), 3600) * interval '1 s')
            ON CONFLICT (host, workspace) DO UPDATE SET holder = excluded.holder,
                about = excluded.about, until = excluded.until
            WHERE l.holder = excluded.holder OR l.until < now();
        IF FOUND THEN RETURN QUERY SELECT true, NULL::text, NULL::integer; RETURN; END IF;
        RETURN QUERY SELECT false, l.about, ceil(extract(epoch FROM l.until - now()))::integer
            FROM @s.memd_leases l WHERE l.host = me AND l.workspace = w;
    END $$;

-- Give up a lease (a daemon stopping): another daemon may publish at once.
CREATE FUNCTION memd_release(w text, holder text) RETURNS boolean LANGUAGE sql {DEFINER}
    AS $$ WITH d AS (DELETE FROM @s.memd_leases l WHERE l.host = @s.memd_caller()
        AND l.workspace = w AND l.holder = memd_release.holder RETURNING 1)
        SELECT EXISTS (SELECT 1 FROM d) $$;

-- Publish one file whole: its row and its chunks (arrays, one element a chunk, in order),
-- replacing what the scope held at that path; the chunks' new ids, in order.
CREATE FUNCTION memd_put_file(w text, holder text, path text, abspath text, realpath text,
        source text, date text, size bigint, mtime_ns bigint, hash text, lines integer,
        tags jsonb, aliases jsonb, starts integer[], ends integer[], headings text[],
        texts text[], tokens integer[], fts_heading text[], fts_body text[],
        fts_meta text[], fts_cjk text[])
    RETURNS TABLE (file_id bigint, chunk_ids bigint[]) LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE
        me text := @s.memd_writer(w, holder);
        n integer := coalesce(cardinality(starts), 0);
        stored bigint;
        fid bigint;
        ids bigint[];
    BEGIN
        IF coalesce(path, '') = '' OR n > 100000 OR n <> coalesce(cardinality(ends), 0)
            OR n <> coalesce(cardinality(headings), 0) OR n <> coalesce(cardinality(texts), 0)
            OR n <> coalesce(cardinality(tokens), 0)
            OR n <> coalesce(cardinality(fts_heading), 0)
            OR n <> coalesce(cardinality(fts_body), 0)
            OR n <> coalesce(cardinality(fts_meta), 0)
            OR n <> coalesce(cardinality(fts_cjk), 0) THEN
            RAISE EXCEPTION 'a file needs a path and one value a chunk in each array'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        stored := octet_length(path) + octet_length(abspath) + octet_length(realpath)
            + coalesce(octet_length(tags::text), 0) + coalesce(octet_length(aliases::text), 0)
            + (SELECT coalesce(sum(coalesce(octet_length(a), 0) + coalesce(octet_length(b), 0)
                + coalesce(octet_length(c), 0) + coalesce(octet_length(d), 0)
                + coalesce(octet_length(e), 0) + coalesce(octet_length(f), 0)), 0)
               FROM unnest(headings, texts, fts_heading, fts_body, fts_meta, fts_cjk)
                   AS u(a, b, c, d, e, f));
        IF stored > {FILE_MAX_BYTES} THEN
            RAISE EXCEPTION '% takes % bytes, more than the % a file may', path, stored,
                {FILE_MAX_BYTES} USING ERRCODE = '{FILE_REFUSED}';
        END IF;
        PERFORM @s.memd_check_share(me, stored, coalesce((SELECT f.bytes
            FROM @s.memd_files f WHERE f.host = me AND f.workspace = w
            AND f.path = memd_put_file.path), 0));
        INSERT INTO @s.memd_files AS f (host, workspace, path, abspath, realpath, source,
                date, size, mtime_ns, hash, lines, tags, aliases, indexed_at, bytes)
            VALUES (me, w, path, abspath, realpath, source, date, size, mtime_ns, hash,
                lines, coalesce(tags, '[]'), coalesce(aliases, '[]'),
                extract(epoch FROM clock_timestamp()), stored)
            ON CONFLICT ON CONSTRAINT memd_files_host_workspace_path_key DO UPDATE SET
                abspath = excluded.abspath,
                realpath = excluded.realpath, source = excluded.source, date = excluded.date,
                size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash,
                lines = excluded.lines, tags = excluded.tags, aliases = excluded.aliases,
                indexed_at = excluded.indexed_at, bytes = excluded.bytes
            RETURNING f.id INTO fid;
        DELETE FROM @s.memd_chunks c WHERE c.file_id = fid;
        WITH added AS (
            INSERT INTO @s.memd_chunks (host, workspace, file_id, start_line, end_line,
                heading, text, tokens, fts_heading, fts_body, fts_meta, fts_cjk)
            SELECT me, w, fid, u.s, u.e, u.h, u.t, u.k, u.a, u.b, u.c, u.d
            FROM unnest(starts, ends, headings, texts, tokens, fts_heading, fts_body,
                fts_meta, fts_cjk) WITH ORDINALITY AS u(s, e, h, t, k, a, b, c, d, n)
            ORDER BY u.n RETURNING id)
        SELECT coalesce(array_agg(added.id ORDER BY added.id), '{{}}') INTO ids FROM added;
        RETURN QUERY SELECT fid, ids;
    END $$;

-- A file's passage vectors (arrays, one element a passage): rows of chunks the caller's
-- scope does not hold are dropped; a vector of the same model and another size gives way.
CREATE FUNCTION memd_put_vectors(w text, holder text, model text, chunk_ids bigint[],
        parts integer[], blobs bytea[], terms text[], embeddings vector[])
    RETURNS bigint LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE
        me text := @s.memd_writer(w, holder);
        n integer := coalesce(cardinality(chunk_ids), 0);
        added bigint;
    BEGIN
        IF n > 100000 OR n <> coalesce(cardinality(parts), 0)
            OR n <> coalesce(cardinality(blobs), 0) OR n <> coalesce(cardinality(terms), 0)
            OR n <> coalesce(cardinality(embeddings), 0) OR coalesce(model, '') = '' THEN
            RAISE EXCEPTION 'one chunk, part, vector, terms and embedding a passage'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT coalesce(sum(2 * octet_length(b) + octet_length(t)), 0) INTO added
            FROM unnest(blobs, terms) AS u(b, t);
        PERFORM @s.memd_check_share(me, added, 0);
        DELETE FROM @s.memd_vectors v USING unnest(chunk_ids, blobs) AS u(c, b)
            WHERE v.chunk_id = u.c AND v.host = me AND v.workspace = w
            AND v.model = memd_put_vectors.model AND length(v.vector) <> length(u.b);
        WITH mine AS (
            SELECT u.c, u.p, u.b, u.t, u.e, c.file_id
            FROM unnest(chunk_ids, parts, blobs, terms, embeddings) AS u(c, p, b, t, e)
            JOIN @s.memd_chunks c ON c.id = u.c AND c.host = me AND c.workspace = w
            WHERE octet_length(u.b) = 4 * vector_dims(u.e) AND octet_length(u.t) <= 65536),
        put AS (
            INSERT INTO @s.memd_vectors AS nv (host, workspace, chunk_id, model, part, vector,
                terms, embedding)
            SELECT me, w, mine.c, memd_put_vectors.model, mine.p, mine.b, mine.t, mine.e
            FROM mine ON CONFLICT DO NOTHING
            RETURNING nv.chunk_id, 2 * octet_length(nv.vector) + octet_length(nv.terms) AS size),
        grown AS (
            UPDATE @s.memd_files f SET bytes = f.bytes + g.size
            FROM (SELECT c.file_id, sum(put.size) AS size FROM put
                JOIN @s.memd_chunks c ON c.id = put.chunk_id GROUP BY c.file_id) AS g
            WHERE f.id = g.file_id RETURNING 1)
        SELECT count(*) INTO added FROM put;
        RETURN added;
    END $$;

CREATE FUNCTION memd_unpublish(w text, holder text, ids bigint[]) RETURNS bigint
    LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE me text := @s.memd_writer(w, holder); gone bigint; BEGIN
        WITH d AS (DELETE FROM @s.memd_files f WHERE f.host = me AND f.workspace = w
            AND f.id = ANY (ids) RETURNING 1) SELECT count(*) INTO gone FROM d;
        RETURN gone;
    END $$;

CREATE FUNCTION memd_unpublish_scope(w text, holder text) RETURNS bigint
    LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE me text := @s.memd_writer(w, holder); gone bigint; BEGIN
        DELETE FROM @s.memd_meta m WHERE m.host = me AND m.workspace = w;
        WITH d AS (DELETE FROM @s.memd_files f WHERE f.host = me AND f.workspace = w
            RETURNING 1) SELECT count(*) INTO gone FROM d;
        RETURN gone;
    END $$;

CREATE FUNCTION memd_get_meta(w text, k text) RETURNS text LANGUAGE sql STABLE {DEFINER}
    AS $$ SELECT m.value FROM @s.memd_meta m WHERE m.host = @s.memd_caller()
        AND m.workspace = w AND m.key = k $$;

CREATE FUNCTION memd_set_meta(w text, holder text, k text, v text) RETURNS void
    LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE me text := @s.memd_writer(w, holder); BEGIN
        IF octet_length(k) > 200 OR octet_length(v) > 4096 THEN
            RAISE EXCEPTION 'a meta key or value too long' USING ERRCODE = '{FILE_REFUSED}';
        END IF;
        INSERT INTO @s.memd_meta VALUES (me, w, k, v)
            ON CONFLICT (host, workspace, key) DO UPDATE SET value = excluded.value;
    END $$;

"""

# After the reading functions (``postgres_reads``): what host roles may call.
V5_PRIVILEGES = """
REVOKE EXECUTE ON FUNCTION {functions}, memd_check_share(text, bigint, bigint),
    memd_count_bytes() FROM PUBLIC;
-- Any role may ask which host it is (doctor asks before the role is a host).
GRANT EXECUTE ON FUNCTION memd_me() TO PUBLIC;
"""

# What a host role could call at schema version 5, writing and reading.
V5_FUNCTIONS = (
    "memd_caller()",
    "memd_reader()",
    "memd_me()",
    "memd_writer(text, text)",
    "memd_lease(text, text, text, text, integer)",
    "memd_release(text, text)",
    "memd_put_file(text, text, text, text, text, text, text, bigint, bigint, text, integer, "
    "jsonb, jsonb, integer[], integer[], text[], text[], integer[], text[], text[], text[], "
    "text[])",
    "memd_put_vectors(text, text, text, bigint[], integer[], bytea[], text[], vector[])",
    "memd_unpublish(text, text, bigint[])",
    "memd_unpublish_scope(text, text)",
    "memd_get_meta(text, text)",
    "memd_set_meta(text, text, text, text)",
    "memd_file_rows(text, text, text[])",
    "memd_chunk_rows(bigint)",
    "memd_hits(text, text, bigint[])",
    "memd_matching(text, text, tsquery, text[], boolean, text, text, bigint[], integer)",
    "memd_dated(text, text, text, text, bigint[], integer)",
    "memd_counts(text, text)",
    "memd_nearest(text, text, text, vector, integer)",
    "memd_passages(text, text, text, bigint[], vector)",
    "memd_has_vectors(text)",
    "memd_status()",
    "memd_analyze()",
)

V5_PRIVILEGES = V5_PRIVILEGES.replace("{functions}", ", ".join(V5_FUNCTIONS))
# What a host role may call (and nothing more in memd's database): the sixth version adds
# ending sessions held past their bound (``postgres_sessions``).
HOST_FUNCTIONS = (*V5_FUNCTIONS, "memd_reap()")
