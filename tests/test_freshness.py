"""Freshness that never lies: edits the stat cache cannot see, symlinked files, and the
moments between a file event and the index pass."""

import os

import pytest


def same_size_edit_keeping_mtime(path, old: str, new: str) -> None:
    """Rewrite ``path`` with text of the same length and put its old mtime back (what
    `cp -p`, `rsync -t` or a careful editor does)."""
    assert len(old) == len(new)
    st = os.stat(path)
    path.write_text(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_size == st.st_size


def test_a_same_size_edit_that_restores_the_mtime_is_indexed(ws, memory):
    path = ws.write("memory/a.md", "# A\nalpha\n")
    memory.index()
    same_size_edit_keeping_mtime(path, "# A\nalpha\n", "# A\nomega\n")
    report = memory.index()
    assert report.changed == 1
    assert memory.search("omega", min_score=0).results
    assert not memory.search("alpha", min_score=0).results


def test_a_watcher_event_is_trusted_over_the_stat_cache(ws, memory):
    """Even when size, mtime, ctime and inode all match, a reported path is read."""
    path = ws.write("memory/a.md", "# A\nalpha\n")
    memory.index()
    with memory.db.store.transaction():  # the index thinks it has this file's stat
        memory.db.store.db.execute("UPDATE files SET hash = 'stale'")
    assert memory.index().changed == 0  # a plain pass trusts the stat stamp...
    assert memory.index_paths([str(path)]).changed == 1  # ...an event does not


def test_the_daemon_sees_a_same_size_edit_that_restores_the_mtime(serve, ws):
    path = ws.write("memory/a.md", "# A\nalpha\n")
    d = serve()
    d.wait_for(lambda: d.search("alpha"), what="start-up index")
    same_size_edit_keeping_mtime(path, "# A\nalpha\n", "# A\nomega\n")
    d.wait_for(lambda: d.search("omega"), what="the edit indexed")
    assert not d.search("alpha")


@pytest.fixture
def linked(tmp_path, ws):
    """``memory/linked.md`` is a symlink to a file outside the workspace."""
    target = tmp_path / "elsewhere" / "notes.md"
    target.parent.mkdir()
    target.write_text("# Elsewhere\nthe heron\n")
    (ws.root / "memory").mkdir(parents=True, exist_ok=True)
    os.symlink(target, ws.root / "memory" / "linked.md")
    ws.write("memory/2026-01-20.md", "# 2026-01-20\nplain note\n")
    return target


def test_an_edit_to_the_target_of_a_symlinked_file_is_indexed(serve, ws, linked):
    d = serve()
    d.wait_for(lambda: d.search("heron"), what="start-up index")
    linked.write_text("# Elsewhere\nthe egret\n")  # in place
    d.wait_for(lambda: d.search("egret"), what="an in-place edit of the link's target")
    tmp = linked.with_suffix(".tmp")
    tmp.write_text("# Elsewhere\nthe ibis\n")
    os.replace(tmp, linked)  # save by rename: a new inode
    d.wait_for(lambda: d.search("ibis"), what="a save-by-rename of the link's target")
    assert [r["path"] for r in d.search("ibis")] == ["memory/linked.md"]
    assert not d.search("egret")
