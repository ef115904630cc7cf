"""What a host's rows cost in the team database, counted against its share whatever the rows
hold.

Schema 5 counted a file's text (its chunks and their search columns) against the host's
``max_bytes``, but not the rows themselves: a chunk with no text, a vector part under a
new number, a meta key or a lease of a new workspace each cost a row and its index entries
(about 170 bytes an empty chunk) and counted nothing, so a host could store gigabytes
within a share of a megabyte. Here every row of a host's in memd's tables adds a fixed
cost, and a meta or lease row its whole text, to ``memd_hosts.used_bytes``, kept by
statement triggers, and a statement that adds rows past the share is refused (``HOST_FULL``,
as a file too large for it is). Renewing a lease or rewriting a meta value never is, so
a full host may still publish deletions.
"""

from __future__ import annotations

from memd.store.postgres_functions import HOST_FULL, HOST_MAX_BYTES

# A row's cost beyond what its text is counted as: its header and its index entries, a
# little over what PostgreSQL 18 takes for an empty one (measured: 81 MB for 500,000
# empty chunks).
ROW_BYTES = {"memd_files": 400, "memd_chunks": 200, "memd_vectors": 200}
# Rows whose whole text is counted besides (nothing else counts it).
WHOLE_ROW_BYTES = {"memd_meta": 100, "memd_leases": 100}

_TRIGGERS = "\n".join(
    f"""CREATE TRIGGER memd_rows_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_rows({cost}, {whole});
CREATE TRIGGER memd_rows_changed AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS gone NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_rows({cost}, {whole});
CREATE TRIGGER memd_rows_removed AFTER DELETE ON {table} REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION memd_count_rows({cost}, {whole});"""
    for table, cost, whole in (
        *((t, c, "false") for t, c in ROW_BYTES.items()),
        *((t, c, "true") for t, c in WHOLE_ROW_BYTES.items()),
    )
)

_RECOUNT = " ".join(
    [f"+ {c} * (SELECT count(*) FROM {t} r WHERE r.host = h.host)" for t, c in ROW_BYTES.items()]
    + [
        f"+ (SELECT coalesce(sum({c} + octet_length(r::text)), 0) FROM {t} r WHERE r.host = h.host)"
        for t, c in WHOLE_ROW_BYTES.items()
    ]
)

ROWS = f"""
-- A statement's rows: each costs TG_ARGV[0] bytes more than its text is counted as (and its
-- whole text too when TG_ARGV[1]); rows added past a host's share are refused.
CREATE FUNCTION memd_count_rows() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$ DECLARE cost bigint := TG_ARGV[0]::bigint; whole boolean := TG_ARGV[1]::boolean;
        over text; share bigint;
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE @s.memd_hosts h SET used_bytes = h.used_bytes - g.n
                FROM (SELECT r.host, sum(cost + CASE WHEN whole
                    THEN octet_length(r::text) ELSE 0 END) AS n FROM gone r GROUP BY r.host) g
                WHERE h.host = g.host;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            UPDATE @s.memd_hosts h SET used_bytes = h.used_bytes + g.n
                FROM (SELECT r.host, sum(cost + CASE WHEN whole
                    THEN octet_length(r::text) ELSE 0 END) AS n FROM added r GROUP BY r.host) g
                WHERE h.host = g.host;
        END IF;
        IF TG_OP = 'INSERT' THEN  -- (separate: plpgsql plans a whole condition at once)
            SELECT h.host, coalesce(h.max_bytes, {HOST_MAX_BYTES}) INTO over, share
                FROM @s.memd_hosts h WHERE h.host IN (SELECT r.host FROM added r)
                AND h.used_bytes > coalesce(h.max_bytes, {HOST_MAX_BYTES}) LIMIT 1;
            IF over IS NOT NULL THEN
                RAISE EXCEPTION 'host % would store more than its share of % bytes', over,
                    share USING ERRCODE = '{HOST_FULL}';
            END IF;
        END IF;
        RETURN NULL;
    END $$;
REVOKE EXECUTE ON FUNCTION memd_count_rows() FROM PUBLIC;
{_TRIGGERS}

-- What the hosts hold now, counted the new way.
UPDATE memd_hosts h SET used_bytes = coalesce((SELECT sum(f.bytes) FROM memd_files f
        WHERE f.host = h.host), 0)
    {_RECOUNT};
"""
