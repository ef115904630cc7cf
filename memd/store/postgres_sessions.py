"""How long a host's session may hold the team database, whatever it sets for itself.

PostgreSQL lets every role change its own ``statement_timeout``,
``idle_in_transaction_session_timeout`` and ``transaction_timeout`` (what ``ALTER ROLE ...
SET`` gives is only a default), and a ``SET`` inside a function does not bound the statement
already running. So a host role could keep a transaction open for good: holding the locks
``memd_analyze`` takes (every other host's analyze then fails, and autovacuum waits), and
the oldest snapshot, which keeps vacuum from cleaning anything. memd bounds it from outside:
``memd_reap`` ends every session of a host (or grantee) role whose transaction has been open
longer than the host's ``max_hold_s`` (default ``HOLD_S``), and every publishing daemon calls
it each time it renews its lease (six times a lease). It runs as the tables' owner, who
needs ``pg_signal_backend`` and ``pg_read_all_stats`` (a superuser has both; ``memd team
init`` warns otherwise, and nothing is ended). ``memd_analyze``, the one turn hosts share,
is never waited for: while one holds it the others skip it.
"""

from __future__ import annotations

from typing import Any

from memd.store.postgres_functions import DEFINER

# A host's transaction (or statement) open longer than this is ended. Twice what a
# daemon's own session allows a statement, and far more than a publish transaction takes.
HOLD_S = 120
# One that holds ``memd_analyze``'s turn longer than this is ended (ANALYZE samples 30,000
# rows: seconds at a million chunks).
ANALYZE_HOLD_S = 30
_ANALYZE_TURN = 0x6D656D61  # the advisory lock memd_analyze takes (migrations take another)


def _reap(create: str, holds_turn: str) -> str:
    """``memd_reap``, ending also a session that holds analyze's turn (``holds_turn``, a
    condition on pg_locks ``l``) past ``ANALYZE_HOLD_S``."""
    return f"""CREATE{create} FUNCTION memd_reap() RETURNS integer LANGUAGE plpgsql {DEFINER}
    AS $$ DECLARE p integer; ended integer := 0; BEGIN
        FOR p IN SELECT a.pid FROM pg_stat_activity a
            WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
            AND a.backend_type = 'client backend'
            AND a.usename IN (SELECT role FROM @s.memd_hosts
                UNION SELECT grantee FROM @s.memd_grants)
            AND (a.xact_start < clock_timestamp() - coalesce((SELECT h.max_hold_s
                    FROM @s.memd_hosts h WHERE h.role = a.usename), {HOLD_S}) * interval '1 s'
                OR a.xact_start < clock_timestamp() - interval '{ANALYZE_HOLD_S} s'
                AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
                    {holds_turn}))
        LOOP
            BEGIN
                IF pg_terminate_backend(p) THEN ended := ended + 1; END IF;
            EXCEPTION WHEN insufficient_privilege THEN NULL;
            END;
        END LOOP;
        RETURN ended;
    END $$;
"""


# What memd_analyze does once it has its turn.
_ANALYZE = """        INSERT INTO @s.memd_analyzed VALUES (true, now())
            ON CONFLICT (one) DO UPDATE SET at = excluded.at;
        ANALYZE @s.memd_files, @s.memd_chunks, @s.memd_vectors;
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END $$;
"""

V6 = f"""
ALTER TABLE memd_hosts ADD COLUMN max_hold_s integer;

-- End the sessions of host and grantee roles whose transaction has been open longer than
-- the host's max_hold_s; how many were ended. (What a role may not end is left: init warns.)
{_reap("", f"AND l.locktype = 'advisory' AND l.objid = {_ANALYZE_TURN}")}\
REVOKE EXECUTE ON FUNCTION memd_reap() FROM PUBLIC;

-- The planner's statistics after a bulk write, at most once in 30 s whoever asks, one at a
-- time and never waited for: while a host holds its turn (or autovacuum the tables) the
-- others skip it, where they waited for the lock and failed their publishing.
CREATE OR REPLACE FUNCTION memd_analyze() RETURNS boolean LANGUAGE plpgsql {DEFINER}
    AS $$ BEGIN
        IF NOT @s.memd_may_write(NULL) OR NOT pg_try_advisory_xact_lock({_ANALYZE_TURN})
            OR EXISTS (SELECT 1 FROM @s.memd_analyzed WHERE at > now() - interval '30 s') THEN
            RETURN false;
        END IF;
{_ANALYZE}"""

# Schema 7: the turn is a lock on memd_analyzed, which no host role may take but through
# memd_analyze; its advisory lock was in a space every role shares, and a host that took
# it at session level, idle and in no transaction, made every other host skip its analyze
# for as long as it stayed connected.
TURN = f"""
CREATE OR REPLACE FUNCTION memd_analyze() RETURNS boolean LANGUAGE plpgsql {DEFINER}
    AS $$ BEGIN
        IF NOT @s.memd_may_write(NULL) THEN
            RETURN false;
        END IF;
        LOCK TABLE @s.memd_analyzed IN SHARE ROW EXCLUSIVE MODE NOWAIT;
        IF EXISTS (SELECT 1 FROM @s.memd_analyzed WHERE at > now() - interval '30 s') THEN
            RETURN false;
        END IF;
{_ANALYZE}
{_reap(" OR REPLACE", "AND l.locktype = 'relation' AND l.relation = '@s.memd_analyzed'::regclass")}\
"""


def reap(db: Any) -> int:
    """End host sessions held past their bound (``memd_reap``); how many."""
    return db.execute("SELECT memd_reap()").fetchone()[0]


def may_reap(conn: Any) -> bool:
    """Whether the connection's role (the tables' owner) may end host sessions: it sees
    their transactions and may signal them."""
    return conn.execute(
        "SELECT rolsuper OR (pg_has_role(current_user, 'pg_signal_backend', 'USAGE') "
        "AND pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')) "
        "FROM pg_roles WHERE rolname = current_user"
    ).fetchone()[0]
