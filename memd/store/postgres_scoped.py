"""Reading functions that touch no row and no index entry of a scope the caller may not
read, so that what a call costs tells nothing of others' notes.

PostgreSQL counts the buffers a statement touches, functions' included, and shows them to
whoever runs ``EXPLAIN (ANALYZE, BUFFERS)``: a host with no grants that asked
``memd_matching`` for a word saw one buffer more when any other host's note held it (the
GIN index found the row, the heap was read, the caller's rule then dropped it), so it
could test any word, and with prefix queries (``ke:*``) read others' terms a letter at a
time; timing the call told the same, less exactly. Here every lookup starts from the
scopes the caller reads: the keyword index holds each scope's terms under a tag of their
own (``memd_scoped_terms``), so a query asks only for the caller's tags, and rows are
found by (host, workspace) before anything else is read (search by meaning too:
``postgres_nearest``). What is left: sizes (the planner's row counts).
"""

from __future__ import annotations

from memd.store.postgres_functions import DEFINER

SCOPED = f"""
-- The tag a scope's terms carry in the keyword index.
CREATE FUNCTION memd_scope_tag(h text, w text) RETURNS text LANGUAGE sql IMMUTABLE
    PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    AS $$ SELECT left(md5(h || '/' || w), 16) || ':' $$;

-- A chunk's terms under its scope's tag (positions dropped: the index never held them).
CREATE FUNCTION memd_scoped_terms(h text, w text, tsv tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 1000 SET search_path = pg_catalog, pg_temp
    AS $$ SELECT array_to_tsvector(ARRAY(SELECT @s.memd_scope_tag(h, w) || u.lexeme
        FROM unnest(tsv) AS u WHERE octet_length(u.lexeme) < 2000)) $$;

-- ``q`` asked of the scopes tagged ``tags``: the same terms under each tag, phrases as
-- plain conjunctions (what the index can tell; the chunk's own terms decide after).
CREATE FUNCTION memd_scoped_query(q tsquery, tags text[]) RETURNS tsquery LANGUAGE sql
    IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    AS $$ SELECT CASE WHEN numnode(q) = 0 THEN q ELSE (SELECT string_agg('(' ||
        regexp_replace(regexp_replace(q::text, '<(-|[0-9]+)>', '&', 'g'),
            '''((?:[^'']|'''')*)''', '''' || t || '\\1''', 'g') || ')', ' | ')
        FROM unnest(tags) AS t)::tsquery END $$;

DROP INDEX memd_chunks_tsv;
CREATE INDEX memd_chunks_scoped_terms ON memd_chunks
    USING gin (memd_scoped_terms(host, workspace, tsv));

-- Every scope the caller reads, found without reading a row of any other: each readable
-- host's workspaces by a loose scan of the (host, workspace, path) index.
CREATE FUNCTION memd_readable_scopes() RETURNS TABLE (host text, workspace text)
    LANGUAGE plpgsql STABLE {DEFINER} ROWS 10
    AS $$ DECLARE r record; hh text; ww text; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        hh := CASE WHEN r.everything THEN (SELECT min(f.host) FROM @s.memd_files f) END;
        FOR i IN 1 .. CASE WHEN r.everything THEN 2147483647
                ELSE coalesce(cardinality(r.hosts), 0) END LOOP
            IF NOT r.everything THEN hh := r.hosts[i]; END IF;
            EXIT WHEN hh IS NULL;
            ww := (SELECT min(f.workspace) FROM @s.memd_files f WHERE f.host = hh);
            WHILE ww IS NOT NULL LOOP
                host := hh; workspace := ww; RETURN NEXT;
                ww := (SELECT min(f.workspace) FROM @s.memd_files f
                    WHERE f.host = hh AND f.workspace > ww);
            END LOOP;
            IF r.everything THEN
                hh := (SELECT min(f.host) FROM @s.memd_files f WHERE f.host > hh);
            END IF;
        END LOOP;
        RETURN QUERY SELECT split_part(s, '/', 1), substr(s, strpos(s, '/') + 1)
            FROM unnest(r.scopes) AS s WHERE NOT split_part(s, '/', 1) = ANY (r.hosts);
    END $$;
REVOKE EXECUTE ON FUNCTION memd_readable_scopes() FROM PUBLIC;

CREATE OR REPLACE FUNCTION memd_matching(h text, w text, q tsquery, likes text[],
        all_terms boolean, since text, until text, file_ids bigint[], cap integer)
    RETURNS SETOF bigint LANGUAGE plpgsql STABLE {DEFINER} ROWS 1000
    AS $$ DECLARE r record; tags text[]; tq tsquery; loose boolean; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        tags := ARRAY(SELECT @s.memd_scope_tag(s.host, s.workspace)
            FROM @s.memd_readable_scopes() s
            WHERE h IS NULL OR (s.host = h AND s.workspace = w));
        IF cardinality(tags) = 0 THEN RETURN; END IF;
        IF likes IS NULL AND q IS NOT NULL THEN  -- the common case, by the GIN index
            tq := @s.memd_scoped_query(q, tags);
            -- The index answers exactly but for phrases and weights (it holds neither):
            -- only then is each chunk's own tsvector read again.
            loose := q::text ~ '<(-|[0-9]+)>' OR q::text ~ ''':\\*?[A-D]';
            RETURN QUERY SELECT c.id FROM @s.memd_chunks c
                WHERE @s.memd_scoped_terms(c.host, c.workspace, c.tsv) @@ tq
                AND (NOT loose OR c.tsv @@ q)
                AND (h IS NULL OR (c.host = h AND c.workspace = w))  -- (a tag is a hash)
                AND (r.everything OR c.host = ANY (r.hosts)
                    OR c.host || '/' || c.workspace = ANY (r.scopes))
                AND (since IS NULL AND until IS NULL AND file_ids IS NULL
                    OR EXISTS (SELECT 1 FROM @s.memd_files f WHERE f.id = c.file_id
                        AND (since IS NULL OR f.date >= since)
                        AND (until IS NULL OR f.date <= until)
                        AND (file_ids IS NULL OR f.id = ANY (file_ids))))
                LIMIT cap;
            RETURN;
        END IF;
        RETURN QUERY SELECT c.id FROM @s.memd_readable_scopes() s
            JOIN @s.memd_chunks c ON c.host = s.host AND c.workspace = s.workspace
            JOIN @s.memd_files f ON f.id = c.file_id
            WHERE (h IS NULL OR (s.host = h AND s.workspace = w))
            AND (since IS NULL OR f.date >= since) AND (until IS NULL OR f.date <= until)
            AND (file_ids IS NULL OR f.id = ANY (file_ids))
            AND CASE WHEN all_terms THEN (q IS NULL OR c.tsv @@ q) AND NOT EXISTS (
                    SELECT 1 FROM unnest(likes) AS p WHERE ' ' || c.fts_cjk || ' ' NOT LIKE p)
                ELSE (q IS NOT NULL AND c.tsv @@ q)
                    OR ' ' || c.fts_cjk || ' ' LIKE ANY (coalesce(likes, '{{}}')) END
            LIMIT cap;
    END $$;

CREATE OR REPLACE FUNCTION memd_file_rows(h text, w text, paths text[])
    RETURNS TABLE (id bigint, host text, workspace text, path text, abspath text,
        realpath text, source text, date text, size bigint, mtime_ns bigint, hash text,
        lines integer, tags jsonb, aliases jsonb, indexed_at double precision)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ BEGIN
        RETURN QUERY SELECT f.id, f.host, f.workspace, f.path, f.abspath, f.realpath,
                f.source, f.date, f.size, f.mtime_ns, f.hash, f.lines, f.tags, f.aliases,
                f.indexed_at
            FROM @s.memd_readable_scopes() s JOIN @s.memd_files f
                ON f.host = s.host AND f.workspace = s.workspace
            WHERE (h IS NULL OR (s.host = h AND s.workspace = w))
            AND (paths IS NULL OR f.path = ANY (paths));
    END $$;

CREATE OR REPLACE FUNCTION memd_chunk_rows(file bigint)
    RETURNS TABLE (id bigint, start_line integer, end_line integer, heading text, text text,
        tokens integer)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ BEGIN
        RETURN QUERY SELECT c.id, c.start_line, c.end_line, c.heading, c.text, c.tokens
            FROM @s.memd_readable_scopes() s JOIN @s.memd_files f
                ON f.id = file AND f.host = s.host AND f.workspace = s.workspace
            JOIN @s.memd_chunks c ON c.file_id = f.id
            ORDER BY c.start_line, c.id;
    END $$;

CREATE OR REPLACE FUNCTION memd_hits(h text, w text, ids bigint[]) RETURNS SETOF memd_hit
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ BEGIN
        RETURN QUERY SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text,
                f.source, f.date, c.host, c.workspace, c.file_id, c.tsv, c.fts_cjk
            FROM @s.memd_readable_scopes() s JOIN @s.memd_chunks c
                ON c.host = s.host AND c.workspace = s.workspace AND c.id = ANY (ids)
            JOIN @s.memd_files f ON f.id = c.file_id
            WHERE h IS NULL OR (s.host = h AND s.workspace = w);
    END $$;
"""
