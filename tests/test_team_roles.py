"""Nobody reads what they were not given: each host's own PostgreSQL role, row-level
security, and grants, tried with hand-written SQL."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from memd.errors import StoreError
from memd.sources.chunker import Chunk
from memd.store import postgres_admin as admin
from memd.store.fts import match_query
from memd.store.postgres import PostgresStore
from memd.store.postgres_lease import THIS_PROCESS
from memd.store.rows import FileMeta, chunk_rows


def as_role(dsn: str, role: str) -> str:
    """The same database, connecting as ``role`` (the test server trusts local sockets)."""
    scheme, _, rest = dsn.partition("://")
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


def put(store: PostgresStore, path: str, text: str) -> None:
    m = FileMeta(path, f"/ws/{path}", f"/ws/{path}", "memory", None, 1, 1, "h", 1)
    with store.transaction():
        file_id = store.replace_file(m, chunk_rows(m, [Chunk(1, 1, "", text, 3)]))
        chunk_id, _ = store.file_chunks(file_id)[0]
        store.save_vectors("m", [(chunk_id, 0, path.encode(), b"\x01" * 8, "")], 100)


@pytest.fixture
def team(team_dsn):
    """Two hosts, each with its own role (roles are server-wide: named anew per test)."""
    suffix = uuid.uuid4().hex[:8]
    a_role, b_role = f"host_a_{suffix}", f"host_b_{suffix}"
    assert admin.init(team_dsn) == admin.init(team_dsn)  # idempotent
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        for role in (a_role, b_role):
            conn.execute(f"CREATE ROLE {role} LOGIN")
    admin.add_host(team_dsn, a_role, "laptop-a")
    admin.add_host(team_dsn, b_role, "ci-b")
    a = PostgresStore.open(as_role(team_dsn, a_role), "laptop-a", "default")
    b = PostgresStore.open(as_role(team_dsn, b_role), "ci-b", "default")
    put(a, "MEMORY.md", "laptop a keeps the deploy keys rotation notes")
    put(b, "MEMORY.md", "ci b runs the nightly build")
    yield team_dsn, b_role
    a.close()
    b.close()


def count(dsn: str, sql: str, args: tuple = ()) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, args or None).fetchone()[0]


TABLES = ("memd_files", "memd_chunks", "memd_vectors", "memd_meta", "memd_session_files",
          "memd_leases", "memd_hosts", "memd_grants", "memd_analyzed")  # fmt: skip
EVERY_ID = "ARRAY(SELECT generate_series(1, 10000)::bigint)"


def test_a_host_role_reads_no_table_and_its_own_rows_through_memds_functions(team):
    dsn, b_role = team
    b_dsn = as_role(dsn, b_role)
    for table in TABLES:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            count(b_dsn, f"SELECT count(*) FROM {table}")
    assert count(b_dsn, "SELECT count(*) FROM memd_file_rows(NULL, NULL, NULL)") == 1
    assert count(b_dsn, "SELECT count(*) FROM memd_file_rows('laptop-a', 'default', NULL)") == 0
    hits = f"SELECT count(*) FROM memd_hits(NULL, NULL, {EVERY_ID}) WHERE text LIKE %s"
    assert count(b_dsn, hits, ("%deploy keys%",)) == 0
    assert count(b_dsn, hits, ("%nightly%",)) == 1
    passages = f"SELECT count(*) FROM memd_passages(NULL, NULL, 'm', {EVERY_ID}, NULL)"
    assert count(b_dsn, passages) == 1
    team_view = PostgresStore.open(b_dsn, None, None)
    try:
        assert team_view.keyword_search(match_query("deploy keys"), 5) == []
    finally:
        team_view.close()


def test_a_host_cannot_change_or_forge_another_hosts_rows(team):
    dsn, b_role = team
    with psycopg.connect(as_role(dsn, b_role), autocommit=True) as conn:
        for statement in (
            "UPDATE memd_files SET hash = 'x' WHERE host = 'laptop-a'",
            "DELETE FROM memd_chunks",
            "SELECT memd_delete_files('laptop-a', ARRAY[1, 2, 3]::bigint[])",
            "INSERT INTO memd_files(host, workspace, path, abspath, realpath, source, size, "
            "mtime_ns, hash, lines, indexed_at) "
            "VALUES ('laptop-a', 'default', 'x.md', '/x', '/x', 'memory', 1, 1, 'h', 1, 0)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        # memd's own function deletes the caller's rows only, whatever ids it is given.
        assert conn.execute(
            "SELECT memd_unpublish('default', %s, ARRAY(SELECT generate_series(1, 100)::bigint))",
            (THIS_PROCESS.holder,),
        ).fetchone() == (1,)
    assert count(dsn, "SELECT count(*) FROM memd_chunks WHERE text LIKE '%deploy keys%'") == 1


def test_a_grant_lets_a_host_read_but_never_write(team):
    dsn, b_role = team
    admin.grant(dsn, b_role, "laptop-a", "default")
    b_dsn = as_role(dsn, b_role)
    hits = f"SELECT count(*) FROM memd_hits(NULL, NULL, {EVERY_ID}) WHERE text LIKE %s"
    assert count(b_dsn, hits, ("%deploy keys%",)) == 1
    team_view = PostgresStore.open(b_dsn, None, None)
    try:
        hits_found = team_view.keyword_search(match_query("deploy keys"), 5)
        assert [(h.host, h.path) for h in hits_found] == [("laptop-a", "MEMORY.md")]
    finally:
        team_view.close()
    with psycopg.connect(b_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE memd_files SET hash = 'x' WHERE host = 'laptop-a'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memd_delete_scope('laptop-a', 'default')")
    admin.revoke(dsn, b_role, "laptop-a", "default")
    assert count(b_dsn, "SELECT count(*) FROM memd_file_rows('laptop-a', 'default', NULL)") == 0
    assert [s["host"] for s in admin.status(dsn)["workspaces"]] == ["ci-b", "laptop-a"]


def test_a_host_cannot_publish_as_another(team):
    dsn, b_role = team
    posing = PostgresStore.open(as_role(dsn, b_role), "laptop-a", "default")
    try:
        with pytest.raises(StoreError, match="publishes as ci-b, not as laptop-a"):
            put(posing, "forged.md", "forged")
    finally:
        posing.close()


def test_the_team_command(team_dsn, tmp_path):
    import subprocess
    import sys

    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {tmp_path}\nteam: {{dsn: '{team_dsn}', host: laptop-a}}\n")
    role = f"host_{uuid.uuid4().hex[:8]}"

    def memd(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "memd", "--config", str(config), "team", *args],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "schema version" in memd("init")
    assert memd("status") == "nothing published yet\n"
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"CREATE ROLE {role}_ci LOGIN")
    assert memd("add-host", role, "laptop-a") == f"role {role} publishes as laptop-a\n"
    assert memd("add-host", f"{role}_ci", "ci-b") == f"role {role}_ci publishes as ci-b\n"
    assert memd("grant", role, "ci-b") == f"role {role} may read ci-b/*\n"
    assert count(team_dsn, f"SELECT count(*) FROM memd_grants WHERE grantee = '{role}'") == 1
    store = PostgresStore.open(as_role(team_dsn, role), "laptop-a", "default")
    try:
        put(store, "MEMORY.md", "published")
    finally:
        store.close()
    shown = memd("status")
    assert shown.startswith("laptop-a/default: 1 files, 1 chunks, 1 vectors")
    assert f"host laptop-a: role {role} (" in shown
    assert f"grant: role {role} reads ci-b/*" in shown
    [row] = json.loads(memd("status", "--json"))["workspaces"]
    assert (row["host"], row["files"], row["vectors"]) == ("laptop-a", 1, 1)
    failed = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "team", "grant", role],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 2 and "needs ROLE and HOST" in failed.stderr


def test_doctor_says_whether_this_host_can_publish(team_dsn, tmp_path):
    from memd.cli.doctor import run_checks

    role = f"host_{uuid.uuid4().hex[:8]}"
    config = tmp_path / "memd.yaml"
    config.write_text(
        f"workspace: {tmp_path}\nstate_dir: {tmp_path / 's'}\nembeddings: {{provider: none}}\n"
        f"team: {{dsn: '{as_role(team_dsn, role)}', host: laptop-a}}\n"
    )

    def team_check():
        checks = run_checks(str(config), None, {"HOME": str(tmp_path)})
        [check] = [c for c in checks if c.name == "team"]
        return check

    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    check = team_check()
    assert (check.state, check.detail) == ("fail", "the database has no memd tables")
    admin.init(team_dsn)
    check = team_check()
    assert check.state == "fail" and f"role {role} may not publish" in check.detail
    assert f"memd team add-host {role} laptop-a" in check.fix
    admin.add_host(team_dsn, role, "laptop-a")
    check = team_check()
    assert check.state == "ok" and f"role {role} publishes as laptop-a" in check.detail


def test_a_bulk_publish_refreshes_the_planners_statistics(team, monkeypatch):
    # On stale statistics PostgreSQL reads every vector instead of the HNSW index.
    import memd.store.postgres as postgres

    dsn, b_role = team
    analyzed = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'memd_vectors'"
    before = count(dsn, analyzed)
    monkeypatch.setattr(postgres, "ANALYZE_AFTER_ROWS", 40)
    store = PostgresStore.open(as_role(dsn, b_role), "ci-b", "default")
    try:
        put(store, "a.md", "first")  # a few rows: under the bar
        assert count(dsn, analyzed) == before
        for n in range(12):  # 600 chunks: past the bar here, and enough to be worth it there
            m = FileMeta(f"{n}.md", f"/ws/{n}.md", f"/ws/{n}.md", "memory", None, 1, 1, "h", 50)
            with store.transaction():
                store.replace_file(
                    m, chunk_rows(m, [Chunk(i, i, "", f"n{i}", 1) for i in range(50)])
                )
    finally:
        store.close()
    # Through memd_analyze: the role itself may not ANALYZE (nor LOCK) the tables.
    assert count(dsn, analyzed) > before


def test_a_team_database_of_schema_3_is_upgraded_with_its_rows_and_hosts(team_dsn):
    """What an older memd made: its rows survive, its hosts lose what let them LOCK."""
    from memd.store import postgres_schema as schema

    role = f"old_host_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE memd_schema (version integer NOT NULL)")
        for step in schema.MIGRATIONS[:3]:
            conn.execute(step)
        conn.execute("INSERT INTO memd_schema VALUES (3)")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute("INSERT INTO memd_hosts VALUES (%s, 'laptop-a')", (role,))
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, MAINTAIN ON memd_files, "
                     f"memd_chunks, memd_vectors, memd_meta TO {role}")  # fmt: skip
        conn.execute(
            "INSERT INTO memd_files(host, workspace, path, abspath, realpath, source, size, "
            "mtime_ns, hash, lines, indexed_at) VALUES ('laptop-a', 'default', 'MEMORY.md', "
            "'/m', '/m', 'memory', 1, 1, 'h', 1, 0)"
        )
        conn.execute(
            "INSERT INTO memd_chunks(file_id, start_line, end_line, heading, text, tokens, "
            "fts_heading, fts_body, fts_meta, fts_cjk) SELECT id, 1, 1, '', 'kept across the "
            "upgrade', 4, '', 'kept across the upgrade', '', '' FROM memd_files"
        )
    host_dsn = as_role(team_dsn, role)
    with pytest.raises(StoreError, match="only an administrator may make: memd team init"):
        PostgresStore.open(host_dsn, "laptop-a", "default")
    assert admin.init(team_dsn) == schema.SCHEMA_VERSION
    store = PostgresStore.open(host_dsn, "laptop-a", "default")
    try:
        assert [h.text for h in store.keyword_search(match_query("upgrade"), 5)] == [
            "kept across the upgrade"
        ]
        put(store, "memory/2026-01-20.md", "written after the upgrade")
    finally:
        store.close()
    with (
        psycopg.connect(host_dsn, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        conn.transaction(),
    ):
        conn.execute("LOCK TABLE memd_chunks IN ACCESS EXCLUSIVE MODE")
