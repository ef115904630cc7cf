"""Where the daemon for a config file listens, remembered between commands.

Building a ``Config`` (YAML, the dataclasses, their checks) took most of a command answered
by a daemon. After one full load, what a command needs to reach the daemon (the socket, and
the state folder and workspaces it checks the daemon's ``health`` against) is kept in a
small private file per config file, keyed by that file's path, size, mtime and inode and by
the environment it was read in; every command checks the key, and an edit of the file (or
another ``$HOME``) misses it, so the next command loads the config again.

The entry stays after its key no longer matches: it is the last good config, with which
``memd status`` still reaches the daemon while the file is broken.

Beside it, the whole ``Config`` is kept (pickled, under the same key and the code of
``memd.config`` that made it): a read with no daemon to ask then works on the index without
reading YAML again (``config_of``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memd.configpath import config_file, home

if TYPE_CHECKING:
    from memd.config import Config

# What a config's paths depend on besides the file: the defaults, and ``~``.
_ENV = ("HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
_ENV_REF = re.compile(rb"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_VERSION = 2


class CachedWorkspace(NamedTuple):
    name: str
    path: Path


class Target(NamedTuple):
    """What a command needs to reach and check the daemon of a config (as ``Config`` has
    it: ``memd.client.mismatch`` reads these)."""

    socket: Path
    state_dir: Path
    workspaces: tuple[CachedWorkspace, ...]
    source: Path | None  # the config file, None for the built-in defaults
    vectors: str | None = None  # where its vectors come from (memd.embed.providers)

    def workspace_path(self, name: str | None) -> Path | None:
        """The folder of workspace ``name`` (the first when None), None if unknown."""
        for ws in self.workspaces:
            if name is None or ws.name == name:
                return ws.path
        return None


def cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/memd``, else ``~/.cache/memd``."""
    return Path(env.get("XDG_CACHE_HOME") or f"{home(env)}/.cache") / "memd"


def lookup(config_arg: str | None, env: Mapping[str, str]) -> Target | None:
    """The remembered target of the config ``--config`` (or the default) names, if the
    file and the environment are as they were when it was remembered; else None."""
    file = _file(config_arg, env)
    entry = _read(file, env)
    if entry is None or entry.get("key") != _key(file, env, entry.get("refs", ())):
        return None
    return _target(entry)


def last_good(config_arg: str | None, env: Mapping[str, str]) -> Target | None:
    """The target of the config last loaded from that file, whatever the file is now."""
    file = _file(config_arg, env)
    entry = _read(file, env)
    return None if entry is None else _target(entry)


def remember(config: Config, config_arg: str | Path | None, env: Mapping[str, str]) -> None:
    """Keep what reaching ``config``'s daemon needs, for the next commands; never raises
    (a read-only home only costs the next command a config load)."""
    import pickle

    from memd.embed.providers import vector_space  # the config is loaded: so is most

    try:
        file = _file(config_arg, env)
        refs = _refs(file)
        entry = {
            "version": _VERSION,
            "config": str(file),
            "refs": refs,
            "key": _key(file, env, refs),
            "socket": str(config.socket),
            "state_dir": str(config.state_dir),
            "workspaces": [[ws.name, str(ws.path)] for ws in config.workspaces],
            "source": None if config.source is None else str(config.source),
            "vectors": vector_space(config.embeddings),
        }
        path = _entry_path(file, env)
        if _load(path) != entry:
            _write(path, json.dumps(entry).encode())
        kept = pickle.dumps((entry["key"], _code(), config))
        if _private(path.with_suffix(".pickle")) != kept:
            _write(path.with_suffix(".pickle"), kept)
    except (OSError, ValueError, TypeError, AttributeError, RecursionError, pickle.PicklingError):
        pass  # pickle's errors for an object it cannot take: the next command loads the file


def config_of(config_arg: str | None, env: Mapping[str, str]) -> Config | None:
    """The ``Config`` last loaded from the file ``--config`` (or the default) names, if the
    file, the environment and memd's config code are as they were then; else None."""
    file = _file(config_arg, env)
    entry = _read(file, env)
    if entry is None or entry.get("key") != _key(file, env, entry.get("refs", ())):
        return None
    raw = _private(_entry_path(file, env).with_suffix(".pickle"))
    if raw is None:
        return None
    import pickle

    from memd.config import Config

    try:
        key, code, config = pickle.loads(raw)
    except (pickle.UnpicklingError, ImportError, AttributeError, EOFError, TypeError,
            ValueError, IndexError):  # fmt: skip
        return None  # another memd's classes, or a damaged file: load the config as usual
    ok = key == entry["key"] and code == _code() and isinstance(config, Config)
    return config if ok else None


def _code() -> list:
    """What the pickled config depends on besides its key: the code of its classes."""
    from memd import config

    st = os.stat(config.__file__)
    return [config.__file__, st.st_size, st.st_mtime_ns]


def _private(path: Path) -> bytes | None:
    """The file's bytes if this user owns it and no one else may write it (a pickle is
    code: one another user could have written is not read)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return None
            return f.read()
    except OSError:
        return None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # readers see the old file or the new, never half of one


def _file(config_arg: str | Path | None, env: Mapping[str, str]) -> Path:
    """The config file, absolute: ``--config c.yaml`` in two folders is two files."""
    return Path(os.path.abspath(config_file(config_arg, env)[0]))


def _key(file: Path, env: Mapping[str, str], refs: Any) -> list:
    try:
        st = os.stat(file)
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    except OSError:
        stamp = None  # no file: the built-in defaults, which depend only on the environment
    names = [*_ENV, *(r for r in refs if isinstance(r, str))]
    return [str(file), stamp, [env.get(name) for name in names]]


def _refs(file: Path) -> list[str]:
    """The ``${VAR}`` names the file uses: their values are part of the key."""
    try:
        raw = file.read_bytes()
    except OSError:
        return []
    return sorted({m.decode() for m in _ENV_REF.findall(raw)})


def _entry_path(file: Path, env: Mapping[str, str]) -> Path:
    # FNV-1a, not hashlib: loading hashlib (OpenSSL) took 2 ms of a command a daemon
    # answers. Two paths with one name only miss the cache: an entry names its config file.
    digest = 0xCBF29CE484222325
    for byte in str(file).encode():
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return cache_dir(env) / f"daemon-{digest:016x}.json"


def _read(file: Path, env: Mapping[str, str]) -> dict | None:
    entry = _load(_entry_path(file, env))
    if entry is None or entry.get("version") != _VERSION or entry.get("config") != str(file):
        return None
    return entry


def _load(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) else None


def _target(entry: dict) -> Target | None:
    try:
        return Target(
            socket=Path(entry["socket"]),
            state_dir=Path(entry["state_dir"]),
            workspaces=tuple(CachedWorkspace(n, Path(p)) for n, p in entry["workspaces"]),
            source=None if entry["source"] is None else Path(entry["source"]),
            vectors=entry["vectors"],
        )
    except (KeyError, TypeError, ValueError):
        return None
