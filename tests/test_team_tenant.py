"""A hostile tenant with psql: what a host role's own session can do to the others with
PostgreSQL's shared machinery (advisory locks, large objects, rows that hold no text), as
someone who had not seen memd's defences would try it. Roles as in
``tests/test_team_attacks.py``: ``a`` publishes ``laptop-a``, ``b`` reads its ``default``,
``c`` (``desk-c``) has no grants and is the attacker.
"""

from __future__ import annotations

import re

import psycopg
import pytest

from memd.store import postgres_admin as admin
from memd.store import postgres_schema as schema
from memd.store.postgres import PostgresStore
from memd.store.postgres_lease import THIS_PROCESS
from memd.store.postgres_storage import ROW_BYTES
from tests.conftest import as_role
from tests.test_team_attacks import SECRET_TEXT, Team, put


@pytest.fixture
def team(team_dsn) -> Team:
    return Team(team_dsn)


def _empty_chunks(n: int) -> str:
    """memd_put_file's arguments for a file of ``n`` chunks that hold no text at all."""
    ints, texts = f"array_fill(1, ARRAY[{n}])", f"array_fill(''::text, ARRAY[{n}])"
    return f"{ints}, {ints}, {texts}, {texts}, {ints}, {texts}, {texts}, {texts}, {texts}"


def test_rows_that_hold_no_text_still_count_against_a_hosts_share(team):
    """Only text counted: files of empty chunks, vector parts, meta keys and leases of new
    workspaces cost rows (81 MB for 500,000 empty chunks) and counted nothing, so a host
    with a share of 300 kB stored as much as it liked."""
    share = 300_000
    admin.add_host(team.admin, team.roles["c"], "desk-c", max_bytes=share)
    refused: dict[str, str] = {}
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        conn.execute("SELECT * FROM memd_lease('desk-c', 'w', 'me', 'psql', 600)")
        for what, statement, tries in (
            ("chunks", "SELECT * FROM memd_put_file('w', 'me', 'f' || %s, '/f', '/f', "
             f"'memory', NULL, 1, 1, 'h', 1, NULL, NULL, {_empty_chunks(5_000)})", 20),
            ("meta keys", "SELECT memd_set_meta('w', 'me', 'k' || %s, repeat('x', 4096))", 200),
            ("leases", "SELECT * FROM memd_lease('desk-c', 'w' || %s, 'me', 'psql', 600)", 200),
        ):  # fmt: skip
            for i in range(tries):
                try:
                    conn.execute(statement, (str(i),))
                except psycopg.Error as exc:
                    refused[what] = str(exc)
                    break
    assert set(refused) == {"chunks", "meta keys", "leases"}, refused
    assert all("share of 300000 bytes" in why for why in refused.values()), refused
    assert "kestrel" not in str(refused)  # no error names another host's text
    counts = team.sql("admin", "SELECT (SELECT count(*) FROM memd_chunks WHERE host = 'desk-c'), "
                      "(SELECT count(*) FROM memd_meta WHERE host = 'desk-c'), "
                      "(SELECT count(*) FROM memd_leases WHERE host = 'desk-c'), "
                      "(SELECT used_bytes FROM memd_hosts WHERE host = 'desk-c')")  # fmt: skip
    chunks, keys, leases, used = counts[0]
    assert chunks * ROW_BYTES["memd_chunks"] + keys * 4096 + leases * 100 <= used <= share
    # Deleting gives the share back, to the byte; the owner's own rows are untouched.
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        conn.execute("SELECT memd_unpublish_scope('w', 'me')")
        for (w,) in team.sql("admin", "SELECT workspace FROM memd_leases WHERE host = 'desk-c'"):
            conn.execute("SELECT memd_release(%s, 'me')", (w,))
    assert team.sql("admin", "SELECT used_bytes FROM memd_hosts WHERE host = 'desk-c'") == [(0,)]
    assert SECRET_TEXT in {t for _, t in team.lines_of_laptop_a()}


def test_a_file_and_its_vectors_count_their_rows(team):
    """A publish through the store counts each row beside its text, and gives it all back."""
    store = PostgresStore.open(team.dsn("c"), "desk-c", "default")
    try:
        put(store, "one.md", "a line of text")
        (used,) = team.sql("admin", "SELECT used_bytes FROM memd_hosts WHERE host = 'desk-c'")[0]
        rows = ROW_BYTES["memd_files"] + ROW_BYTES["memd_chunks"] + ROW_BYTES["memd_vectors"]
        assert rows < used < rows + 2_000
        store.delete_files([store.files()["one.md"].id])
    finally:
        store.close()
    leases = team.sql("admin", "SELECT coalesce(sum(100 + octet_length(l::text)), 0) "
                      "FROM memd_leases l WHERE host = 'desk-c'")[0][0]  # fmt: skip
    meta = team.sql("admin", "SELECT coalesce(sum(100 + octet_length(m::text)), 0) "
                    "FROM memd_meta m WHERE host = 'desk-c'")[0][0]  # fmt: skip
    used = team.sql("admin", "SELECT used_bytes FROM memd_hosts WHERE host = 'desk-c'")[0][0]
    assert used == leases + meta


def test_large_objects_are_no_way_past_the_share(team):
    """Any role could store large objects in memd's database, as many as it liked."""
    for statement in ("SELECT lo_from_bytea(0, 'x'::bytea)", "SELECT lo_create(0)",
                      "SELECT lo_creat(-1)"):  # fmt: skip
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            team.sql("c", statement)


def test_no_host_takes_analyzes_turn_or_an_upgrades_lock_by_an_advisory_lock(team, monkeypatch):
    """memd_analyze's turn and the migrations' lock were advisory locks, which any role may
    take: a host holding them at session level, idle and in no transaction (so never ended
    as a held transaction), made every other host skip its analyze for good and every
    upgrade wait and fail, named as 'a session that has since let go'."""
    attackers = [psycopg.connect(team.dsn("c"), autocommit=True)]
    try:
        for key in (0x6D656D61, schema.FIRST_MIGRATION_LOCK):  # the keys memd used
            attackers[0].execute("SELECT pg_advisory_lock(%s)", (key,))
        with psycopg.connect(team.dsn("a"), autocommit=True) as publisher:
            assert publisher.execute("SELECT memd_analyze()").fetchone() == (True,)
        older = _database_of_schema_6(team, monkeypatch)  # advisory locks are per database
        attackers.append(psycopg.connect(as_role(older, team.roles["c"]), autocommit=True))
        for key in (0x6D656D61, schema.FIRST_MIGRATION_LOCK):
            attackers[1].execute("SELECT pg_advisory_lock(%s)", (key,))
        assert admin.init(older, lock_timeout_s=2) == schema.SCHEMA_VERSION
        for attacker in attackers:
            held = "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND granted"
            assert attacker.execute(held + " AND locktype = 'advisory'").fetchone() == (2,)
    finally:
        for attacker in attackers:
            attacker.close()


def _database_of_schema_6(team: Team, monkeypatch) -> str:
    """A new database on the same server made by a memd of schema 6 (before every row
    counted against a share), with a host (``c``, as ``desk-c``) that published: its DSN
    (as the administrator)."""
    name = f"older_{team.roles['a'][-8:]}"
    with psycopg.connect(team.admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = team.admin.partition("?")
    dsn = f"{base.rsplit('/', 1)[0]}/{name}?{query}"
    with monkeypatch.context() as m:
        m.setattr(schema, "SCHEMA_VERSION", 6)
        with psycopg.connect(dsn, autocommit=True) as conn:
            schema.migrate(conn)
            version = conn.execute("SELECT version FROM memd_schema").fetchone()[0]
        assert version == schema.SCHEMA_VERSION
        admin.add_host(dsn, team.roles["c"], "desk-c")
        store = PostgresStore.open(as_role(dsn, team.roles["c"]), "desk-c", "default")
        try:
            put(store, "kept.md", "kept across the upgrade")
        finally:
            store.close()
    return dsn


def test_an_upgrade_counts_what_hosts_stored_before_it(team, monkeypatch):
    older = _database_of_schema_6(team, monkeypatch)
    admin.init(older)
    with psycopg.connect(older, autocommit=True) as conn:
        (used,) = conn.execute("SELECT used_bytes FROM memd_hosts").fetchone()
    rows = ROW_BYTES["memd_files"] + ROW_BYTES["memd_chunks"] + ROW_BYTES["memd_vectors"]
    assert used > rows
    store = PostgresStore.open(as_role(older, team.roles["c"]), "desk-c", "default")
    try:
        put(store, "after.md", "published after the upgrade")
        assert set(store.files()) == {"kept.md", "after.md"}
    finally:
        store.close()


def test_an_upgrade_drops_the_vector_index_every_host_shared(team, monkeypatch):
    older = _database_of_schema_6(team, monkeypatch)
    with psycopg.connect(older, autocommit=True) as conn:  # as memd team init --dims 8 made it
        conn.execute(
            "CREATE INDEX memd_vectors_hnsw_8 ON memd_vectors USING hnsw "
            "((embedding::vector(8)) vector_cosine_ops) WHERE vector_dims(embedding) = 8"
        )
    admin.init(older, dims=(8,))
    with psycopg.connect(older, autocommit=True) as conn:
        listed = "SELECT indexname FROM pg_indexes WHERE tablename = 'memd_vectors'"
        names = {n for (n,) in conn.execute(listed).fetchall()}
    assert "memd_vectors_scope" in names and not any("hnsw" in n for n in names), names


def test_a_lease_or_meta_call_with_a_holder_of_its_own_reads_no_other_host(team):
    """memd's functions take the host from who logged in: another host's name, a holder
    string of the owner's, or the owner's memd.host setting change nothing."""
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        conn.execute("SET memd.host = 'laptop-a'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM memd_lease('laptop-a', 'default', %s, 'x', 60)",
                         (THIS_PROCESS.holder,))  # fmt: skip
        assert conn.execute("SELECT memd_get_meta('default', 'index_id')").fetchone() == (None,)
        assert conn.execute("SELECT host FROM memd_me()").fetchone() == ("desk-c",)


def _buffers(conn: psycopg.Connection, call: str, arg: object) -> int:
    """The buffers a call of memd's touches, as PostgreSQL shows anyone who asks."""
    plan = conn.execute(
        f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) {call}", (arg,)
    ).fetchall()
    assert "kestrel-harbor" not in str(plan)
    counts = [line for (line,) in plan if "Buffers:" in line]
    return sum(int(n) for line in counts[:1] for n in re.findall(r"=(\d+)", line))


@pytest.mark.parametrize("who", ["b", "c"])
def test_what_a_call_costs_tells_no_word_or_path_of_what_the_caller_may_not_read(team, who):
    """EXPLAIN (ANALYZE, BUFFERS) counts the buffers a function touches: memd_matching
    touched one more when another host's note held the word asked (the index found the
    row, the caller's rule dropped it), so any word, and by prefixes ('kes:*') every term,
    of notes a host may not read could be told; memd_file_rows the same of a path."""
    words = "SELECT count(*) FROM memd_matching(NULL, NULL, to_tsquery('simple', %s), NULL, "
    words += "true, NULL, NULL, NULL, NULL)"
    paths = "SELECT count(*) FROM memd_file_rows('laptop-a', 'secret', %s)"
    probes = [
        (words, ["kestrel", "kes:*", "5512"], ["zqxwvk", "zqx:*", "9931"]),
        (paths, [["MEMORY.md"]], [["MEMORY-2.md"]]),
    ]
    with psycopg.connect(team.dsn("a"), autocommit=True) as conn:  # tables the size that
        conn.execute("SELECT * FROM memd_lease('laptop-a', 'filler', 't', 't', 60)")  # the
        texts = "ARRAY(SELECT 'filler line ' || i FROM generate_series(1, 3000) i)"  # index
        ints = "array_fill(1, ARRAY[3000])"  # is used at
        blank = "array_fill(''::text, ARRAY[3000])"
        conn.execute(
            "SELECT * FROM memd_put_file('filler', 't', 'filler.md', '/f', '/f', 'memory', "
            f"NULL, 1, 1, 'h', 1, NULL, NULL, {ints}, {ints}, {blank}, {texts}, {ints}, "
            f"{blank}, {texts}, {blank}, {blank})"
        )
    with psycopg.connect(team.admin, autocommit=True) as conn:  # nothing left to autovacuum
        conn.execute("VACUUM ANALYZE memd_files, memd_chunks")  # (it would change the counts)
    with psycopg.connect(team.dsn(who), autocommit=True) as conn:
        for call, held, absent in probes:
            for arg in held + absent:  # plans and catalogs cached alike
                _buffers(conn, call, arg)
            told = {repr(arg): _buffers(conn, call, arg) for arg in held + absent}
            assert len(set(told.values())) == 1, told
        assert conn.execute(words, ("kestrel",)).fetchone() == (0,)
        # What it may read is still found.
        if who == "b":
            assert conn.execute(words, ("noon",)).fetchone() == (1,)


def _vectors(
    conn: psycopg.Connection, host: str, vectors: list[str], workspace: str = "near"
) -> list[int]:
    """A file in ``host``'s ``workspace``, one chunk and one vector a line: the chunks' ids."""
    n, blank = len(vectors), [""] * len(vectors)
    texts = [f"passage {i}" for i in range(n)]
    conn.execute("SELECT * FROM memd_lease(%s, %s, 't', 't', 60)", (host, workspace))
    _, ids = conn.execute(
        "SELECT * FROM memd_put_file(%s, 't', 'v.md', '/f', '/f', 'memory', NULL, "
        "1, 1, 'h', 1, NULL, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (workspace, [1] * n, [1] * n, blank, texts, [1] * n, blank, texts, blank, blank),
    ).fetchone()
    conn.execute(
        "SELECT memd_put_vectors(%s, 't', 'm', %s, %s, %s, %s, %s::vector[])",
        (workspace, ids, [0] * n, [b"\0" * 32] * n, blank, vectors),
    )
    return ids


@pytest.mark.parametrize("who", ["b", "c"])
def test_what_a_search_by_meaning_costs_tells_not_where_others_passages_lie(team, who):
    """One vector index served every host: a host's search by meaning walked the graph
    through others' passages until it had k of its own, so it touched more buffers near
    where another host's passages crowd (about 6,000 against 4,000 elsewhere, 300 of them
    round one point), and could map what others write about by EXPLAIN (ANALYZE, BUFFERS)."""
    import random

    admin.init(team.admin, dims=(8,))
    rng = random.Random(3)
    point = [rng.gauss(0, 1) for _ in range(8)]

    def vector(center: list[float]) -> str:
        return "[" + ",".join(f"{c + rng.gauss(0, 0.05):.4f}" for c in center) + "]"

    def anywhere() -> str:
        return "[" + ",".join(f"{rng.gauss(0, 1):.4f}" for _ in range(8)) + "]"

    with psycopg.connect(team.dsn("a"), autocommit=True) as conn:
        _vectors(conn, "laptop-a", [anywhere() for _ in range(2000)]
                 + [vector(point) for _ in range(300)])  # fmt: skip
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        _vectors(conn, "desk-c", [anywhere() for _ in range(30)])
    with psycopg.connect(team.admin, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE memd_files, memd_chunks, memd_vectors")
    call = "SELECT count(*) FROM memd_nearest(NULL, NULL, 'm', %s::vector, 10)"
    near = [vector(point) for _ in range(4)]
    away = [anywhere() for _ in range(4)]
    with psycopg.connect(team.dsn(who), autocommit=True) as conn:
        for q in near + away:  # plans and catalogs cached alike
            _buffers(conn, call, q)
        told = {q: _buffers(conn, call, q) for q in near + away}
        assert len(set(told.values())) == 1, told
        # What it may read is still found, the nearest first; what it may not, never.
        found = conn.execute("SELECT chunk_id FROM memd_nearest(NULL, NULL, 'm', %s::vector, 10)",
                             (near[0],)).fetchall()  # fmt: skip
    own = team.sql("admin", "SELECT chunk_id FROM memd_vectors WHERE host = 'desk-c' "
                   "ORDER BY embedding <=> %s::vector LIMIT 10", (near[0],))  # fmt: skip
    assert found == (own if who == "c" else [])


def test_a_search_by_meaning_over_several_workspaces_ranks_as_one_exact_search(team):
    """Each readable workspace is ranked on its own and the best kept: together they are
    the exact nearest of all the caller reads, as a local search ranks them."""
    import numpy as np

    rng = np.random.default_rng(7)
    rows = {ws: rng.normal(size=(200, 8)) for ws in ("shared", "own")}

    def literal(v) -> str:
        return "[" + ",".join(f"{x:.5f}" for x in v) + "]"

    with psycopg.connect(team.dsn("a"), autocommit=True) as conn:
        granted = _vectors(conn, "laptop-a", [literal(v) for v in rows["shared"]], "shared")
        _vectors(conn, "laptop-a", [literal(v) for v in rng.normal(size=(200, 8))], "hidden")
    admin.grant(team.admin, team.roles["b"], "laptop-a", "shared")
    with psycopg.connect(team.dsn("b"), autocommit=True) as conn:
        own = _vectors(conn, "ci-b", [literal(v) for v in rows["own"]], "own")
        q = rng.normal(size=8)
        found = conn.execute(
            "SELECT chunk_id FROM memd_nearest(NULL, NULL, 'm', %s::vector, 25)", (literal(q),)
        ).fetchall()
    every = np.vstack([rows["shared"], rows["own"]]).round(5)
    cosine = every @ q.round(5) / np.linalg.norm(every, axis=1) / np.linalg.norm(q.round(5))
    ids = granted + own
    assert [chunk for (chunk,) in found] == [ids[i] for i in np.argsort(-cosine)[:25]]
    assert {ids[i] for i in np.argsort(-cosine)[:25]} & set(own)  # both workspaces in play
    assert {ids[i] for i in np.argsort(-cosine)[:25]} & set(granted)
