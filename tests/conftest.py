from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from memd.config import Config, parse_config
from memd.memory import Memory


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and XDG folders at a temp dir so no test reads or writes the real ones."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("MEMD_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    return home


class Files:
    """A workspace folder on disk with helpers to write notes into it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, rel: str, text: str, dedent: bool = True) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if dedent else text, encoding="utf-8")
        return path

    def write_bytes(self, rel: str, data: bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path


@pytest.fixture
def ws(tmp_path) -> Files:
    return Files(tmp_path / "workspace")


@pytest.fixture
def make_config(tmp_path, ws):
    def make(**raw) -> Config:
        raw.setdefault("workspace", str(ws.root))
        raw.setdefault("state_dir", str(tmp_path / "state"))
        return parse_config(raw, env={"HOME": str(tmp_path)})

    return make


@pytest.fixture
def config(make_config) -> Config:
    return make_config()


@pytest.fixture
def memory(config):
    m = Memory(config)
    yield m
    m.close()
