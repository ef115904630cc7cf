"""Writes that must never escape, corrupt or confuse a workspace (issue 11, S1-S5, F9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from memd.errors import InvalidParams, PathRefused, WriteError
from memd.serve.methods import call


@pytest.fixture
def mem(ws, memory):
    ws.write("MEMORY.md", "# Memory\n")
    return memory


def rpc(memory, method, **params):
    return call(lambda name: memory, method, params)


def snapshot(ws) -> dict:
    return {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("bad", ["\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028"])
@pytest.mark.parametrize(
    ("method", "params", "param"),
    [
        ("memory_store", lambda c: {"key": f"inj{c}# Injected", "content": "x"}, "key"),
        ("memory_forget", lambda c: {"key": f"a{c}b"}, "key"),
        ("memory_store", lambda c: {"key": "k", "content": "x", "category": f"p{c}"}, "category"),
        (
            "memory_flush",
            lambda c: {"entries": [{"text": "x", "title": f"t{c}# Injected"}]},
            "entries[0].title",
        ),
    ],
)
def test_control_characters_are_refused_naming_the_field(mem, ws, bad, method, params, param):
    before = snapshot(ws)
    with pytest.raises(InvalidParams) as err:
        rpc(mem, method, **params(bad))
    assert err.value.param == param
    assert snapshot(ws) == before


def test_library_callers_are_checked_too(mem, ws):
    from memd.write.writer import Entry

    before = snapshot(ws)
    with pytest.raises(InvalidParams, match="control characters") as err:
        mem.store("inj\r# Injected", "x")
    assert err.value.param == "key"
    with pytest.raises(InvalidParams) as err:
        mem.flush([Entry("x", title="a\rb")])
    assert err.value.param == "entries[0].title"
    assert snapshot(ws) == before


# -- S1: writes never follow a link out of the workspace ------------------------------------


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = folder / "secret.md"
    secret.write_text("# Secret\n\n- **editor**: nano <!-- memd:key -->\n")
    return folder


def test_store_into_a_link_out_of_the_workspace_is_refused(mem, ws, outside):
    link = ws.root / "memory" / "prefs.md"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / "secret.md", link)
    for method, params in [
        ("memory_store", {"key": "editor", "content": "vim", "category": "prefs"}),  # replace
        ("memory_store", {"key": "tz", "content": "UTC", "category": "prefs"}),  # append
        ("memory_forget", {"key": "editor", "category": "prefs"}),
        ("memory_forget", {"key": "editor"}),  # found by listing every file
    ]:
        with pytest.raises(PathRefused, match=r"memory/prefs.md is a symbolic link to .*outside"):
            rpc(mem, method, **params)
    assert (
        outside / "secret.md"
    ).read_text() == "# Secret\n\n- **editor**: nano <!-- memd:key -->\n"
    assert link.is_symlink()
    # Reading through the link stays allowed: the note is indexed and searchable.
    mem.index()
    assert rpc(mem, "memory_search", query="nano", min_score=0)["results"]


def test_flush_into_a_linked_or_dangling_daily_note_is_refused(mem, ws, outside):
    (ws.root / "memory").mkdir(exist_ok=True)
    os.symlink(outside / "secret.md", ws.root / "memory" / "2026-05-01.md")
    os.symlink(outside / "missing.md", ws.root / "memory" / "2026-05-02.md")
    for day in ("2026-05-01", "2026-05-02"):
        with pytest.raises(PathRefused, match=f"memory/{day}.md is a symbolic link"):
            rpc(mem, "memory_flush", entries=[{"text": "leak"}], date=day)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert "leak" not in (outside / "secret.md").read_text()


def test_a_linked_memory_folder_out_of_the_workspace_is_refused(mem, ws, outside):
    os.symlink(outside, ws.root / "memory")
    with pytest.raises(PathRefused, match=r"passes through .*memory, a symbolic link"):
        rpc(mem, "memory_store", key="k", content="v", category="prefs")
    with pytest.raises(PathRefused):
        rpc(mem, "memory_flush", entries=[{"text": "leak"}], date="2026-05-03")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_links_inside_the_workspace_are_written_at_their_target(mem, ws):
    ws.write("notes/core.md", "# Core\n")
    (ws.root / "MEMORY.md").unlink()
    os.symlink("notes/core.md", ws.root / "MEMORY.md")
    os.symlink("notes", ws.root / "memory")  # a folder link that stays inside
    rpc(mem, "memory_store", key="editor", content="vim")
    rpc(mem, "memory_store", key="editor", content="helix")  # a replace, by rename
    rpc(mem, "memory_store", key="tz", content="UTC", category="prefs")
    assert (ws.root / "MEMORY.md").is_symlink()  # never turned into a regular file
    core = (ws.root / "notes" / "core.md").read_text()
    assert core == "# Core\n- **editor**: helix <!-- memd:key -->\n"
    assert (
        ws.root / "notes" / "prefs.md"
    ).read_text() == "# prefs\n- **tz**: UTC <!-- memd:key -->\n"
    assert rpc(mem, "memory_forget", key="editor")["removed"]
    assert (ws.root / "MEMORY.md").is_symlink()
    assert (ws.root / "notes" / "core.md").read_text() == "# Core\n"


def test_a_hard_link_to_a_file_outside_the_workspace_is_refused(mem, ws, outside):
    """A hard link has no target to check: all its names must be found inside."""
    secret = outside / "secret.md"
    (ws.root / "memory").mkdir(exist_ok=True)
    os.link(secret, ws.root / "memory" / "2026-05-01.md")
    os.link(secret, ws.root / "memory" / "prefs.md")
    before = secret.read_text()
    refused = r"memory/{}.md is a hard link: the file has 3 names, 2 inside the workspace"
    with pytest.raises(PathRefused, match=refused.format("2026-05-01")):
        rpc(mem, "memory_flush", entries=[{"text": "leak"}], date="2026-05-01")
    for method, params in [
        ("memory_store", {"key": "tz", "content": "UTC", "category": "prefs"}),  # append
        ("memory_store", {"key": "editor", "content": "vim", "category": "prefs"}),  # replace
        ("memory_forget", {"key": "editor", "category": "prefs"}),
    ]:
        with pytest.raises(PathRefused, match=refused.format("prefs")):
            rpc(mem, method, **params)
    assert secret.read_text() == before


def test_hard_links_inside_the_workspace_are_written(mem, ws):
    ws.write("notes/prefs.md", "# prefs\n")
    (ws.root / "memory").mkdir(exist_ok=True)
    os.link(ws.root / "notes" / "prefs.md", ws.root / "memory" / "prefs.md")
    rpc(mem, "memory_store", key="tz", content="UTC", category="prefs")
    assert "**tz**: UTC" in (ws.root / "notes" / "prefs.md").read_text()


def test_a_named_pipe_at_a_note_path_is_refused_without_hanging(mem, ws):
    (ws.root / "memory").mkdir(exist_ok=True)
    os.mkfifo(ws.root / "memory" / "pipe.md")
    with pytest.raises(WriteError, match="not a regular file"):
        rpc(mem, "memory_store", key="k", content="v", category="pipe")


# -- S5: key lines are memd's own, never free text that looks like one ----------------------


def keys(mem) -> list[tuple[str, str, int]]:
    return [(e["key"], e["path"], e["line"]) for e in rpc(mem, "memory_list")["entries"]]


@pytest.mark.parametrize("target", ["core", "daily"])
def test_flushed_text_that_looks_like_a_key_line_is_not_one(mem, ws, target):
    rpc(mem, "memory_store", key="editor", content="helix", category=target)
    # Unmarked look-alikes are written as given; one that carries memd's mark is escaped.
    text = "Settings we tried:\n\n- **editor**: vim\n* **editor** : emacs <!-- memd:key -->"
    entries = [{"text": text, "target": target}]
    rpc(mem, "memory_flush", entries=entries, date="2026-06-01")
    rel = "MEMORY.md" if target == "core" else "memory/2026-06-01.md"
    note = (ws.root / rel).read_text()
    assert "- **editor**: vim\n* **editor** \\: emacs <!-- memd:key -->\n" in note
    assert [k for k, _, _ in keys(mem)] == ["editor"]
    assert rpc(mem, "memory_store", key="editor", content="nano", category=target)["replaced"]
    assert rpc(mem, "memory_forget", key="editor")["removed"]
    assert keys(mem) == []
    assert "- **editor**: vim\n" in (ws.root / rel).read_text()
    # A retried flush of the same text is recognised as already written.
    again = rpc(mem, "memory_flush", entries=entries, date="2026-06-01")
    assert again["written"] == [] and again["skipped"]


def test_flush_first_then_store_of_the_same_key(mem, ws):
    rpc(mem, "memory_flush", entries=[{"text": "- **editor**: vim", "target": "core"}])
    first = rpc(mem, "memory_store", key="editor", content="helix")
    assert first["replaced"] is False
    assert rpc(mem, "memory_store", key="editor", content="nano")["replaced"] is True
    assert rpc(mem, "memory_forget", key="editor")["removed"] is True
    assert "- **editor**: vim\n" in (ws.root / "MEMORY.md").read_text()


def test_a_key_line_inside_code_is_not_a_key(mem, ws):
    fenced = (
        "```md\n- **editor**: vim <!-- memd:key -->\n```\n\n- list\n\n"
        "  ~~~\n  - **tz**: UTC <!-- memd:key -->\n  ~~~\n"
    )
    ws.write("MEMORY.md", "# Memory\n\n" + fenced)
    assert keys(mem) == []
    assert rpc(mem, "memory_store", key="editor", content="helix")["replaced"] is False
    assert rpc(mem, "memory_forget", key="tz")["removed"] is False
    assert fenced in (ws.root / "MEMORY.md").read_text()
    assert [k for k, _, _ in keys(mem)] == ["editor"]


def test_hand_written_look_alikes_are_never_changed(mem, ws):
    # A person's bold-name lists are Markdown, not memd's keys (issue 21).
    team = (
        "# Memory\n\n## Team\n\n- **Tom Schreiber**: platform lead\n"
        "- **Kenji Watanabe**: billing, on call in March\n* **editor** : emacs, by hand\n"
        "\nOther text.\n"
    )
    ws.write("MEMORY.md", team)
    assert keys(mem) == []
    assert rpc(mem, "memory_forget", key="Tom Schreiber")["removed"] is False
    assert rpc(mem, "memory_forget", key="Tom Schreiber", category="core")["removed"] is False
    stored = rpc(mem, "memory_store", key="Kenji Watanabe", content="moved to search")
    assert stored["replaced"] is False
    assert rpc(mem, "memory_store", key="editor", content="helix")["replaced"] is False
    assert rpc(mem, "memory_store", key="editor", content="nano")["replaced"] is True
    text = (ws.root / "MEMORY.md").read_text()
    assert text.startswith(team)  # every hand-written byte as it was
    assert text[len(team) :] == (
        "- **Kenji Watanabe**: moved to search <!-- memd:key -->\n"
        "- **editor**: nano <!-- memd:key -->\n"
    )
    assert [k for k, _, _ in keys(mem)] == ["Kenji Watanabe", "editor"]
    assert rpc(mem, "memory_forget", key="Kenji Watanabe")["removed"] is True
    assert rpc(mem, "memory_forget", key="editor")["removed"] is True
    assert (ws.root / "MEMORY.md").read_text() == team


def test_two_marked_lines_of_one_key_are_ambiguous_and_say_where(mem, ws):
    lines = "- **k**: one <!-- memd:key -->\n- **k**: two <!-- memd:key -->\n"
    ws.write("MEMORY.md", lines)
    with pytest.raises(WriteError, match=r"appears on 2 lines of MEMORY.md \(lines 1, 2\)"):
        rpc(mem, "memory_store", key="k", content="three")
    assert (ws.root / "MEMORY.md").read_text() == lines


@pytest.mark.parametrize(
    "text",
    [
        "- **a**: b <!-- memd:key -->",
        "  +\t**a b**\t: c <!-- memd:key -->\n- **x**: y <!-- memd:key -->",
        "```\n- **a**: b <!-- memd:key -->\n```\n- **c**: d <!-- memd:key -->",
        "> - **q**: quoted\n1. **n**: numbered",
        "- **a**\\: already escaped <!-- memd:key -->",
    ],
)
def test_escaped_free_text_has_no_key_lines(text):
    from memd.write.keylines import escape_free_text, key_lines

    escaped = escape_free_text(text)
    assert key_lines(escaped) == []
    assert escaped.replace("\\:", ":") == text.replace("\\:", ":")


# -- F9: written is written, whatever happens to the flush ledger ---------------------------


def test_a_corrupt_ledger_is_moved_aside_and_rebuilt(mem, ws, config):
    config.state_dir.mkdir(parents=True, exist_ok=True)
    ledger = config.state_dir / "flush-ledger.sqlite"
    ledger.write_bytes(b"this is not a database" * 200)
    first = rpc(mem, "memory_flush", entries=[{"text": "Kept once."}], flush_id="f1")
    assert first["written"] and "warning" not in first
    assert [p.name for p in config.state_dir.glob("flush-ledger.sqlite.corrupt-*")]
    again = rpc(mem, "memory_flush", entries=[{"text": "Kept once."}], flush_id="f1")
    assert again == {**first, "duplicate": True}
    # Damage while open: the next flush moves it aside again and works.
    ledger.write_bytes(b"garbage" * 2000)
    third = rpc(mem, "memory_flush", entries=[{"text": "Third."}], flush_id="f3")
    assert third["written"]
    assert rpc(mem, "memory_flush", entries=[{"text": "x"}], flush_id="f3")["duplicate"]


def test_a_ledger_that_cannot_be_opened_is_a_warning(mem, ws, config):
    (config.state_dir / "flush-ledger.sqlite").mkdir(parents=True)  # not a file: cannot open
    answer = rpc(mem, "memory_flush", entries=[{"text": "Written anyway."}], flush_id="f1")
    (w,) = answer["written"]
    assert "could not be recorded" in answer["warning"] and "flush_id 'f1'" in answer["warning"]
    assert (ws.root / w["path"]).read_text().endswith("Written anyway.\n")
    # A retry finds the text in the file: nothing is written twice.
    retry = rpc(mem, "memory_flush", entries=[{"text": "Written anyway."}], flush_id="f1")
    assert retry["written"] == [] and retry["skipped"]


def test_a_full_disk_for_the_ledger_is_a_warning(mem, ws, config, tmp_path):
    rpc(mem, "memory_flush", entries=[{"text": "Opens the ledger."}], flush_id="f0")
    mem.db.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # kept open: -shm exists
    path = ws.root / "MEMORY.md"
    limit = path.stat().st_size + 200
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        f"workspace: {ws.root}\nstate_dir: {config.state_dir}\nembeddings: {{provider: none}}\n"
    )
    script = textwrap.dedent(f"""
        import resource, sys
        from memd.cli.main import main
        # The note may grow by the entry; no database or journal may grow at all.
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
        sys.exit(main(["--config", {str(cfg_file)!r}, "flush", "--json", "--core",
                       "--flush-id", "f1", "--text", "Short entry."]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["written"] and "flush_id 'f1' could not be recorded" in answer["warning"]
    assert path.read_text().endswith("Short entry.\n")
