"""Writes that must never escape, corrupt or confuse a workspace (issue 11, S1-S5, F9)."""

from __future__ import annotations

import os

import pytest

from memd.errors import InvalidParams, PathRefused, WriteError
from memd.methods import call


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
    from memd.writer import Entry

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
    secret.write_text("# Secret\n\n- **editor**: nano\n")
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
    assert (outside / "secret.md").read_text() == "# Secret\n\n- **editor**: nano\n"
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
    assert (ws.root / "notes" / "core.md").read_text() == "# Core\n- **editor**: helix\n"
    assert (ws.root / "notes" / "prefs.md").read_text() == "# prefs\n- **tz**: UTC\n"
    assert rpc(mem, "memory_forget", key="editor")["removed"]
    assert (ws.root / "MEMORY.md").is_symlink()
    assert (ws.root / "notes" / "core.md").read_text() == "# Core\n"


def test_a_named_pipe_at_a_note_path_is_refused_without_hanging(mem, ws):
    (ws.root / "memory").mkdir(exist_ok=True)
    os.mkfifo(ws.root / "memory" / "pipe.md")
    with pytest.raises(WriteError, match="not a regular file"):
        rpc(mem, "memory_store", key="k", content="v", category="pipe")
