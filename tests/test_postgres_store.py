"""What the PostgreSQL backend adds to the contract: many scopes in one database."""

from memd.sources.chunker import Chunk
from memd.store.fts import match_query
from memd.store.postgres import PostgresStore
from memd.store.postgres_schema import SCHEMA_VERSION
from memd.store.rows import FileMeta, chunk_rows


def put(store, path: str, text: str) -> int:
    m = FileMeta(path, f"/ws/{path}", f"/ws/{path}", "memory", None, 1, 1, "h", 1)
    with store.transaction():
        return store.replace_file(m, chunk_rows(m, [Chunk(1, 1, "", text, 3)]))


def test_each_host_and_workspace_sees_only_its_own_rows(postgres_dsn, tmp_path):
    a = PostgresStore.open(postgres_dsn, f"a-{tmp_path.name}", "default")
    b = PostgresStore.open(postgres_dsn, f"b-{tmp_path.name}", "default")
    b_other = PostgresStore.open(postgres_dsn, f"b-{tmp_path.name}", "other")
    try:
        put(a, "MEMORY.md", "we picked postgres")
        put(b, "MEMORY.md", "we picked sqlite")
        assert [h.text for h in a.keyword_search(match_query("picked"), 10)] == [
            "we picked postgres"
        ]
        assert [h.text for h in b.keyword_search(match_query("picked"), 10)] == ["we picked sqlite"]
        assert b_other.counts() == {"files": 0, "chunks": 0}
        assert a.files().keys() == b.files().keys() == {"MEMORY.md"}
        assert a.files()["MEMORY.md"].id != b.files()["MEMORY.md"].id
        a.replace_damaged("test")  # emptying one scope leaves the others
        assert a.counts()["files"] == 0 and b.counts()["files"] == 1
    finally:
        for s in (a, b, b_other):
            s.close()


def test_opening_again_migrates_nothing(postgres_dsn, tmp_path):
    for _ in range(2):
        PostgresStore.open(postgres_dsn, "h", "w").close()
    import psycopg

    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT version FROM memd_schema").fetchall() == [(SCHEMA_VERSION,)]
