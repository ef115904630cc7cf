"""Writes that must never escape, corrupt or confuse a workspace (issue 11, S1-S5, F9)."""

from __future__ import annotations

import pytest

from memd.errors import InvalidParams
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
