"""The storage seam's contract (``memd.store.base.Store``), run against every backend.

Only the interface is used here: no SQL, no backend attribute. A new backend joins by
adding a factory to ``BACKENDS``; everything below must then pass on it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memd.sources.chunker import Chunk
from memd.store.base import Store
from memd.store.fts import match_query, term_strings
from memd.store.postgres import PostgresStore
from memd.store.rows import FileMeta, SessionState, chunk_rows
from memd.store.sqlite import SqliteStore


def sqlite(request, tmp_path: Path) -> Store:
    return SqliteStore.open(tmp_path / "index.sqlite")


def postgres(request, tmp_path: Path) -> Store:
    # One shared database, a scope of its own per test: as hosts share a team database. The
    # whole seam is the tables' owner's (a host's role publishes and reads through memd's
    # functions alone: tests/test_team_roles.py).
    dsn = request.getfixturevalue("postgres_dsn")
    return PostgresStore.open(dsn, host=f"host-{tmp_path.name}", workspace="default")


BACKENDS: dict[str, Callable[..., Store]] = {"sqlite": sqlite, "postgres": postgres}
MODEL = "test-model/passages-1"


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path) -> Iterator[Store]:
    opened = BACKENDS[request.param](request, tmp_path)
    yield opened
    opened.close()


def meta(path: str, date: str | None = None, **kw) -> FileMeta:
    values = dict(
        path=path,
        abspath=f"/ws/{path}",
        realpath=f"/ws/{path}",
        source="daily" if date else "memory",
        date=date,
        size=10,
        mtime_ns=1,
        hash="h1",
        lines=9,
    )
    values.update(kw)
    return FileMeta(**values)


def put(store: Store, m: FileMeta, *chunks: Chunk) -> int:
    with store.transaction():
        return store.replace_file(m, chunk_rows(m, chunks))


def keyword(store: Store, query: str, **kw) -> list[str]:
    match = match_query(query)
    assert match is not None
    return [f"{h.path}#{h.start_line}" for h in store.keyword_search(match, 10, **kw)]


def vector(n: float) -> bytes:
    return bytes([int(n)] * 8)


def test_files_carry_their_stamps(store):
    file_id = put(
        store, meta("MEMORY.md", size=42, mtime_ns=7, hash="abc"), Chunk(1, 2, "", "x", 1)
    )
    row = store.files()["MEMORY.md"]
    assert (row.id, row.size, row.mtime_ns, row.hash) == (file_id, 42, 7, "abc")
    assert store.files_at(["MEMORY.md", "nope.md"]).keys() == {"MEMORY.md"}
    with store.transaction():
        store.touch_file(file_id, 43, 8)
    assert (store.files()["MEMORY.md"].size, store.files()["MEMORY.md"].mtime_ns) == (43, 8)
    assert store.file_realpath("MEMORY.md") == "/ws/MEMORY.md"
    assert store.file_realpath("nope.md") is None


def test_replacing_a_file_replaces_all_its_chunks(store):
    put(store, meta("a.md"), Chunk(1, 2, "# A", "alpha beta", 2))
    put(store, meta("a.md", hash="h2"), Chunk(1, 1, "", "gamma", 1), Chunk(2, 3, "", "delta", 1))
    assert store.counts() == {"files": 1, "chunks": 2}
    assert keyword(store, "alpha") == []
    assert keyword(store, "gamma") == ["a.md#1"]


def test_deleting_files_forgets_chunks_and_vectors(store):
    file_id = put(store, meta("a.md"), Chunk(1, 2, "", "alpha", 1))
    (chunk_id, _), *_ = [store.first_chunk(file_id)]
    with store.transaction():
        store.save_vectors(MODEL, [(chunk_id, 0, b"k", vector(1), " alpha ")], cache_size=10)
        store.delete_files([file_id])
    assert store.counts() == {"files": 0, "chunks": 0}
    assert keyword(store, "alpha") == []
    assert store.count_vectors(MODEL) == (0, 0)
    assert store.chunks_by_id([chunk_id]) == {}


def test_a_tail_is_replaced_and_the_head_keeps_its_vectors(store):
    head, tail = Chunk(1, 3, "# Day", "kept words", 2), Chunk(4, 5, "# Day", "old tail", 2)
    file_id = put(store, meta("memory/2026-01-20.md", "2026-01-20"), head, tail)
    head_id, _ = store.first_chunk(file_id)
    with store.transaction():
        store.save_vectors(MODEL, [(head_id, 0, b"k1", vector(1), " kept ")], cache_size=10)
    m = meta("memory/2026-01-20.md", "2026-01-20", size=20, hash="h2")
    new_tail = [Chunk(4, 5, "# Day", "old tail", 2), Chunk(6, 8, "# Day", "appended line", 2)]
    with store.transaction():
        assert store.replace_tail(m, 4, chunk_rows(m, new_tail, first=False)) == file_id
    assert store.counts()["chunks"] == 3
    assert store.count_vectors(MODEL) == (1, 2)  # the head's vector stayed
    assert keyword(store, "appended") == ["memory/2026-01-20.md#6"]
    assert store.files()["memory/2026-01-20.md"].size == 20


def test_a_failed_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError), store.transaction():
        store.replace_file(meta("a.md"), chunk_rows(meta("a.md"), [Chunk(1, 1, "", "lost", 1)]))
        raise RuntimeError("boom")
    assert store.counts() == {"files": 0, "chunks": 0}
    assert keyword(store, "lost") == []


def test_keyword_search_ranks_and_filters(store):
    put(store, meta("memory/2026-01-19.md", "2026-01-19"), Chunk(1, 2, "", "postgres once", 2))
    put(
        store,
        meta("memory/2026-01-20.md", "2026-01-20"),
        Chunk(1, 2, "", "postgres postgres replication for postgres", 4),
    )
    put(store, meta("MEMORY.md"), Chunk(1, 2, "", "nothing relevant here", 3))
    assert keyword(store, "postgres") == ["memory/2026-01-20.md#1", "memory/2026-01-19.md#1"]
    assert keyword(store, "postgres", since="2026-01-20") == ["memory/2026-01-20.md#1"]
    assert keyword(store, "postgres", until="2026-01-19") == ["memory/2026-01-19.md#1"]
    older = store.files()["memory/2026-01-19.md"].id
    assert keyword(store, "postgres", file_ids=[older]) == ["memory/2026-01-19.md#1"]
    hits = store.keyword_search(match_query("replication"), 10)
    assert hits[0].bm25 > 0 and hits[0].date == "2026-01-20" and hits[0].source == "daily"


def test_a_date_in_words_and_cjk_text_are_keywords(store):
    put(store, meta("memory/2023-05-25.md", "2023-05-25"), Chunk(1, 2, "# Log", "shipped", 1))
    put(store, meta("notes.md"), Chunk(1, 1, "", "我们决定使用数据库", 5))
    assert keyword(store, "thursday") == ["memory/2023-05-25.md#1"]
    assert keyword(store, "数据库") == ["notes.md#1"]


def test_term_counts_and_holders_per_clause(store):
    put(store, meta("a.md"), Chunk(1, 1, "", "alpha beta", 2), Chunk(2, 2, "", "alpha", 1))
    put(store, meta("b.md"), Chunk(1, 1, "", "gamma", 1))
    match = match_query("alpha beta")
    assert store.term_counts(match) == (3, [2, 1])
    ids = {h.text: h.chunk_id for h in store.keyword_search(match_query("alpha gamma"), 10)}
    holders = store.term_holders(match, [ids["alpha beta"], ids["gamma"]])
    assert holders == [{ids["alpha beta"]}, {ids["alpha beta"]}]
    assert store.term_holders(match, []) == [set(), set()]


def test_dated_chunks_newest_file_first(store):
    put(store, meta("memory/2026-01-18.md", "2026-01-18"), Chunk(1, 1, "", "a", 1))
    put(
        store,
        meta("memory/2026-01-20.md", "2026-01-20"),
        Chunk(1, 1, "", "b", 1),
        Chunk(2, 2, "", "c", 1),
    )
    put(store, meta("MEMORY.md"), Chunk(1, 1, "", "undated", 1))
    got = [(h.path, h.start_line) for h in store.dated_chunks("2026-01-17", None, 10)]
    assert got == [
        ("memory/2026-01-20.md", 1),
        ("memory/2026-01-20.md", 2),
        ("memory/2026-01-18.md", 1),
    ]
    assert [h.path for h in store.dated_chunks(None, "2026-01-18", 10)] == ["memory/2026-01-18.md"]


def test_vectors_come_back_in_the_order_they_were_added(store):
    file_id = put(store, meta("a.md"), Chunk(1, 1, "", "one", 1), Chunk(2, 2, "", "two", 1))
    first, _ = store.first_chunk(file_id)
    pending = store.pending_chunks(MODEL, 10)
    assert [(p[2], p[4]) for p in pending] == [("one", "a.md"), ("two", "a.md")]
    ids = [p[0] for p in pending]
    assert ids[0] == first
    terms = term_strings(["one", "two"])
    with store.transaction():
        store.save_vectors(MODEL, [(ids[0], 0, b"k1", vector(1), terms[0])], cache_size=10)
    ((row_id, chunk_id, part, blob),) = store.vectors_after(MODEL, 0)
    assert (chunk_id, part, blob) == (ids[0], 0, vector(1))
    with store.transaction():
        store.save_vectors(MODEL, [(ids[1], 0, b"k2", vector(2), terms[1])], cache_size=10)
    assert [r[1] for r in store.vectors_after(MODEL, row_id)] == [ids[1]]
    assert store.count_vectors_after(MODEL, row_id) == 1
    assert store.count_vectors(MODEL) == (2, 0) and store.count_vector_rows(MODEL) == 2
    assert store.pending_chunks(MODEL, 10) == []
    assert store.passage_terms(MODEL, [ids[1]]) == {(ids[1], 0): terms[1]}
    assert store.count_vectors("another-model") == (0, 2)


def test_a_vector_of_another_size_is_stale(store):
    put(store, meta("a.md"), Chunk(1, 1, "", "one", 1))
    ((chunk_id, *_),) = store.pending_chunks(MODEL, 10)
    with store.transaction():
        store.save_vectors(MODEL, [(chunk_id, 0, b"k", vector(1), " one ")], cache_size=10)
    assert store.count_vectors(MODEL, nbytes=8) == (1, 0)
    assert store.count_vectors(MODEL, nbytes=16) == (0, 1)
    assert [p[0] for p in store.pending_chunks(MODEL, 10, nbytes=16)] == [chunk_id]


def test_the_embedding_cache_keeps_the_most_recent(store):
    file_id = put(store, meta("a.md"), *[Chunk(n, n, "", f"w{n}", 1) for n in range(1, 5)])
    first, _ = store.first_chunk(file_id)
    for n in range(4):
        with store.transaction():
            store.save_vectors(MODEL, [(first + n, 0, b"k%d" % n, vector(n), "")], cache_size=2)
    cached = store.cached_vectors([b"k0", b"k1", b"k2", b"k3"])
    if isinstance(store, PostgresStore):
        # The team store shares no cache: a row keyed by a text's hash would tell any role
        # that the text is in someone's notes.
        assert cached == {}
        return
    assert cached[b"k2"] == vector(2) and cached[b"k3"] == vector(3)  # the two most recent
    assert len(cached) <= 4


def test_vectors_no_chunk_holds_are_kept_in_the_cache_alone(store):
    with store.transaction():
        store.cache_vectors([(b"q0", vector(0)), (b"q1", vector(1))], cache_size=2)
    with store.transaction():
        store.cache_vectors([(b"q2", vector(2))], cache_size=2)
    cached = store.cached_vectors([b"q0", b"q1", b"q2"])
    assert store.count_vector_rows(MODEL) == 0  # no vector row: the cache only
    if isinstance(store, PostgresStore):
        assert cached == {}  # shares no cache (above)
        return
    assert cached == {b"q1": vector(1), b"q2": vector(2)}  # trimmed, least recent first


def test_pending_chunks_wait_for_quiet_files(store):
    put(store, meta("a.md"), Chunk(1, 1, "", "fresh", 1))
    assert store.pending_chunks(MODEL, 10, quiet_since=0.0) == []
    assert len(store.pending_chunks(MODEL, 10, quiet_since=float("inf"))) == 1


def test_session_read_positions(store):
    m = meta("sessions/main/s1.jsonl", source="session")
    file_id = put(store, m, Chunk(1, 2, "", "user asked about backups", 4))
    state = SessionState(file_id, 100, 5, 100, 2, "headhash", 64, "s1", "2026-01-20T10:00:00")
    with store.transaction():
        store.save_session(state)
        store.append_chunks(file_id, chunk_rows(m, [Chunk(3, 4, "", "assistant answered", 2)]))
    assert store.session_files() == {"sessions/main/s1.jsonl": state}
    assert store.counts()["chunks"] == 2
    assert store.files()["sessions/main/s1.jsonl"].size == 100
    assert store.has_files_under("sessions/main")
    assert not store.has_files_under("sessions/other")


def test_replacing_keyword_columns_of_one_chunk(store):
    file_id = put(store, meta("a.md"), Chunk(1, 1, "", "original", 1))
    chunk_id, chunk = store.first_chunk(file_id)
    assert chunk.text == "original"
    with store.transaction():
        store.replace_fts(chunk_id, ("", "replaced", "", ""))
    assert keyword(store, "replaced") == ["a.md#1"]
    assert keyword(store, "original") == []


def test_tags_links_and_named_values(store):
    put(
        store,
        meta("notes/x.md", tags=("ops",), realpath="/elsewhere/x.md"),
        Chunk(1, 1, "", "x", 1),
    )
    [(_, path, tags)] = store.file_tags()
    assert (path, tags) == ("notes/x.md", ["ops"])
    assert store.linked_files() == [("/ws/notes/x.md", "/elsewhere/x.md")]
    assert store.get_meta("generation") is None
    assert store.get_meta("generation", "0") == "0"
    with store.transaction():
        store.set_meta("generation", "3")
    assert store.get_meta("generation") == "3"


def test_a_reader_sees_committed_writes(store):
    reader = store.reader()
    try:
        chunk_id, _ = store.first_chunk(put(store, meta("a.md"), Chunk(1, 1, "", "readers", 3)))
        assert [h.path for h in reader.chunks_by_id([chunk_id]).values()] == ["a.md"]
        assert reader.counts() == {"files": 1, "chunks": 1}
    finally:
        reader.close()


def test_a_damaged_store_is_replaced_by_an_empty_one(store):
    put(store, meta("a.md"), Chunk(1, 1, "", "x", 1))
    assert store.size_bytes() > 0
    fresh = store.replace_damaged("test")
    try:
        assert fresh.counts() == {"files": 0, "chunks": 0}
    finally:
        fresh.close()
    store.close = lambda: None  # replaced: the fixture must not close it twice


def test_a_file_reads_back_as_it_was_written(store):
    """What a publisher copies from one store to another: facts, chunks (their keyword
    columns follow), and vectors in passage order."""
    m = meta("memory/2026-01-20.md", "2026-01-20", tags=("ops", "db"), aliases=("Jan 20",))
    rows = chunk_rows(
        m, [Chunk(1, 2, "# Day", "我们决定 alpha", 3), Chunk(3, 4, "# Day", "beta", 1)]
    )
    with store.transaction():
        file_id = store.replace_file(m, rows)
    assert store.file_meta(m.path) == m
    assert store.file_meta("nope.md") is None
    got = store.file_chunks(file_id)
    assert chunk_rows(m, [chunk for _, chunk in got]) == rows
    first, second = (chunk_id for chunk_id, _ in got)
    with store.transaction():
        store.save_vectors(
            MODEL,
            [(first, 1, b"k2", vector(2), " b "), (first, 0, b"k1", vector(1), " a ")],
            cache_size=10,
        )
    assert store.chunk_vectors(MODEL, [first, second]) == {
        first: [(0, vector(1), " a "), (1, vector(2), " b ")]
    }
