"""The state folder is private whatever the umask; folders memd did not make keep their
modes (issue 11, S2 and S3)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memd.memory import Memory


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_state_folder_and_files_are_private_under_umask_022(serve, ws, tmp_path, umask_022):
    ws.write("MEMORY.md", "# Memory\n\n- We use Postgres 16.\n")
    d = serve()
    d.call("memory_flush", entries=[{"text": "Capybaras are calm."}], flush_id="f1",
           date="2026-03-03")  # fmt: skip
    d.call("memory_store", key="editor", content="vim")
    assert d.search("capybaras")
    state = tmp_path / "state"
    assert mode(state) == 0o700
    files = sorted(p.name for p in state.iterdir())
    assert {"index-default.sqlite", "index-default.sqlite-wal", "index-default.sqlite-shm",
            "flush-ledger.sqlite", "memd.lock"} <= set(files)  # fmt: skip
    assert {name: mode(state / name) for name in files} == {name: 0o600 for name in files}
    # The user's notes keep what the user's umask gives.
    assert mode(ws.root / "memory" / "2026-03-03.md") == 0o644


def test_an_old_readable_state_folder_is_tightened(config, ws):
    ws.write("MEMORY.md", "# Memory\n\n- We use Postgres 16.\n")
    with Memory(config) as m:
        m.index()
    state = config.state_dir
    os.chmod(state, 0o755)
    for p in state.iterdir():
        os.chmod(p, 0o644)
    with Memory(config) as m:
        m.index()
    assert mode(state) == 0o700
    assert all(mode(p) == 0o600 for p in state.iterdir()), {
        p.name: oct(mode(p)) for p in state.iterdir()
    }


def test_a_shared_socket_folder_keeps_its_mode(serve, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    made = tmp_path / "made" / "deeper"
    d = serve(f"socket: {shared / 'memd.sock'}\n")
    assert d.call("health")["ok"]
    assert mode(shared) == 0o1777  # not memd's to change
    assert mode(d.socket) == 0o600
    d.stop()
    d2 = serve(f"socket: {made / 'memd.sock'}\n")
    assert d2.call("health")["ok"]
    assert mode(made) == 0o700 and mode(made.parent) == 0o700  # memd made both
