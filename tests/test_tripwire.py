import os
import sys

import pytest

from memd.serve.tripwire import Tripwire

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def test_drain_says_what_changed_up_to_this_instant(tmp_path):
    top, deep = tmp_path / "ws", tmp_path / "ws" / "memory"
    deep.mkdir(parents=True)
    (top / "other").mkdir()
    wire = Tripwire([str(top)], [str(deep)], lambda p: None if p.endswith(".tmp") else p)
    try:
        assert wire.active and wire.drain() == (set(), False)
        (deep / "a.md").write_text("x")  # no waiting: the kernel queued it already
        (deep / "skip.tmp").write_text("x")
        (top / "MEMORY.md").write_text("x")
        (top / "other" / "b.md").write_text("x")  # below a flat folder: not watched
        assert wire.drain() == ({str(deep / "a.md"), str(top / "MEMORY.md")}, False)
        assert wire.drain() == (set(), False)
        (deep / "sub" / "deeper").mkdir(parents=True)  # new folders are watched at once
        changed, _ = wire.drain()
        assert str(deep / "sub") in changed
        (deep / "sub" / "deeper" / "c.md").write_text("x")
        os.rename(deep / "a.md", deep / "sub" / "a.md")
        changed, lost = wire.drain()
        assert not lost
        assert {str(deep / "sub" / "deeper" / "c.md"), str(deep / "a.md")} <= changed
        assert str(deep / "sub" / "a.md") in changed
    finally:
        wire.close()
    assert not wire.active and wire.drain() == (set(), False)
