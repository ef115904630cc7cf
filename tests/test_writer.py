import os
import re
import subprocess
import sys
import textwrap

import pytest

from memd.errors import InvalidParams, WriteError
from memd.memory import Memory
from memd.search.request import SearchRequest
from memd.serve.methods import call
from memd.write.writer import replace_text


@pytest.fixture
def mem(ws, memory):
    ws.write("MEMORY.md", "# Memory\n\nA person wrote this.")  # no final newline
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\nEarlier notes.\n")
    return memory


def rpc(memory, method, **params):
    return call(lambda name: memory, method, params)


def test_flush_appends_under_a_timed_heading_and_is_searchable_at_once(mem, ws):
    answer = rpc(
        mem,
        "memory_flush",
        entries=[{"text": "We picked Postgres 16.", "title": "DB"}],
        date="2026-01-20",
    )
    (w,) = answer["written"]
    text = (ws.root / "memory" / "2026-01-20.md").read_text()
    assert text.startswith("# 2026-01-20\n\nEarlier notes.\n")  # nothing before was touched
    lines = text.split("\n")
    assert re.fullmatch(r"## \d\d:\d\d — DB", lines[w["start_line"] - 1])
    assert lines[w["end_line"] - 1] == "We picked Postgres 16."
    hits = mem.search(SearchRequest("postgres")).as_dict()["results"]
    assert hits[0]["path"] == "memory/2026-01-20.md"
    assert hits[0]["start_line"] <= w["start_line"] <= hits[0]["end_line"]


def test_new_daily_file_gets_a_date_header(mem, ws):
    rpc(mem, "memory_flush", entries=[{"text": "Fresh day."}], date="2026-03-01")
    text = (ws.root / "memory" / "2026-03-01.md").read_text()
    assert text.startswith("# 2026-03-01\n\n## ") and text.endswith("\n\nFresh day.\n")


def test_core_target_and_missing_final_newline(mem, ws):
    before = (ws.root / "MEMORY.md").read_bytes()
    rpc(mem, "memory_flush", entries=[{"text": "Dana prefers metric units.", "target": "core"}])
    after = (ws.root / "MEMORY.md").read_bytes()
    assert after.startswith(before + b"\n")  # a newline first, then the entry
    assert after.endswith(b"Dana prefers metric units.\n")


def test_a_core_entry_heading_carries_the_date(mem, ws, config):
    """MEMORY.md's name has no date: its heading does (a daily note's keeps HH:MM)."""
    answer = rpc(
        mem, "memory_flush", entries=[{"text": "Use UTC.", "title": "Time", "target": "core"}]
    )
    line = (ws.root / "MEMORY.md").read_text().split("\n")[answer["written"][0]["start_line"] - 1]
    today = config.flush.now().date().isoformat()
    assert re.fullmatch(rf"## {today} \d\d:\d\d — Time", line), line


def test_text_already_in_the_file_is_skipped(mem, ws):
    answer = rpc(mem, "memory_flush", entries=[{"text": "Earlier   notes."}], date="2026-01-20")
    assert answer["written"] == []
    assert answer["skipped"] == [
        {"entry": 0, "path": "memory/2026-01-20.md", "reason": "already in the file"}
    ]


def test_flush_id_is_idempotent_across_restarts(mem, ws, config):
    first = rpc(mem, "memory_flush", entries=[{"text": "Only once."}], flush_id="abc")
    path = ws.root / first["written"][0]["path"]
    content = path.read_bytes()
    mem.close()
    with Memory(config) as again:  # a new process would see the same ledger
        repeat = rpc(again, "memory_flush", entries=[{"text": "Different text."}], flush_id="abc")
    assert repeat == {**first, "duplicate": True}
    assert path.read_bytes() == content


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"entries": []}, "entries"),
        ({}, "entries"),
        ({"entries": [{"text": "  "}]}, "entries[0].text"),
        ({"entries": [{"text": "x", "target": "../outside"}]}, "entries[0].target"),
        ({"entries": [{"text": "x", "title": "two\nlines"}]}, "entries[0].title"),
        ({"entries": [{"text": "x", "path": "/etc/x.md"}]}, "entries[0].path"),
        ({"entries": [{"text": "x"}], "date": "yesterday"}, "date"),
        ({"entries": [{"text": "x"}], "date": "2026-02-30"}, "date"),
        ({"entries": [{"text": "x" * (65 * 1024)}]}, "text"),
        ({"transcript": "user: hi"}, "transcript"),
    ],
)
def test_bad_flushes_are_refused_and_write_nothing(mem, ws, params, param):
    before = {p: p.read_bytes() for p in ws.root.rglob("*.md")}
    with pytest.raises(InvalidParams) as err:
        rpc(mem, "memory_flush", **params)
    assert err.value.param == param
    assert {p: p.read_bytes() for p in ws.root.rglob("*.md")} == before


def test_a_path_like_title_is_only_heading_text(mem, ws):
    answer = rpc(
        mem, "memory_flush", entries=[{"text": "t", "title": "../../etc/passwd"}], date="2026-01-20"
    )
    assert answer["written"][0]["path"] == "memory/2026-01-20.md"
    assert "## " in (ws.root / "memory" / "2026-01-20.md").read_text()
    assert not (ws.root.parent / "etc").exists()


def test_store_replaces_only_its_own_line(mem, ws):
    path = ws.root / "MEMORY.md"
    first = rpc(mem, "memory_store", key="editor", content="vim")
    assert first["replaced"] is False
    original = path.read_text()
    second = rpc(mem, "memory_store", key="editor", content="helix\nwith plugins")
    assert second["replaced"] is True and second["start_line"] == first["start_line"]
    assert path.read_text() == original.replace(
        "- **editor**: vim", "- **editor**: helix with plugins"
    )


def test_a_hand_edited_key_line_is_still_found(mem, ws):
    # Respaced and given another bullet in an editor: still memd's while it keeps the mark.
    ws.write(
        "MEMORY.md", "# Memory\n\n*   **editor** :  emacs, by hand <!-- memd:key -->\nOther.\n"
    )
    answer = rpc(mem, "memory_store", key="editor", content="vim")
    assert answer["replaced"] is True
    assert (ws.root / "MEMORY.md").read_text() == (
        "# Memory\n\n- **editor**: vim <!-- memd:key -->\nOther.\n"
    )


def test_forget_and_list(mem, ws):
    rpc(mem, "memory_store", key="editor", content="vim")
    rpc(mem, "memory_store", key="tz", content="Europe/Berlin", category="prefs")
    rpc(mem, "memory_store", key="mood", content="calm", category="daily")
    listed = {(e["key"], e["category"]) for e in rpc(mem, "memory_list")["entries"]}
    assert {("editor", "core"), ("tz", "prefs"), ("mood", "daily")} <= listed
    assert [e["key"] for e in rpc(mem, "memory_list", category="prefs")["entries"]] == ["tz"]
    assert rpc(mem, "memory_list")["count"] == len(listed)
    before = (ws.root / "MEMORY.md").read_text()
    assert rpc(mem, "memory_forget", key="editor") == {"removed": True, "paths": ["MEMORY.md"]}
    assert (ws.root / "MEMORY.md").read_text() == before.replace(
        "- **editor**: vim <!-- memd:key -->\n", ""
    )
    assert rpc(mem, "memory_forget", key="editor")["removed"] is False
    assert (
        mem.search(SearchRequest("Europe Berlin")).as_dict()["results"][0]["path"]
        == "memory/prefs.md"
    )


def test_bad_store_params(mem):
    for params, param in [
        ({"content": "x"}, "key"),
        ({"key": "a**b", "content": "x"}, "key"),
        ({"key": "k"}, "content"),
    ]:
        with pytest.raises(InvalidParams) as err:
            rpc(mem, "memory_store", **params)
        assert err.value.param == param
    with pytest.raises(InvalidParams, match="category"):
        rpc(mem, "memory_store", key="k", content="x", category="../../x")


def test_non_utf8_file_is_never_rewritten(mem, ws):
    ws.write_bytes("memory/latin.md", "- **k**: caf\xe9\n".encode("latin-1"))
    with pytest.raises(WriteError, match="not valid UTF-8"):
        rpc(mem, "memory_store", key="k", content="x", category="latin")
    assert (ws.root / "memory" / "latin.md").read_bytes() == "- **k**: caf\xe9\n".encode("latin-1")


def test_replace_refuses_when_the_file_changed(tmp_path):
    path = tmp_path / "f.md"
    path.write_text("old\n")
    fd = os.open(path, os.O_RDWR)
    try:
        with pytest.raises(WriteError, match="changed while memd"):
            replace_text(fd, path, b"something else\n", b"new\n")
    finally:
        os.close(fd)
    assert path.read_text() == "old\n"


def test_flush_prompt(mem):
    prompt = rpc(mem, "memory_flush_prompt", date="2026-02-02")
    assert prompt["target"] == "memory/2026-02-02.md"
    assert "2026-02-02" in prompt["user"] and "memory/2026-02-02.md" in prompt["user"]
    assert "decisions" in prompt["system"] and "reply with nothing" in prompt["system"]


def test_many_writers_never_interleave(mem, ws, tmp_path, config):
    """Eight processes flushing to one note at once: every entry lands whole."""
    script = textwrap.dedent(f"""
        import sys
        from memd.configfile import parse_config
        from memd.memory import Memory
        from memd.write.writer import Entry
        cfg = parse_config({{"workspace": {str(ws.root)!r}, "state_dir": {str(config.state_dir)!r},
                             "embeddings": {{"provider": "none"}}}})
        with Memory(cfg) as m:
            for i in range(15):
                m.flush([Entry("body " + sys.argv[1] + "-" + str(i) + " " + "x" * 3000,
                               title="t" + sys.argv[1] + "-" + str(i))], date="2026-04-01")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(8)]
    assert all(p.wait(120) == 0 for p in procs)
    text = (ws.root / "memory" / "2026-04-01.md").read_text()
    blocks = re.findall(r"## \d\d:\d\d — t(\d+-\d+)\n\nbody (\d+-\d+) x{3000}\n", text)
    assert sorted(a for a, _ in blocks) == sorted(f"{p}-{i}" for p in range(8) for i in range(15))
    assert all(a == b for a, b in blocks), [(a, b) for a, b in blocks if a != b][:3]


def test_full_disk_leaves_the_file_as_it_was(mem, ws, config, tmp_path):
    """When the write cannot complete (file size limit standing in for a full disk), the
    note is byte-for-byte as before and the error says so."""
    path = ws.root / "memory" / "2026-01-20.md"
    before = path.read_bytes()
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        f"workspace: {ws.root}\nstate_dir: {config.state_dir}\nembeddings: {{provider: none}}\n"
    )
    script = textwrap.dedent(f"""
        import resource, sys
        from memd.cli.main import main
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 10}, resource.RLIM_INFINITY))
        sys.exit(main(["--config", {str(cfg_file)!r}, "flush", "--date", "2026-01-20",
                       "--text", "A long entry " * 50]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "disk is full" in out.stderr and "unchanged" in out.stderr
    assert path.read_bytes() == before


@pytest.fixture
def llm_memory(make_config, embed_server, ws):
    ws.write("MEMORY.md", "# Memory\n")
    cfg = make_config(
        flush={
            "llm": {"model": "chat-1", "base_url": embed_server.url, "retries": 0, "timeout_s": 2}
        }
    )
    with Memory(cfg) as m:
        yield m


def test_transcript_extraction_writes_what_the_model_keeps(llm_memory, embed_server, ws):
    embed_server.chat_reply = "- We chose Postgres 16 because of JSONB.\n- Sam owns the migration."
    transcript = [
        {"role": "user", "content": "Let's go with Postgres."},
        {"role": "assistant", "content": "Noted: Postgres 16."},
    ]
    answer = rpc(llm_memory, "memory_flush", transcript=transcript, date="2026-07-01")
    (w,) = answer["written"]
    text = (ws.root / w["path"]).read_text()
    assert "— memory flush\n\n- We chose Postgres 16 because of JSONB.\n- Sam owns" in text
    sent = embed_server.chat_messages[0]
    assert sent[0]["role"] == "system" and "decisions" in sent[0]["content"]
    assert "Let's go with Postgres." in sent[1]["content"]
    assert "2026-07-01" in sent[2]["content"]
    assert llm_memory.search(SearchRequest("jsonb")).as_dict()["results"]


def test_transcript_with_nothing_worth_keeping_writes_nothing(llm_memory, embed_server, ws):
    embed_server.chat_reply = "Nothing."
    before = {p: p.read_bytes() for p in ws.root.rglob("*.md")}
    answer = rpc(llm_memory, "memory_flush", transcript="user: hi\nassistant: hello!")
    assert answer["written"] == [] and before == {p: p.read_bytes() for p in ws.root.rglob("*.md")}


def test_llm_failure_writes_nothing(llm_memory, embed_server, ws):
    from memd.errors import BackendUnavailable

    embed_server.failures = [(500, {})]
    before = {p: p.read_bytes() for p in ws.root.rglob("*.md")}
    with pytest.raises(BackendUnavailable, match="nothing was written"):
        rpc(
            llm_memory,
            "memory_flush",
            transcript="user: keep this",
            entries=[{"text": "an explicit entry"}],
        )
    assert before == {p: p.read_bytes() for p in ws.root.rglob("*.md")}


def test_bad_transcripts(llm_memory):
    for value in ([{"role": "user"}], "   ", 5):
        with pytest.raises(InvalidParams) as err:
            rpc(llm_memory, "memory_flush", transcript=value)
        assert err.value.param == "transcript"


def test_written_but_not_yet_indexed_is_a_warning_not_an_error(mem, ws, config, tmp_path):
    """If the index cannot take the new text, the entry is still written and reported so,
    with a warning; a retry would find it already there."""
    path = ws.root / "memory" / "2026-01-20.md"
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        f"workspace: {ws.root}\nstate_dir: {config.state_dir}\nembeddings: {{provider: none}}\n"
    )
    mem.db.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    script = textwrap.dedent(f"""
        import resource, sys
        from memd.cli.main import main
        # Notes may grow a little; the index's write-ahead log may not.
        limit = {path.stat().st_size + 2000}
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        sys.exit(main(["--config", {str(cfg_file)!r}, "flush", "--json", "--date", "2026-01-20",
                       "--text", "Short entry."]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    answer = __import__("json").loads(out.stdout)
    assert answer["written"] and "not searchable until the index catches up" in answer["warning"]
    assert path.read_text().endswith("Short entry.\n")


def test_a_target_that_cannot_be_written_is_a_clear_error(mem, ws):
    (ws.root / "memory" / "2026-08-08.md").mkdir()  # the day's note path is a folder
    before = {p: p.read_bytes() for p in ws.root.rglob("*.md") if p.is_file()}
    with pytest.raises(WriteError, match=r"cannot open .*2026-08-08.md for writing"):
        rpc(mem, "memory_flush", entries=[{"text": "x"}], date="2026-08-08")
    assert before == {p: p.read_bytes() for p in ws.root.rglob("*.md") if p.is_file()}


def test_missing_workspace_is_a_clear_error_for_writes(mem, ws):
    import shutil

    from memd.errors import WorkspaceMissing

    shutil.rmtree(ws.root)
    with pytest.raises(WorkspaceMissing, match="does not exist"):
        rpc(mem, "memory_flush", entries=[{"text": "x"}])
    assert not ws.root.exists()  # never created behind the user's back
