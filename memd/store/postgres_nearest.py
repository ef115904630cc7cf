"""Search by meaning that reads no vector of a scope the caller may not read, so that what
it costs tells nothing of where others' passages lie.

One HNSW graph served every host: a filtered scan walked it through others' nodes until
it had ``k`` the caller reads, so a host with no grants touched about 6,000 buffers when
its question lay near 300 of another host's passages and about 4,000 elsewhere
(``EXPLAIN (ANALYZE, BUFFERS)``), and could map what others write about. Here each scope
the caller reads is asked on its own, through the (host, workspace, model) index, and
its passages are ranked exactly; the best ``k`` of all scopes are kept. The graph indexes
go: nothing reads them, and each cost every publish a graph insert.

What this costs: a scope's passages are all read for each question (exact, where the
graph was approximate), so a scope of 100k passages pays a scan a graph would not. An
index per scope (a partial graph named by a number, never by a name, since every role
reads ``pg_indexes``) would bring that back.
"""

from __future__ import annotations

from memd.store.postgres_functions import DEFINER

NEAREST = f"""
CREATE INDEX IF NOT EXISTS memd_vectors_scope ON memd_vectors (host, workspace, model);
DO $$ DECLARE i record; BEGIN
    FOR i IN SELECT schemaname, indexname FROM pg_indexes WHERE tablename = 'memd_vectors'
            AND indexname LIKE 'memd\\_vectors\\_hnsw\\_%' LOOP
        EXECUTE format('DROP INDEX %I.%I', i.schemaname, i.indexname);
    END LOOP;
END $$;

-- The ``k`` readable passages nearest ``q`` by cosine: each readable scope's best ``k``
-- (the distance written so that no graph index matches it), then the best of those.
CREATE OR REPLACE FUNCTION memd_nearest(h text, w text, model text, q vector, k integer)
    RETURNS TABLE (chunk_id bigint, cosine double precision)
    LANGUAGE plpgsql STABLE {DEFINER}
    AS $$ DECLARE dims integer := vector_dims(q); n integer := least(k, 2000); BEGIN
        RETURN QUERY SELECT b.chunk_id, b.cosine FROM @s.memd_readable_scopes() s
            CROSS JOIN LATERAL (SELECT v.chunk_id, 1 - (v.embedding <=> q) AS cosine
                FROM @s.memd_vectors v WHERE v.host = s.host AND v.workspace = s.workspace
                AND v.model = memd_nearest.model AND vector_dims(v.embedding) = dims
                ORDER BY v.embedding <=> q LIMIT n) b
            WHERE h IS NULL OR (s.host = h AND s.workspace = w)
            ORDER BY b.cosine DESC LIMIT n;
    END $$;
"""
