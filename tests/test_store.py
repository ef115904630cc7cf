import os
import threading

import apsw
import pytest

from memd.errors import IndexCorrupt, StoreError
from memd.sources.chunker import Chunk
from memd.store.fts import MatchQuery, match_query
from memd.store.rows import FileMeta, chunk_rows
from memd.store.schema import SCHEMA_VERSION
from memd.store.sqlite import SqliteStore


def meta(path="memory/a.md", **kw) -> FileMeta:
    values = dict(
        path=path,
        abspath="/x/" + path,
        realpath="/x/" + path,
        source="memory",
        date=None,
        size=1,
        mtime_ns=1,
        hash="h",
        lines=3,
    )
    values.update(kw)
    return FileMeta(**values)


def test_new_database_is_wal_with_schema_version(tmp_path):
    store = SqliteStore.open(tmp_path / "state" / "i.sqlite")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    store.close()
    # opening again migrates nothing and keeps data
    store = SqliteStore.open(tmp_path / "state" / "i.sqlite")
    assert store.counts() == {"files": 0, "chunks": 0}
    store.close()


def test_replace_and_delete_file(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    with store.transaction():
        store.replace_file(meta(), chunk_rows(meta(), [Chunk(1, 2, "# A", "alpha beta", 2)]))
    assert store.counts() == {"files": 1, "chunks": 1}
    with store.transaction():
        store.replace_file(
            meta(hash="h2"),
            chunk_rows(meta(hash="h2"), [Chunk(1, 1, "", "gamma", 1), Chunk(2, 3, "", "d", 1)]),
        )
    assert store.counts() == {"files": 1, "chunks": 2}
    assert store.keyword_search(match_query("alpha"), 10) == []  # old chunk gone from FTS too
    assert len(store.keyword_search(match_query("gamma"), 10)) == 1
    file_id = store.files()["memory/a.md"].id
    with store.transaction():
        store.delete_files([file_id])
    assert store.counts() == {"files": 0, "chunks": 0}
    assert (
        store.db.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'gamma'"
        ).fetchone()[0]
        == 0
    )


ROWS = (
    "SELECT f.path, f.hash, f.tags, c.start_line, c.end_line, c.heading, c.text, c.tokens "
    "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.start_line"
)


def test_new_files_added_together_are_as_replaced_one_by_one(tmp_path):
    """``add_files`` writes what ``replace_file`` would, file by file; a file another
    process added meanwhile (two one-shot commands at once) is replaced, not refused."""
    files = [
        (m, chunk_rows(m, [Chunk(1, 1, "# T", f"term{i} shared", 2), Chunk(2, 4, "", "x", 1)]))
        for i, m in enumerate(meta(f"memory/n{i}.md", tags=(f"t{i}",)) for i in range(5))
    ]
    one_by_one, together = (SqliteStore.open(tmp_path / f"{n}.sqlite") for n in ("a", "b"))
    with one_by_one.transaction():
        for m, rows in files:
            one_by_one.replace_file(m, rows)
    with together.transaction():
        together.replace_file(*files[2])  # already there, as another process left it
        together.add_files(files)
    for store in (one_by_one, together):
        assert store.counts() == {"files": 5, "chunks": 10}
        assert [len(store.keyword_search(match_query(f"term{i}"), 10)) for i in range(5)] == [1] * 5
        assert len(store.keyword_search(match_query("t3"), 10)) == 1  # the first chunk's tags
    assert list(together.db.execute(ROWS)) == list(one_by_one.db.execute(ROWS))
    one_by_one.close()
    together.close()


def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path):
    """A garbage index file is detected, kept aside for inspection, and rebuilt empty."""
    path = tmp_path / "i.sqlite"
    path.write_bytes(b"this is not sqlite" * 1000)
    store = SqliteStore.open(path)
    assert store.counts() == {"files": 0, "chunks": 0}
    aside = [p for p in os.listdir(tmp_path) if ".corrupt-" in p]
    assert aside and (tmp_path / aside[0]).read_bytes().startswith(b"this is not sqlite")
    store.close()


def damage(path) -> None:
    """Overwrite pages in the middle of a real database file."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(64 * 1024))


def filled_store(path) -> SqliteStore:
    store = SqliteStore.open(path)
    with store.transaction():
        for i in range(300):
            m = meta(f"memory/{i}.md")
            store.replace_file(m, chunk_rows(m, [Chunk(1, 1, "", f"word{i} " * 200, 200)]))
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store


def test_damage_is_reported_as_index_corrupt(tmp_path):
    """Pages overwritten in a real index surface as IndexCorrupt naming the file."""
    path = tmp_path / "i.sqlite"
    filled_store(path).close()
    damage(path)
    store = SqliteStore.open(path)
    with pytest.raises(IndexCorrupt, match=str(path)):
        store.check()
    store.close()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "i.sqlite"
    db = apsw.Connection(str(path))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this memd"):
        SqliteStore.open(path)


def test_unwritable_state_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create state folder"):
        SqliteStore.open(blocker / "state" / "i.sqlite")


def test_meta_roundtrip(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    assert store.get_meta("generation", "0") == "0"
    with store.transaction():
        store.set_meta("generation", "3")
    assert store.get_meta("generation") == "3"


def test_a_bad_fts5_expression_is_a_store_error(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    m = meta()
    with store.transaction():
        store.replace_file(m, chunk_rows(m, [Chunk(1, 1, "", "x y", 2)]))
    bad = MatchQuery('"unclosed', ('"unclosed',), (("unclosed",),))
    with pytest.raises(StoreError, match="keyword query failed"):
        store.keyword_search(bad, 10)
    store.close()


def test_sqlite_trims_the_embedding_cache_exactly(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    m = meta()
    with store.transaction():
        file_id = store.replace_file(
            m, chunk_rows(m, [Chunk(n, n, "", f"w{n}", 1) for n in (1, 2, 3)])
        )
    first, _ = store.first_chunk(file_id)
    for n in range(3):
        with store.transaction():
            store.save_vectors("m", [(first + n, 0, b"k%d" % n, b"v" * 8, "")], cache_size=2)
    assert store.cached_vectors([b"k0", b"k1", b"k2"]).keys() == {b"k1", b"k2"}
    store.close()


def test_closing_a_connection_another_thread_is_reading_on_does_not_raise(tmp_path):
    """A stopping daemon closes every read connection while work it abandons may still be
    reading on one: the stop must not end in a crash (exit 1) for it."""
    store = SqliteStore.open(tmp_path / "state" / "i.sqlite")
    inside, release = threading.Event(), threading.Event()

    def hold() -> int:
        inside.set()
        release.wait(30)
        return 1

    store.db.create_scalar_function("hold", hold)
    answer: list = []
    reader = threading.Thread(target=lambda: answer.extend(store.db.execute("SELECT hold()")))
    reader.start()
    assert inside.wait(30)  # the other thread is inside a query on the connection now
    try:
        store.close()
    finally:
        release.set()
        reader.join(30)
    assert answer == [(1,)]  # the reader's query ran to its end
