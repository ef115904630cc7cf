"""memd's reading functions in the team database: every row a host's role reads, it reads
through one of these (``postgres_functions`` says why). Each returns only rows the caller
may read (its own host's, and what grants give it), of one scope (h, w) when h is given.
"""

from __future__ import annotations

from memd.store.postgres_functions import DEFINER

READS = f"""
-- Reading: each function returns only rows the caller may read, of scope (h, w) when h
-- is given (else every scope it reads).
CREATE FUNCTION memd_file_rows(h text, w text, paths text[])
    RETURNS TABLE (id bigint, host text, workspace text, path text, abspath text,
        realpath text, source text, date text, size bigint, mtime_ns bigint, hash text,
        lines integer, tags jsonb, aliases jsonb, indexed_at double precision)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT f.id, f.host, f.workspace, f.path, f.abspath, f.realpath,
                f.source, f.date, f.size, f.mtime_ns, f.hash, f.lines, f.tags, f.aliases,
                f.indexed_at
            FROM @s.memd_files f
            WHERE (h IS NULL OR (f.host = h AND f.workspace = w))
            AND (paths IS NULL OR f.path = ANY (paths))
            AND (r.everything OR f.host = ANY (r.hosts)
                OR f.host || '/' || f.workspace = ANY (r.scopes));
    END $$;

CREATE FUNCTION memd_chunk_rows(file bigint)
    RETURNS TABLE (id bigint, start_line integer, end_line integer, heading text, text text,
        tokens integer)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT c.id, c.start_line, c.end_line, c.heading, c.text, c.tokens
            FROM @s.memd_chunks c WHERE c.file_id = file
            AND (r.everything OR c.host = ANY (r.hosts)
                OR c.host || '/' || c.workspace = ANY (r.scopes))
            ORDER BY c.start_line, c.id;
    END $$;

CREATE FUNCTION memd_hits(h text, w text, ids bigint[]) RETURNS SETOF memd_hit
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text,
                f.source, f.date, c.host, c.workspace, c.file_id, c.tsv, c.fts_cjk
            FROM @s.memd_chunks c JOIN @s.memd_files f ON f.id = c.file_id
            WHERE c.id = ANY (ids) AND (h IS NULL OR (c.host = h AND c.workspace = w))
            AND (r.everything OR c.host = ANY (r.hosts)
                OR c.host || '/' || c.workspace = ANY (r.scopes));
    END $$;

-- The ids of readable chunks holding a query's terms: ``q`` its full-text terms joined,
-- ``likes`` the bigram patterns of terms in scripts without spaces; ``all_terms``: all of them
-- (else any); at most ``cap`` of them (NULL: all).
CREATE FUNCTION memd_matching(h text, w text, q tsquery, likes text[], all_terms boolean,
        since text, until text, file_ids bigint[], cap integer)
    RETURNS SETOF bigint LANGUAGE plpgsql STABLE {DEFINER} ROWS 1000
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        IF likes IS NULL AND q IS NOT NULL THEN  -- the common case, by the GIN index
            RETURN QUERY SELECT c.id FROM @s.memd_chunks c
                WHERE c.tsv @@ q AND (h IS NULL OR (c.host = h AND c.workspace = w))
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
        RETURN QUERY SELECT c.id FROM @s.memd_chunks c JOIN @s.memd_files f
            ON f.id = c.file_id
            WHERE (h IS NULL OR (c.host = h AND c.workspace = w))
            AND (r.everything OR c.host = ANY (r.hosts)
                OR c.host || '/' || c.workspace = ANY (r.scopes))
            AND (since IS NULL OR f.date >= since) AND (until IS NULL OR f.date <= until)
            AND (file_ids IS NULL OR f.id = ANY (file_ids))
            AND CASE WHEN all_terms THEN (q IS NULL OR c.tsv @@ q) AND NOT EXISTS (
                    SELECT 1 FROM unnest(likes) AS p WHERE ' ' || c.fts_cjk || ' ' NOT LIKE p)
                ELSE (q IS NOT NULL AND c.tsv @@ q)
                    OR ' ' || c.fts_cjk || ' ' LIKE ANY (coalesce(likes, '{{}}')) END
            LIMIT cap;
    END $$;

CREATE FUNCTION memd_dated(h text, w text, since text, until text, file_ids bigint[],
        lim integer) RETURNS SETOF memd_hit LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text,
                f.source, f.date, c.host, c.workspace, c.file_id, c.tsv, c.fts_cjk
            FROM @s.memd_chunks c JOIN @s.memd_files f ON f.id = c.file_id
            WHERE f.date IS NOT NULL AND (h IS NULL OR (f.host = h AND f.workspace = w))
            AND (r.everything OR f.host = ANY (r.hosts)
                OR f.host || '/' || f.workspace = ANY (r.scopes))
            AND (since IS NULL OR f.date >= since) AND (until IS NULL OR f.date <= until)
            AND (file_ids IS NULL OR f.id = ANY (file_ids))
            ORDER BY f.date DESC, f.path, c.start_line LIMIT least(lim, 10000);
    END $$;

CREATE FUNCTION memd_counts(h text, w text, OUT files bigint, OUT chunks bigint)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        SELECT count(*) INTO files FROM @s.memd_files f
            WHERE (h IS NULL OR (f.host = h AND f.workspace = w))
            AND (r.everything OR f.host = ANY (r.hosts)
                OR f.host || '/' || f.workspace = ANY (r.scopes));
        SELECT count(*) INTO chunks FROM @s.memd_chunks c
            WHERE (h IS NULL OR (c.host = h AND c.workspace = w))
            AND (r.everything OR c.host = ANY (r.hosts)
                OR c.host || '/' || c.workspace = ANY (r.scopes));
    END $$;

-- The ``k`` readable passages nearest ``q`` by cosine, by the HNSW index of its size.
CREATE FUNCTION memd_nearest(h text, w text, model text, q vector, k integer)
    RETURNS TABLE (chunk_id bigint, cosine double precision)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; dims integer := vector_dims(q); BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        -- A filtered scan keeps walking the graph until it has k rows the caller reads.
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
        RETURN QUERY EXECUTE format(
            'SELECT v.chunk_id, 1 - (v.embedding::vector(%1$s) <=> $1::vector(%1$s)) '
            'FROM @s.memd_vectors v WHERE v.model = $2 AND vector_dims(v.embedding) = %1$s '
            'AND ($3::text IS NULL OR (v.host = $3 AND v.workspace = $4)) '
            'AND ($5 OR v.host = ANY ($6) OR v.host || ''/'' || v.workspace = ANY ($7)) '
            'ORDER BY v.embedding::vector(%1$s) <=> $1::vector(%1$s) LIMIT $8', dims)
            USING q, model, h, w, r.everything, r.hosts, r.scopes, least(k, 2000);
    END $$;

-- Readable chunks' passages of ``model``: each one's vector and terms, and how near
-- ``q`` it is (NULL: no ``q``).
CREATE FUNCTION memd_passages(h text, w text, model text, ids bigint[], q vector)
    RETURNS TABLE (chunk_id bigint, part integer, cosine double precision, vector bytea,
        terms text)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT v.chunk_id, v.part,
                CASE WHEN q IS NULL THEN NULL ELSE 1 - (v.embedding <=> q) END,
                v.vector, v.terms
            FROM @s.memd_vectors v WHERE v.chunk_id = ANY (ids)
            AND v.model = memd_passages.model
            AND (h IS NULL OR (v.host = h AND v.workspace = w))
            AND (r.everything OR v.host = ANY (r.hosts)
                OR v.host || '/' || v.workspace = ANY (r.scopes));
    END $$;

-- Each scope the caller reads: its files, chunks and vectors, and when it last published.
CREATE FUNCTION memd_status() RETURNS TABLE (host text, workspace text, files bigint,
        chunks bigint, vectors bigint, published_at double precision)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN QUERY SELECT f.host, f.workspace, count(*),
                (SELECT count(*) FROM @s.memd_chunks c
                    WHERE c.host = f.host AND c.workspace = f.workspace),
                (SELECT count(*) FROM @s.memd_vectors v
                    WHERE v.host = f.host AND v.workspace = f.workspace),
                max(f.indexed_at)
            FROM @s.memd_files f
            WHERE r.everything OR f.host = ANY (r.hosts)
                OR f.host || '/' || f.workspace = ANY (r.scopes)
            GROUP BY f.host, f.workspace ORDER BY f.host, f.workspace;
    END $$;

CREATE FUNCTION memd_has_vectors(model text) RETURNS boolean LANGUAGE plpgsql STABLE
    {DEFINER}
    AS $$ DECLARE r record; BEGIN
        SELECT * INTO r FROM @s.memd_reader();
        RETURN EXISTS (SELECT 1 FROM @s.memd_vectors v WHERE v.model = memd_has_vectors.model
            AND (r.everything OR v.host = ANY (r.hosts)
                OR v.host || '/' || v.workspace = ANY (r.scopes)));
    END $$;

"""
