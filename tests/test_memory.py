import contextlib
import os

import pytest

from memd.errors import NotFound, PathRefused


def test_get_reads_lines_from_disk(ws, memory):
    ws.write("memory/a.md", "".join(f"line {i}\n" for i in range(1, 11)))
    got = memory.get("memory/a.md", 3, 4).as_dict()
    assert got == {
        "path": "memory/a.md",
        "from": 3,
        "lines": 4,
        "text": "line 3\nline 4\nline 5\nline 6\n",
        "total_lines": 10,
        "truncated": False,
        "next_from": 7,
    }
    tail = memory.get("memory/a.md", 9, 120).as_dict()
    assert tail["lines"] == 2 and tail["next_from"] is None
    assert memory.get("memory/a.md", 50).as_dict()["text"] == ""


def test_get_caps_lines_at_1000(ws, memory):
    ws.write("memory/big.md", "x\n" * 1500)
    got = memory.get("memory/big.md", 1, 5000).as_dict()
    assert got["lines"] == 1000 and got["truncated"] and got["next_from"] == 1001
    rest = memory.get("memory/big.md", 1001, 5000).as_dict()  # fewer left than the cap: all of it
    assert rest["lines"] == 500 and not rest["truncated"] and rest["next_from"] is None


def test_get_caps_text_at_64_kib(ws, memory):
    ws.write("memory/wide.md", ("w" * 1000 + "\n") * 200)
    got = memory.get("memory/wide.md", 1, 200).as_dict()
    assert len(got["text"].encode()) <= 64 * 1024
    assert got["truncated"] and got["next_from"] == got["lines"] + 1


def test_get_one_huge_line_is_cut(ws, memory):
    ws.write("memory/line.md", "z" * 200_000 + "\nnext\n")
    got = memory.get("memory/line.md").as_dict()
    assert got["lines"] == 1 and got["truncated"] and got["next_from"] == 2
    assert len(got["text"].encode()) <= 64 * 1024 + 1


def test_get_reads_the_file_even_if_not_yet_indexed(ws, memory):
    ws.write("MEMORY.md", "# fresh\n")
    assert memory.get("MEMORY.md").as_dict()["text"] == "# fresh\n"


def test_get_refusals(ws, memory):
    ws.write("README.md", "not memory\n")
    for bad in ("../README.md", "/etc/passwd", "README.md", "memory/../README.md"):
        with pytest.raises(PathRefused):
            memory.get(bad)
    with pytest.raises(NotFound):
        memory.get("memory/none.md")


def test_get_symlink_out_of_the_workspace(ws, memory, tmp_path):
    """A link to a file outside is readable only when the indexer followed it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.md").write_text("# shared\n")
    os.symlink(outside, ws.root / "memory")
    memory.index()
    assert memory.get("memory/shared.md").as_dict()["text"] == "# shared\n"
    # swapping the link to another target after indexing is refused
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "shared.md").write_text("secret\n")
    os.remove(ws.root / "memory")
    os.symlink(secret, ws.root / "memory")
    with pytest.raises(PathRefused, match="outside the workspace"):
        memory.get("memory/shared.md").as_dict()


def test_status(ws, memory):
    ws.write("memory/a.md", "# a\ntext\n")
    memory.index()
    status = memory.status().as_dict()
    assert status["files"] == 1 and status["chunks"] == 1
    assert status["workspace"] == "default" and status["path"] == str(ws.root)
    assert status["last_indexed_at"].endswith("Z")
    assert status["database_bytes"] > 0


def test_a_pass_that_finds_nothing_changed_writes_nothing(ws, memory, config):
    """A one-shot search's pass over unchanged files is a read: the database file is left
    byte for byte as it was (no transaction, no fsync), yet the answer says when the
    index was last checked; a changed file is written as before."""
    from memd.index.index import database_path
    from memd.memory import Memory

    ws.write("memory/a.md", "# a\ntext\n")
    memory.index()
    memory.close()  # everything in the database file itself
    memory = Memory(config)
    db = database_path(config, "default")
    before = db.read_bytes()
    stored = float(memory.db.store.get_meta("last_indexed_at"))
    first = memory.status().last_indexed_at
    assert memory.index().touched is False
    assert memory.db.checked_at > stored  # this pass's end, kept here, not written
    assert memory.search("text").index.last_indexed_at >= first
    memory.close()
    assert db.read_bytes() == before
    memory = Memory(config)
    ws.write("memory/a.md", "# a\ntext, more\n")
    assert memory.index().changed == 1
    memory.close()
    assert db.read_bytes() != before


def test_concurrent_reads_keep_a_bounded_pool_of_connections(config, ws):
    """Reads from many threads share pooled connections: after a burst only a few stay
    open (they used to be kept per thread, one for every thread that ever read)."""
    import threading

    from memd.index.index import database_path
    from memd.index.readers import IDLE
    from memd.memory import Memory

    ws.write("memory/2026-01-02.md", "# 2026-01-02\nThe okapi sleeps standing.\n")
    first = Memory(config)
    first.index()
    first.close()
    memory = Memory(config, concurrent_reads=True)
    db = str(database_path(config, "default"))

    def open_on_db() -> int:
        links = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
        return links.count(db)

    together = threading.Barrier(8)
    found = []

    def burst() -> None:
        def held(store):
            together.wait(timeout=30)  # all eight read at once: eight connections lent
            return store.counts()["chunks"]

        found.append(memory.db.read(held))

    for _ in range(3):
        threads = [threading.Thread(target=burst) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert found == [1] * 24
    assert memory.search("okapi").results
    # SQLite keeps a closed connection's file open while others in the process hold locks
    # on it (and reuses it for the next one), so connections are counted in the pool.
    assert len(memory.db._readers) <= IDLE
    memory.close()
    assert open_on_db() == 0
