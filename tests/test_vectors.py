import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memd.sources.chunker import Chunk
from memd.store.rows import FileMeta, chunk_rows
from memd.store.sqlite import SqliteStore
from memd.store.vectors import VectorIndex, from_blob, to_blob


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1, max_size=64))
def test_blob_roundtrip(values):
    vector = np.array(values, dtype=np.float32)
    assert np.array_equal(from_blob(to_blob(vector)), vector)


def unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def store_with_chunks(tmp_path, n):
    store = SqliteStore.open(tmp_path / "v.sqlite")
    meta = FileMeta("memory/a.md", "/a", "/a", "memory", None, 1, 1, "h", n)
    with store.transaction():
        store.replace_file(
            meta, chunk_rows(meta, [Chunk(i, i, "", f"t{i}", 1) for i in range(1, n + 1)])
        )
    ids = [r[0] for r in store.db.execute("SELECT id FROM chunks ORDER BY id")]
    return store, ids


def test_search_top_k_and_incremental_refresh(tmp_path):
    store, ids = store_with_chunks(tmp_path, 3)
    vectors = [unit(1, 0), unit(0, 1), unit(1, 1)]
    with store.transaction():
        store.save_vectors("m", [(ids[0], 0, b"k0", to_blob(vectors[0]), "p")], cache_size=10)
    index = VectorIndex("m")
    index.refresh(store)
    assert len(index) == 1
    with store.transaction():
        store.save_vectors(
            "m",
            [
                (i, 0, f"k{n}".encode(), to_blob(v), "p")
                for n, (i, v) in enumerate(zip(ids[1:], vectors[1:], strict=True), start=1)
            ],
            cache_size=10,
        )
        store.save_vectors(
            "other-model", [(ids[0], 0, b"x", to_blob(unit(0, 1)), "p")], cache_size=10
        )
    index.refresh(store)
    assert len(index) == 3  # the other model's vector is not loaded
    top = index.search(unit(1, 0.1), 2)
    assert [chunk_id for chunk_id, _ in top] == [ids[0], ids[2]]
    assert top[0][1] > top[1][1]
    assert set(index.nearest_parts([ids[1], 999], unit(1, 0))) == {ids[1]}


def test_a_chunk_is_as_near_as_its_best_passage(tmp_path):
    store, ids = store_with_chunks(tmp_path, 3)
    rows = [
        (ids[0], 0, b"a0", to_blob(unit(0, 1)), "a zero"),
        (ids[0], 1, b"a1", to_blob(unit(1, 0)), "a one"),  # chunk 0's second passage matches
        (ids[1], 0, b"b0", to_blob(unit(1, 0.5)), "b zero"),
        (ids[2], 0, b"c0", to_blob(unit(0.2, 1)), "c zero"),
        (ids[2], 1, b"c1", to_blob(unit(0.9, 1)), "c one"),
    ]
    with store.transaction():
        store.save_vectors("m", rows, cache_size=10)
    assert store.count_vectors("m") == (3, 0)
    index = VectorIndex("m")
    index.refresh(store)
    top = index.search(unit(1, 0), 3)
    assert [chunk_id for chunk_id, _ in top] == [ids[0], ids[1], ids[2]]  # each chunk once
    assert top[0][1] > 0.999
    near = index.nearest_parts([ids[2]], unit(1, 0))[ids[2]]
    assert np.allclose(near.vector, unit(0.9, 1))
    assert abs(near.cosine - float(unit(0.9, 1)[0])) < 1e-6
    # every passage's cosine, by its number in the chunk, and the words of each
    assert near.parts.keys() == {0, 1} and near.parts[1] == near.cosine
    assert abs(near.parts[0] - float(unit(0.2, 1)[0])) < 1e-6
    assert store.passage_terms("m", [ids[2]]) == {(ids[2], 0): "c zero", (ids[2], 1): "c one"}


def test_dead_vectors_are_compacted(tmp_path):
    store, _ = store_with_chunks(tmp_path, 1)
    index = VectorIndex("m")
    rng = np.random.default_rng(0)
    for round_ in range(3000):  # the same note edited over and over: new chunk ids each time
        meta = FileMeta("memory/a.md", "/a", "/a", "memory", None, 1, 1, f"h{round_}", 1)
        with store.transaction():
            store.replace_file(meta, chunk_rows(meta, [Chunk(1, 1, "", f"v{round_}", 1)]))
            (chunk_id,) = store.db.execute("SELECT id FROM chunks").fetchone()
            last = unit(*rng.standard_normal(8))
            store.save_vectors("m", [(chunk_id, 0, f"k{round_}".encode(), to_blob(last), "p")], 10)
        index.refresh(store)
    assert len(index) <= 1024 + 2
    assert index.search(last, 1)[0][0] == chunk_id
