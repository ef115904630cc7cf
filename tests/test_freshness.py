"""Freshness that never lies: edits the stat cache cannot see, symlinked files, and the
moments between a file event and the index pass."""

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memd import Memory
from memd.errors import InvalidParams
from memd.records import Activity


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


@pytest.fixture
def settled(serve, ws):
    ws.write("memory/2026-01-20.md", "# 2026-01-20\nplain note\n")
    d = serve()
    d.wait_for(
        lambda: not d.call("memory_search", query="plain")["index"]["stale"], what="start-up"
    )
    return d


def test_an_answer_never_claims_fresh_while_missing_a_written_token(settled, ws):
    """Right after a write, an answer either has the new text or says stale (the watcher's
    debounce used to hide the write for ~0.5 s while answers said stale: false)."""
    d = settled
    lies = 0
    for n in range(30):
        token = f"zebra{n}x"
        ws.write(f"memory/t{n % 3}.md", f"# T\n{token}\n")
        answer = d.call("memory_search", query=token, min_score=0)
        found = any(token in r["snippet"] for r in answer["results"])
        lies += not found and not answer["index"]["stale"]
        if n % 10 == 9:
            d.wait_for(lambda: not d.call("status")["pending_files"], what="settle")
    assert lies == 0


def test_wait_fresh_reads_your_writes(settled, ws):
    d = settled
    for n in range(10):
        token = f"quagga{n}x"
        ws.write(f"memory/w{n % 2}.md", f"# W\n{token}\n")
        started = time.monotonic()
        answer = d.call("memory_search", query=token, min_score=0, wait_fresh=5)
        assert time.monotonic() - started < 2  # the debounce is skipped for a waiting reader
        assert [r["path"] for r in answer["results"]] == [f"memory/w{n % 2}.md"]
        assert answer["index"]["stale"] is False and "warning" not in answer
    (ws.root / "memory" / "w0.md").unlink()
    answer = d.call("memory_search", query="quagga8x", min_score=0, wait_fresh=5)
    assert answer["results"] == [] and answer["index"]["stale"] is False


def test_a_wait_that_ran_out_says_so_only_while_the_answer_is_stale(settled, ws):
    """A wait far too short to index anything mostly runs out; the answer warns of it only
    when it is still stale (the index may have caught up before the search ran)."""
    for n in range(20):
        token = f"tapir{n}x"
        ws.write(f"memory/t{n % 2}.md", f"# T\n{token}\n")
        answer = settled.call("memory_search", query=token, min_score=0, wait_fresh=0.001)
        late = "had not caught up" in (answer.get("warning") or "")
        found = [r["path"] for r in answer["results"]] == [f"memory/t{n % 2}.md"]
        assert not late or answer["index"]["stale"], answer  # no "may miss" on a fresh answer
        assert found or answer["index"]["stale"], answer  # never fresh without the line


@pytest.mark.parametrize("bad", [-1, 11, "soon", True])
def test_wait_fresh_is_checked(settled, bad):
    with pytest.raises(InvalidParams, match="wait_fresh"):
        settled.call("memory_search", query="plain", wait_fresh=bad)


def test_cli_search_wait(settled, ws):
    ws.write("memory/c.md", "# C\nokapi sighting\n")
    args = ["search", "okapi", "--wait", "5", "--min-score", "0", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(settled.config_path), *args],
        env=settled.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["results"][0]["path"] == "memory/c.md" and not answer["index"]["stale"]


def test_a_flush_is_not_reported_as_a_pending_edit(settled):
    """memd's own append is indexed when the flush answers: the next search must not say
    "1 changed file not indexed yet" while the watcher still holds the file event."""
    d = settled
    for n in range(5):
        d.call("memory_flush", entries=[{"text": f"flushed okapi {n}"}], date="2026-01-20")
        index = d.call("memory_search", query=f"okapi {n}")["index"]
        assert index["pending_files"] == 0 and index["stale"] is False, index


def test_a_search_for_people_includes_what_was_just_saved(settled, ws):
    """The README's first example: append a line, search at once, from the shell."""
    for n in range(3):
        with open(ws.root / "MEMORY.md", "a") as f:
            f.write(f"# Memory\n- We use Postgres {16 + n} for the main database.\n")
        out = subprocess.run(
            [sys.executable, "-m", "memd", "--config", str(settled.config_path), "search",
             "which database do we use"],
            env=settled.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert f"Postgres {16 + n}" in out.stdout and "not indexed yet" not in out.stderr


def test_without_a_daemon_wait_fresh_indexes_first(ws, memory):
    memory.index()
    ws.write("memory/n.md", "# N\nnarwhal\n")
    assert memory.search("narwhal", min_score=0, wait_fresh=1).results
    ws.write("memory/n.md", "# N\nbeluga\n")
    stale, gone = memory.db.stale_paths()
    assert stale == {str(ws.root / "memory" / "n.md")} and not gone
    (ws.root / "memory" / "n.md").unlink()
    assert memory.db.stale_paths() == (set(), True)


def _inotify_watches(pid: int) -> int:
    total = 0
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        with contextlib.suppress(OSError):  # an fd closed meanwhile
            total += fd.read_text().count("inotify wd:")
    return total


@pytest.mark.skipif(not Path("/proc/self/fdinfo").exists(), reason="counts watches in /proc")
def test_a_link_to_the_root_does_not_watch_the_whole_disk(serve, ws):
    """A recursive watch follows links: memory/ holding a link to / is watched folder by
    folder instead, the link left out, and a folder made later is watched too."""
    ws.write("memory/2026-01-20.md", "# 2026-01-20\nplain note\n")
    os.symlink("/", ws.root / "memory" / "root")
    d = serve()
    d.wait_for(lambda: d.search("plain"), what="start-up index")
    assert _inotify_watches(d.proc.pid) < 50
    ws.write("memory/later/2026-01-21.md", "# 2026-01-21\nthe kestrel\n")
    d.wait_for(lambda: d.search("kestrel"), what="a note in a folder made after start")
    ws.write("memory/later/2026-01-22.md", "# 2026-01-22\nthe merlin\n")
    d.wait_for(lambda: d.search("merlin"), what="an edit inside that folder")


def test_an_answer_is_as_fresh_as_the_index_it_read(ws, config):
    """An index pass that ends between the search and its freshness check must not make
    an answer read from the older index say it is fresh."""
    ws.write("memory/a.md", "# A\nold words\n")
    edited = []

    def activity() -> Activity:
        # The daemon's pass for the edit ends just before the first look: nothing waits.
        if not edited:
            edited.append(True)
            memory.index()
        return Activity(daemon=True, watcher="running")

    memory = Memory(config, activity=activity)
    try:
        memory.index()
        ws.write("memory/a.md", "# A\nnew gnu words\n")
        answer = memory.search("gnu", min_score=0)
        assert answer.results or answer.index.stale, answer
    finally:
        memory.close()
