"""``memd index`` without a daemon returns once the index is searchable, and a process of
its own finds what later notes replaced (``memd.cli.finish``), holding a lock the one-shot
readers wait on (``memd.index.finishlock``): they show the newer statement, or say that
it is still being found, never an old fact silently."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time

import pytest

from memd.configfile import load_config
from memd.index.finishlock import FinishLock
from memd.memory import Memory

OLDER, NEWER = "MEMORY.md", "memory/2026-03-09.md"
NOTES = {
    OLDER: "# Memory\n\n- The deploy target is staging.\n- Ana owns the billing export.\n",
    NEWER: "# 2026-03-09\n\n## Ops\n- The deploy target is now production.\n",
    "memory/2026-03-04.md": "# 2026-03-04\n\n- Paired with Omar on the billing export.\n",
    "memory/2026-03-05.md": "# 2026-03-05\n\n- The office plants were watered.\n",
}
QUESTION = "deploy target"
LONG = "120"  # seconds a reader may wait where the test means it to wait: never reached


@pytest.fixture
def setup(tmp_path):
    """A workspace of notes, its config, and ``memd(*args, wait=...)`` run as the shell
    would (``wait``: ``MEMD_CURRENT_WAIT_S``)."""
    root = tmp_path / "workspace"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {root}\nstate_dir: {tmp_path / 'state'}\n"
                      "embeddings: {provider: none}\n")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}

    def memd(
        *args: str, wait: str | None = LONG, budget: str = LONG
    ) -> subprocess.CompletedProcess:
        """``budget``: a hook's (context and recall's) own, long unless the test says: a
        loaded machine's slow read never falls back to MEMORY.md as written. ``wait``
        None: the commands' own bounds."""
        run_env = {**env, "MEMD_CURRENT_WAIT_S": wait, "MEMD_HOOK_BUDGET_S": budget}
        if wait is None:
            del run_env["MEMD_CURRENT_WAIT_S"]
        done = subprocess.run([sys.executable, "-m", "memd", *args], capture_output=True,
                              text=True, env=run_env, input="", timeout=180)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    loaded = load_config(config)
    lock = FinishLock(loaded.state_dir, "default")
    return memd, loaded, lock, env, root


def _older(answer: dict) -> dict:
    return next(r for r in answer["results"] if r["path"] == OLDER)


def _log(lock: FinishLock) -> list[dict]:
    text = lock.log.read_text(encoding="utf-8") if lock.log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _indexed_without_current(config) -> None:
    """The keyword index alone, as ``memd index`` commits it before its finish."""
    with Memory(config) as memory:
        memory.index()
        assert memory.currency.waiting()


def test_memd_index_returns_and_the_readers_then_show_what_replaced_the_old_line(setup):
    """``memd index`` hands what is current to a child and says so; a one-shot search and
    ``memd context`` after it show the newer statement (waiting for the child if needed)."""
    memd, _, lock, _, _ = setup
    said = json.loads(memd("index", "--json").stdout)
    assert said["added"] == len(NOTES) and said["current"] == "pending"
    assert said["finishing"]["pid"] > 0 and said["finishing"]["queued"] is False
    human = memd("index", "--full").stdout  # changes the index again: another child
    assert "finding what later notes replaced in the background (pid" in human
    answer = json.loads(memd("search", QUESTION, "--json").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4" and "current" not in answer
    context = memd("context").stdout
    assert f"→ now: The deploy target is now production. ({NEWER}#L4)" in context
    assert "still being found" not in context
    assert lock.wait(float(LONG)) is None
    assert [e["event"] for e in _log(lock)].count("finish_done") == 2
    # The lock files are private, in the private state folder.
    assert stat.S_IMODE(lock.state_dir.stat().st_mode) == 0o700
    for path in (lock.run, lock.queue, lock.log):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_one_shot_search_waits_for_the_finish_in_flight(setup):
    """A search started while a finish holds the lock answers only once it ends, and then
    with what it found (the finish here is the test's own, so the order is certain)."""
    _, config, lock, env, _ = setup
    _indexed_without_current(config)
    handed = lock.hand_off()
    assert handed is not None and handed.kind == "run"
    reader = subprocess.Popen(
        [sys.executable, "-m", "memd", "--verbose", "search", QUESTION, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**env, "MEMD_CURRENT_WAIT_S": LONG},
    )  # fmt: skip
    try:
        events = []
        for line in reader.stderr:  # its log, until it says it waits (or it ends)
            events.append(json.loads(line).get("event") if line.startswith("{") else line)
            if events[-1] == "current_wait":
                break
        assert "current_wait" in events, events
        with Memory(config) as memory:  # the finish, while the reader waits
            assert memory.currency.catch_up()
    finally:
        os.close(handed.fd)
    out, _ = reader.communicate(timeout=180)
    assert reader.returncode == 0
    answer = json.loads(out)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4" and "current" not in answer


def test_readers_say_pending_when_the_finish_outlasts_their_bound(setup):
    """With the lock held past the bound, search, context, review and status answer, and
    say that what is current is still being found (status: since when, and who)."""
    memd, config, lock, _, _ = setup
    _indexed_without_current(config)
    handed = lock.hand_off()
    lock.stamp(handed, os.getpid(), "2026-03-10T08:00:00+00:00")
    try:
        answer = json.loads(memd("search", QUESTION, "--json", wait="0.2").stdout)
        assert answer["current"] == "pending" and "superseded_by" not in _older(answer)
        assert "still being found" in memd("search", QUESTION, wait="0.2").stderr
        context = json.loads(memd("context", "--json", wait="0.2").stdout)
        assert context["current"] == "pending" and "→ now:" not in context["text"]
        hook = memd("context", "--hook", budget="1.5").stdout  # waits within its budget
        assert "(memd: what later notes replaced is still being found" in hook
        recall = json.loads(memd("recall", QUESTION, "--json", wait="0.2").stdout)
        assert recall["current"] == "pending"
        assert json.loads(memd("review", "--json", wait="0.2").stdout)["current"] == "pending"
        status = json.loads(memd("status", "--json", wait="0.2").stdout)
        assert status["current"] == "pending"
        assert status["finishing"] == {"pid": os.getpid(), "since": "2026-03-10T08:00:00+00:00",
                                       "queued": False}  # fmt: skip
        assert f"pid {os.getpid()}, since 2026-03-10" in memd("status", wait="0.2").stdout
        # By default status never waits: it is how a person sees what is in flight.
        plain = memd("--verbose", "status", "--json", wait=None)
        assert json.loads(plain.stdout)["current"] == "pending"
        assert "current_wait" not in plain.stderr
    finally:
        os.close(handed.fd)
    assert "current" not in json.loads(memd("status", "--json", wait="0").stdout)


def test_index_wait_finds_what_is_current_before_it_returns(setup):
    """``memd index --wait`` starts no process: what later notes replaced is in the index
    when it returns, for a reader that does not wait at all."""
    memd, _, lock, _, _ = setup
    said = json.loads(memd("index", "--wait", "--json").stdout)
    assert "current" not in said and "finishing" not in said
    assert not lock.run.exists() and not lock.log.exists()
    answer = json.loads(memd("search", QUESTION, "--json", wait="0").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4"
    assert "current" not in json.loads(memd("index", "--json").stdout)  # nothing to find


def test_a_one_shot_search_that_indexes_an_edit_finds_what_the_edit_replaced(setup):
    """A search without a daemon indexes the notes edited since; what the edit replaced,
    or no longer replaces, is in its answer, or the answer says it is still being found:
    never the relation the edit undid."""
    memd, _, lock, _, root = setup
    memd("index", "--wait")
    newer = root / NEWER
    newer.write_text("# 2026-03-09\n\n## Ops\n- The office plants were moved.\n")
    answer = json.loads(memd("search", QUESTION, "--json").stdout)
    assert "superseded_by" not in _older(answer) and "current" not in answer
    with newer.open("a", encoding="utf-8") as f:  # said again, a line lower
        f.write("- The deploy target is now production.\n")
    answer = json.loads(memd("search", QUESTION, "--json").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L5" and "current" not in answer
    assert not lock.log.exists()  # found by the search itself: no process to start
    # A script that waits for nothing is answered at once, told the answer may lag, and a
    # process of its own finds what is current.
    newer.write_text("# 2026-03-09\n\n## Ops\n- The deploy target is now qa.\n")
    answer = json.loads(memd("search", QUESTION, "--json", wait="0").stdout)
    assert answer["current"] == "pending" or _older(answer)["superseded_by"] == f"{NEWER}#L4"
    assert lock.wait(float(LONG)) is None
    assert [e["event"] for e in _log(lock)] == ["finish_done"]
    answer = json.loads(memd("search", QUESTION, "--json", wait="0").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4" and "current" not in answer


def test_a_first_one_shot_search_hands_what_is_current_to_a_process_of_its_own(setup):
    """A search that indexed many notes itself (here the first one, of 64) hands finding
    what is current to a process of its own, as ``memd index`` does, and waits for what is
    left of its bound: with time left, its answer has what the child found."""
    memd, _, lock, _, root = setup
    for day in range(1, 61):
        note = root / f"memory/2026-01-{day % 28 + 1:02}-{day}.md"
        note.write_text(f"# Walk {day}\n\n- Walked {day} km along the river.\n")
    answer = json.loads(memd("search", QUESTION, "--json").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4" and "current" not in answer
    assert [e["event"] for e in _log(lock)] == ["finish_done"]


def test_the_library_router_finds_what_an_edit_replaced_before_it_answers(setup):
    """Without a finish to hand to (the MCP bridge, a library), the router finds what is
    current itself after indexing an edit."""
    from memd.serve.router import Router

    memd, config, _, _, root = setup
    memd("index", "--wait")
    router = Router(config)
    try:
        (root / NEWER).write_text("# 2026-03-09\n\n## Ops\n- Lunch was late.\n")
        answer = router.call("memory_search", {"query": QUESTION})
        assert "superseded_by" not in _older(answer) and "current" not in answer
        (root / NEWER).write_text("# 2026-03-09\n\n- The deploy target is now production.\n")
        answer = router.call("memory_search", {"query": QUESTION})
        assert _older(answer)["superseded_by"] == f"{NEWER}#L3"
    finally:
        router.close()


def test_a_second_index_queues_its_finish_behind_the_one_in_flight(setup):
    """While a finish holds the lock, ``memd index`` starts a child that waits for it
    (writing nothing meanwhile), and a third needs none; the queued one then finishes."""
    memd, config, lock, _, _ = setup
    _indexed_without_current(config)
    handed = lock.hand_off()
    try:
        said = json.loads(memd("index", "--json").stdout)
        assert said["finishing"]["queued"] is True and said["finishing"]["pid"] > 0
        third = json.loads(memd("index", "--json").stdout)
        assert third["finishing"] == {"pid": None, "queued": True}
        flight = lock.in_flight()
        assert flight is not None and flight.pid == os.getpid()
        with Memory(config) as memory:
            assert memory.currency.waiting()  # the queued child has written nothing
    finally:
        os.close(handed.fd)
    assert lock.wait(float(LONG)) is None
    assert [e["event"] for e in _log(lock)] == ["finish_queued", "finish_done"]
    answer = json.loads(memd("search", QUESTION, "--json", wait="0").stdout)
    assert _older(answer)["superseded_by"] == f"{NEWER}#L4"


def test_the_finish_ends_quietly_when_the_workspace_is_gone(setup):
    """A workspace removed while the child waited: it logs why and ends, writing nothing."""
    memd, config, lock, _, root = setup
    _indexed_without_current(config)
    handed = lock.hand_off()
    try:
        assert json.loads(memd("index", "--json").stdout)["finishing"]["queued"] is True
        shutil.rmtree(root)
    finally:
        os.close(handed.fd)
    assert lock.wait(float(LONG)) is None
    events = _log(lock)
    assert [e["event"] for e in events] == ["finish_queued", "finish_skipped"]
    assert "is gone" in events[-1]["why"]


def test_a_child_that_fails_says_why_in_its_log(tmp_path):
    """A config the child cannot load: the failure is logged, with the exit code 1."""
    fd = os.open(tmp_path / "held", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memd.cli.finish", "--workspace", "default",
             "--run-fd", str(fd), "--config", str(tmp_path / "missing.yaml")],
            pass_fds=(fd,), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(fd)
    assert done.returncode == 1
    failed = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert failed[-1]["event"] == "finish_failed" and "does not exist" in failed[-1]["error"]


def test_a_daemon_that_starts_while_a_finish_waits_keeps_what_is_current_itself(
    tmp_path, ws, serve
):
    """A daemon started while a child waits for the lock: the child ends without error
    (its rows left to the daemon when it sees it), and the daemon's answers carry what
    later notes replaced."""
    for rel, text in NOTES.items():
        ws.write(rel, text, dedent=False)
    path = tmp_path / "memd.yaml"  # as the daemon's own, written again by ``serve``
    path.write_text(f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\n"
                    f"socket: {tmp_path / 'run' / 'memd.sock'}\n"
                    "embeddings: {provider: none}\n")  # fmt: skip
    config = load_config(path)
    _indexed_without_current(config)
    lock = FinishLock(config.state_dir, "default")
    handed = lock.hand_off()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memd", "--config", str(path), "index", "--json"],
            capture_output=True, text=True, input="", timeout=180,
            env={**os.environ, "HOME": str(tmp_path)},
        )  # fmt: skip
        assert json.loads(done.stdout)["finishing"]["queued"] is True, done.stderr
        daemon = serve()
    finally:
        os.close(handed.fd)
    assert lock.wait(float(LONG)) is None
    events = [e["event"] for e in _log(lock)]
    assert events[0] == "finish_queued" and events[-1] == "finish_done", events
    assert "finish_failed" not in events
    daemon.wait_for(
        lambda: _older({"results": daemon.search(QUESTION)}).get("superseded_by") == f"{NEWER}#L4",
        timeout=60,
        what="the daemon's own refresh",
    )


def test_the_finish_ends_quietly_when_the_state_folder_is_gone(setup):
    """A state folder removed while the child waited: it ends without making it again."""
    memd, config, lock, _, _ = setup
    _indexed_without_current(config)
    handed = lock.hand_off()
    try:
        pid = json.loads(memd("index", "--json").stdout)["finishing"]["pid"]
        shutil.rmtree(config.state_dir)
    finally:
        os.close(handed.fd)
    deadline = time.monotonic() + float(LONG)
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)
    assert not config.state_dir.exists()


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (an ended one its parent has not reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
