import os

import pytest
from structlog.testing import capture_logs

from memd.config import Chunking
from memd.errors import WorkspaceMissing
from memd.index import prepare, workers
from memd.index.reconcile import reconcile
from memd.memory import Memory
from memd.search.request import SearchRequest
from memd.sources.layout import Workspace, stat_stamp
from memd.store.sqlite import SqliteStore


def chunk_ids(memory: Memory, path: str) -> list[int]:
    sql = "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?"
    return [r[0] for r in memory.db.store.db.execute(sql, (path,))]


def found(memory: Memory, query: str) -> set[str]:
    answer = memory.search(SearchRequest(query, max_results=20, min_score=0)).as_dict()
    return {r["path"] for r in answer["results"]}


def test_first_index_then_nothing_changed(ws, memory):
    ws.write("MEMORY.md", "# Core\nWe use Postgres.\n")
    ws.write("memory/2026-01-20.md", "# Day\nShipped the atlas release.\n")
    first = memory.index()
    assert (first.added, first.changed, first.removed) == (2, 0, 0)
    assert first.chunks == 2
    again = memory.index()
    assert (again.added, again.changed, again.removed, again.unchanged) == (0, 0, 0, 2)
    assert found(memory, "postgres") == {"MEMORY.md"}


def test_only_changed_files_are_rechunked(ws, memory):
    ws.write("memory/a.md", "# A\nalpha\n")
    ws.write("memory/b.md", "# B\nbravo\n")
    memory.index()
    before_a, before_b = chunk_ids(memory, "memory/a.md"), chunk_ids(memory, "memory/b.md")
    ws.write("memory/b.md", "# B\nbravo charlie\n")
    report = memory.index()
    assert (report.changed, report.unchanged) == (1, 1)
    assert chunk_ids(memory, "memory/a.md") == before_a  # untouched rows
    assert chunk_ids(memory, "memory/b.md") != before_b
    assert found(memory, "charlie") == {"memory/b.md"}


def test_touched_but_same_content_is_not_rechunked(ws, memory):
    path = ws.write("memory/a.md", "# A\nalpha\n")
    memory.index()
    ids = chunk_ids(memory, "memory/a.md")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    report = memory.index()
    assert report.unchanged == 1 and report.changed == 0
    assert chunk_ids(memory, "memory/a.md") == ids
    assert memory.db.store.files()["memory/a.md"].mtime_ns == stat_stamp(os.stat(path))


def test_deleted_and_renamed_files(ws, memory):
    ws.write("memory/a.md", "# A\nalpha\n")
    ws.write("memory/b.md", "# B\nbravo\n")
    memory.index()
    (ws.root / "memory" / "a.md").unlink()
    os.rename(ws.root / "memory" / "b.md", ws.root / "memory" / "c.md")
    report = memory.index()
    assert (report.added, report.removed) == (1, 2)
    assert set(memory.db.store.files()) == {"memory/c.md"}
    assert found(memory, "alpha") == set()
    assert found(memory, "bravo") == {"memory/c.md"}


def test_full_rebuild_rechunks_everything(ws, memory):
    ws.write("memory/a.md", "# A\nalpha\n")
    memory.index()
    ids = chunk_ids(memory, "memory/a.md")
    report = memory.index(full=True)
    assert report.changed == 1
    assert chunk_ids(memory, "memory/a.md") != ids
    assert found(memory, "alpha") == {"memory/a.md"}


def test_generation_moves_only_when_something_changed(ws, memory):
    ws.write("memory/a.md", "x\n")
    memory.index()
    g = memory.status().generation
    memory.index()
    assert memory.status().generation == g
    ws.write("memory/a.md", "y\n")
    memory.index()
    assert memory.status().generation == g + 1


def test_deleting_the_database_loses_nothing(ws, config):
    ws.write("memory/a.md", "# A\nalpha\n")
    with Memory(config) as m:
        m.index()
        db = m.db.store.path
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.remove(f"{db}{suffix}")
    with Memory(config) as m:
        assert m.status().as_dict()["files"] == 0
        m.index()
        assert found(m, "alpha") == {"memory/a.md"}


def test_non_utf8_file_is_indexed_with_a_warning(ws, memory):
    ws.write_bytes("memory/latin1.md", "# Café\nnaïve résumé \xff\n".encode("latin-1"))
    ws.write("memory/ok.md", "# ok\nfine\n")
    with capture_logs() as logs:
        report = memory.index()
    assert report.added == 2
    assert any("not valid UTF-8" in w for w in report.warnings)
    assert any(e["event"] == "file_warning" and e["path"] == "memory/latin1.md" for e in logs)
    assert found(memory, "caf") == {"memory/latin1.md"}  # 'Caf\ufffd' still has its word
    assert found(memory, "fine") == {"memory/ok.md"}
    text = memory.get("memory/latin1.md").as_dict()["text"]
    assert "\ufffd" in text


def test_empty_file_is_indexed_without_chunks(ws, memory):
    ws.write("memory/empty.md", "")
    report = memory.index()
    assert report.added == 1 and report.chunks == 0
    assert memory.get("memory/empty.md").as_dict()["total_lines"] == 0


def test_huge_file_is_skipped_with_a_warning(ws, memory):
    """A 50 MB file is skipped with a warning; everything else is indexed."""
    big = ws.root / "memory" / "dump.md"
    big.parent.mkdir(parents=True)
    with open(big, "wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: instant, and over the limit
    ws.write("memory/small.md", "# small\nkept\n")
    with capture_logs() as logs:
        report = memory.index()
    assert report.skipped == 1 and report.added == 1
    assert any("over the 20 MiB limit" in w for w in report.warnings)
    assert any(e["event"] == "file_skipped" for e in logs)
    assert set(memory.db.store.files()) == {"memory/small.md"}


def test_file_that_vanishes_between_listing_and_reading(ws, config):
    """A file deleted after the scan is skipped; the rest is indexed."""
    ws.write("memory/a.md", "# A\nalpha\n")
    ws.write("memory/gone.md", "# G\ngone\n")

    class Vanishing(Workspace):
        def scan_against(self, known):
            found = super().scan_against(known)
            os.remove(ws.root / "memory" / "gone.md")
            return found

    store = SqliteStore.open(config.state_dir / "v.sqlite")
    report = reconcile(store, Vanishing(config.workspace()), Chunking())
    assert report.added == 1 and report.skipped == 1
    assert any("vanished" in w for w in report.warnings)
    assert set(store.files()) == {"memory/a.md"}
    store.close()


def test_missing_workspace_raises_and_keeps_the_index(ws, memory):
    ws.write("memory/a.md", "# A\nalpha\n")
    memory.index()
    os.rename(ws.root, ws.root.with_name("moved"))
    with pytest.raises(WorkspaceMissing, match="does not exist"):
        memory.index()
    assert memory.status().as_dict()["files"] == 1  # a vanished folder does not wipe the index


def test_read_only_workspace_is_indexed(ws, memory):
    ws.write("memory/a.md", "# A\nalpha\n")
    os.chmod(ws.root / "memory", 0o555)
    os.chmod(ws.root, 0o555)
    try:
        assert memory.index().added == 1
    finally:
        os.chmod(ws.root, 0o755)
        os.chmod(ws.root / "memory", 0o755)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_file_is_skipped(ws, memory):
    path = ws.write("memory/secret.md", "x\n")
    ws.write("memory/ok.md", "y\n")
    os.chmod(path, 0)
    report = memory.index()
    assert report.skipped == 1 and report.added == 1


@pytest.mark.parametrize("methods", [None, ["fork", "spawn"]], ids=["platform", "no-forkserver"])
def test_parallel_workers_give_the_same_index(ws, config, monkeypatch, methods):
    """Many files are parsed in worker processes (forked by a fork server, or spawned where
    a platform has none); the index is the same as in-process."""
    if methods is not None:
        import multiprocessing

        monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: methods)
    for i in range(80):
        ws.write(f"memory/2025-01-{i % 28 + 1:02d}-n{i}.md", f"# Note {i}\n\nterm{i} shared\n")
    monkeypatch.setattr(workers, "_PARALLEL_MIN", 10)
    store = SqliteStore.open(config.state_dir / "p.sqlite")
    report = reconcile(store, Workspace(config.workspace()), Chunking(), workers=2)
    assert report.added == 80 and report.chunks == 80
    serial = SqliteStore.open(config.state_dir / "s.sqlite")
    reconcile(serial, Workspace(config.workspace()), Chunking(), workers=1)
    q = (
        "SELECT f.path, c.start_line, c.end_line, c.text "
        "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY 1, 2"
    )
    assert list(store.db.execute(q)) == list(serial.db.execute(q))
    store.close()
    serial.close()


def test_progress_is_reported(ws, memory):
    for i in range(5):
        ws.write(f"memory/n{i}.md", f"note {i}\n")
    seen = []
    memory.index(progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (5, 5)


def test_a_damaged_index_is_moved_aside_and_rebuilt(ws, config):
    """Damage found while searching or re-indexing costs a rebuild, never an answer."""
    for i in range(300):
        ws.write(f"memory/n{i}.md", f"# N{i}\n" + f"word{i} " * 200 + "\n")
    with Memory(config) as m:
        m.index()
        m.db.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        path = m.db.store.path
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(64 * 1024))
    with capture_logs() as logs, Memory(config) as m:
        report = m.index(full=True)
        assert report.added == 300
        assert found(m, "word7") == {"memory/n7.md"}
    assert any(e["event"] == "index_corrupt" for e in logs)
    assert any(".corrupt-" in p.name for p in path.parent.iterdir())


def test_a_pass_that_finds_nothing_changed_classifies_no_file(ws, memory, monkeypatch):
    """A file the index holds as its directory entry says is only named by the walk: no
    classify, no entry; a changed one (same size, mtime put back) is still read."""
    for n in range(5):
        ws.write(f"memory/2026-01-0{n + 1}.md", f"# Day {n}\nnote {n}\n")
    memory.index()
    classified = []
    real = Workspace.classify

    def counting(self, root, rel, walked=False):
        if rel.startswith("memory/"):  # not MEMORY.md, looked for by name
            classified.append(rel)
        return real(self, root, rel, walked)

    monkeypatch.setattr(Workspace, "classify", counting)
    again = memory.index()
    assert (again.unchanged, again.changed, classified) == (5, 0, [])
    path = ws.root / "memory/2026-01-03.md"
    st = os.stat(path)
    path.write_text("# Day 2\nnote X\n")  # the same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    edited = memory.index()
    assert (edited.unchanged, edited.changed, classified) == (4, 1, ["memory/2026-01-03.md"])
    assert found(memory, "X") == {"memory/2026-01-03.md"}


def test_a_new_exclude_glob_removes_files_the_index_held_unchanged(ws, make_config):
    """Files the index holds as they are on disk are still checked against the rules when
    the rules changed: an excluded one leaves the index."""
    ws.write("MEMORY.md", "# Core\nWe use Postgres.\n")
    ws.write("memory/plans.draft.md", "# Draft\nsecret plans\n")
    with Memory(make_config()) as memory:
        assert memory.index().added == 2
    with Memory(make_config(exclude=["*.draft.md"])) as memory:
        report = memory.index()
        assert (report.removed, report.unchanged) == (1, 1)
        assert found(memory, "secret") == set()


def test_a_prepared_file_crosses_processes_as_it_was(ws, config):
    """What a worker sends back (plain tuples on the way) is the record it made; a job
    that keeps no tail gets none."""
    import pickle

    path = ws.write("memory/2026-01-05.md", "# Day #ops\n\nShipped [[atlas]].\n\n# Two\n\nMore.\n")
    entry = next(e for e in Workspace(config.workspace()).scan_against(None)[0])
    assert entry.abspath == str(path)
    job = prepare.Job(entry, None, Chunking())
    made = prepare.prepare(job)
    assert made.rows and made.tail is not None
    assert pickle.loads(pickle.dumps(job)) == job
    back = pickle.loads(pickle.dumps(made))
    assert back == made and type(back.rows[0]).__name__ == "ChunkRow"
    assert back.rows[0].fts == made.rows[0].fts and back.meta == made.meta
    assert prepare.prepare(prepare.Job(entry, None, Chunking(), regrow=False)).tail is None


FTS_SETTINGS = "SELECT k, v FROM chunks_fts_config WHERE k IN ('automerge', 'hashsize')"
VOCAB = "SELECT term, col, doc, cnt FROM v ORDER BY 1, 2"
SEGMENTS = "SELECT count(DISTINCT segid) FROM chunks_fts_idx"


def test_a_pass_over_many_files_writes_in_bulk_then_puts_the_settings_back(ws, config, monkeypatch):
    """A first index of many files writes with the full-text index's bulk settings, in
    larger transactions; the same terms are indexed, and the usual settings are back after."""
    from memd.index import reconcile as module

    for i in range(30):
        ws.write(f"memory/2025-02-{i % 28 + 1:02d}-n{i}.md", f"# Note {i}\n\nterm{i} shared\n")
    monkeypatch.setattr(module, "_BULK_FILES", 20)
    monkeypatch.setattr(module, "_BULK_BATCH", 10)
    monkeypatch.setattr(module, "_BATCH_FILES", 2)  # in bulk: 30 // 5 files a transaction
    bulk = SqliteStore.open(config.state_dir / "bulk.sqlite")
    during = []

    def progress(done: int, total: int) -> None:  # after each batch's commit
        reader = bulk.reader()
        during.append((done, dict(reader.db.execute(FTS_SETTINGS))))
        reader.close()

    reconcile(bulk, Workspace(config.workspace()), Chunking(), progress=progress, workers=1)
    assert during == [(n, {"automerge": 0, "hashsize": 16 << 20}) for n in (6, 12, 18, 24, 30)]
    assert dict(bulk.db.execute(FTS_SETTINGS)) == {"automerge": 4, "hashsize": 1 << 20}

    monkeypatch.setattr(module, "_BULK_FILES", 1000)
    plain = SqliteStore.open(config.state_dir / "plain.sqlite")
    reconcile(plain, Workspace(config.workspace()), Chunking(), workers=1)
    for store in (bulk, plain):
        store.db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, col)")
    assert list(bulk.db.execute(VOCAB)) == list(plain.db.execute(VOCAB))
    assert len(list(bulk.db.execute(VOCAB))) > 30

    # Written again (--full): what the files held is deleted, and the index merged after.
    monkeypatch.setattr(module, "_BULK_FILES", 20)
    reconcile(bulk, Workspace(config.workspace()), Chunking(), full=True, workers=1)
    assert list(bulk.db.execute(VOCAB)) == list(plain.db.execute(VOCAB))
    assert bulk.db.execute(SEGMENTS).fetchall() == [(1,)]
    bulk.close()
    plain.close()


def test_bulk_settings_left_by_a_killed_pass_are_put_back_at_the_next_open(config):
    """A process that dies during a bulk pass leaves its settings in the database: the
    next writer to open it restores FTS5's usual ones (a reader leaves them alone)."""
    import subprocess
    import sys

    path = config.state_dir / "killed.sqlite"
    dies_inside = (
        "import os, sys\n"
        "from memd.store.sqlite import SqliteStore\n"
        "writes = SqliteStore.open(__import__('pathlib').Path(sys.argv[1])).bulk()\n"
        "writes.__enter__()\n"
        "os._exit(9)\n"
    )
    died = subprocess.run([sys.executable, "-c", dies_inside, str(path)], timeout=60)
    assert died.returncode == 9
    reader = SqliteStore.open(path, readonly=True)
    assert dict(reader.db.execute(FTS_SETTINGS)) == {"automerge": 0, "hashsize": 16 << 20}
    reader.close()
    again = SqliteStore.open(path)
    assert dict(again.db.execute(FTS_SETTINGS)) == {"automerge": 4, "hashsize": 1 << 20}
    again.close()
