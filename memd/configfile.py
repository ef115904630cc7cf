"""Reading the config: where the file is, YAML, ``${VAR}`` expansion, and validation into
a ``Config``. Every error names the key and the file it came from.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from memd.config import (
    DEFAULT_WORKSPACE,
    DEFAULT_WORKSPACE_NAME,
    SESSION_FORMATS,
    SESSION_PATHS,
    Chunking,
    Config,
    Embeddings,
    ExtraPath,
    Flush,
    Log,
    Rerank,
    Review,
    Search,
    Server,
    SessionSource,
    Team,
    Ui,
    Watch,
    WorkspaceConfig,
)
from memd.configpath import config_file, expand_home, home
from memd.configpath import default_config_path as default_config_path  # where it was
from memd.errors import ConfigError

# Top-level keys that are not sections, each with its one-line meaning (docs/gen_reference.py).
_TOP_LEVEL = {
    "workspace": "the memory folder: MEMORY.md (or memory.md) and memory/**/*.md",
    "workspaces": "several workspaces by name, each with its own index (the first is the default)",
    "vault": "read the workspace folder as a vault: every note, as extra_paths are read "
    "(default: when it holds .obsidian/, or Markdown but no MEMORY.md and no memory/)",
    "extra_paths": "more folders or single .md files to index, e.g. an Obsidian vault",
    "exclude": "gitignore-style globs of files and folders to skip, relative to each root",
    "sessions": "agent session transcripts indexed read-only beside the notes",
    "state_dir": "where the indexes, the lock and the flush ledger live",
    "socket": "the daemon's Unix socket ($XDG_RUNTIME_DIR/memd/memd.sock when that is set)",
}
_SECTIONS: dict[str, type] = {
    "chunking": Chunking,
    "watch": Watch,
    "server": Server,
    "embeddings": Embeddings,
    "search": Search,
    "rerank": Rerank,
    "flush": Flush,
    "log": Log,
    "team": Team,
    "review": Review,
    "ui": Ui,
}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def default_state_dir(env: Mapping[str, str]) -> Path:
    """Where memd keeps its databases: ``$XDG_STATE_HOME/memd``, else ``~/.local/state/memd``."""
    base = env.get("XDG_STATE_HOME") or f"{home(env)}/.local/state"
    return expand_home(base, env) / "memd"


def default_socket(env: Mapping[str, str], state_dir: Path) -> Path:
    """``$XDG_RUNTIME_DIR/memd/memd.sock`` when that is set, else ``memd.sock`` in the
    state folder (``~/.local/state/memd/memd.sock`` by default)."""
    runtime = env.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "memd" / "memd.sock" if runtime else state_dir / "memd.sock"


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load the config from ``path``, ``$MEMD_CONFIG`` or the default file, else defaults.

    An explicit ``path`` that does not exist is an error; a missing default file is not.
    """
    env = os.environ if env is None else env
    file, explicit = config_file(path, env)
    if not file.exists():
        if explicit:
            raise ConfigError(f"config file {file} does not exist")
        return parse_config({}, env=env, source=None)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {file}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {file} is not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {file} must be a mapping of keys to values")
    return parse_config(raw, env=env, source=file.resolve())


def parse_config(
    raw: Mapping[str, Any], env: Mapping[str, str] | None = None, source: Path | None = None
) -> Config:
    """Build a validated ``Config`` from a mapping as read from YAML."""
    env = os.environ if env is None else env
    ctx = _Context(env=env, source=source)
    for key in raw:
        if key not in _TOP_LEVEL and key not in _SECTIONS:
            ctx.unknown(str(key), [*_TOP_LEVEL, *_SECTIONS])
    if "workspace" in raw and "workspaces" in raw:
        raise ctx.error("workspaces", "give either 'workspace' or 'workspaces', not both")
    extra = tuple(_extra(ctx, p, f"extra_paths[{i}]") for i, p in _items(ctx, raw, "extra_paths"))
    exclude = tuple(ctx.string(g, f"exclude[{i}]") for i, g in _items(ctx, raw, "exclude"))
    path = ctx.path(raw.get("workspace", DEFAULT_WORKSPACE), "workspace")
    # The one workspace, or what each of several takes unless it says otherwise.
    top = WorkspaceConfig(DEFAULT_WORKSPACE_NAME, path, extra, exclude,
                          _sessions(ctx, raw, "sessions"), _vault(ctx, raw, "vault"))  # fmt: skip
    workspaces = _workspaces(ctx, raw["workspaces"], top) if "workspaces" in raw else (top,)
    state = raw.get("state_dir")
    state_dir = ctx.path(state, "state_dir") if state is not None else default_state_dir(env)
    socket = raw.get("socket")
    sections = {
        name: _build(ctx, cls, raw.get(name) or {}, name) for name, cls in _SECTIONS.items()
    }
    return Config(
        workspaces=workspaces,
        state_dir=state_dir,
        socket=ctx.path(socket, "socket") if socket is not None else default_socket(env, state_dir),
        source=source,
        **sections,
    )


# What other tools call a setting memd names its own way: suggested, never accepted.
_ALSO_CALLED = {
    **dict.fromkeys(("limit", "top_k", "topk", "k", "n", "top", "count", "num_results"),
                    "max_results"),
    **dict.fromkeys(("threshold", "min_similarity", "score_threshold"), "min_score"),
}  # fmt: skip


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The name in ``known`` that ``name`` was most likely meant as, or None: what other
    tools call it (``limit`` for ``max_results``), else the closest spelling. Dashes and
    underscores are alike, so it serves config keys, parameters and ``--options``."""
    by_key = {_plain(k): k for k in known}
    key = _plain(name)
    alias = _ALSO_CALLED.get(key)
    if alias in by_key:
        return by_key[alias]
    import difflib  # only a misspelt name pays for it

    close = difflib.get_close_matches(key, list(by_key), n=1)
    return by_key[close[0]] if close else None


def _plain(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


_SECRET_KEYS = frozenset({"dsn", "api_key", "password"})  # values never echoed


@dataclass
class _Context:
    env: Mapping[str, str]
    source: Path | None

    @property
    def where(self) -> str:
        return f"config file {self.source}" if self.source else "the built-in config"

    def error(self, key: str, problem: str) -> ConfigError:
        # A secret's value never goes into a message: it reaches logs, status and doctor.
        if set(re.split(r"[.\[\]]", key)) & _SECRET_KEYS:
            problem = re.sub(r", got .*$", ", got a value of another type (not shown)", problem)
        return ConfigError(f"{key} in {self.where}: {problem}")

    def unknown(self, key: str, known: list[str]) -> typing.NoReturn:
        close = nearest(key.rsplit(".", 1)[-1], known)
        hint = f" (did you mean '{close}'?)" if close else f" (known: {', '.join(known)})"
        raise ConfigError(f"unknown key '{key}' in {self.where}{hint}")

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {value!r}")
        return self.expand(value, key)

    def expand(self, value: str, key: str) -> str:
        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.env:
                raise self.error(key, f"environment variable {name} is not set")
            return self.env[name]

        return _ENV_REF.sub(sub, value)

    def path(self, value: Any, key: str) -> Path:
        path = expand_home(self.string(value, key), self.env)
        if not path.is_absolute():
            # Relative paths mean relative to the config file, so a config and its
            # workspace can travel together; without a file, to the current folder.
            base = self.source.parent if self.source else Path.cwd()
            path = base / path
        return Path(os.path.normpath(path))


def _items(ctx: _Context, raw: Mapping[str, Any], key: str) -> list[tuple[int, Any]]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.error(key, f"must be a list, got {value!r}")
    return list(enumerate(value))


def _extra(ctx: _Context, value: Any, key: str) -> ExtraPath:
    """An extra root: a path, or ``{path, include, exclude}``."""
    if not isinstance(value, dict):
        return ExtraPath(ctx.path(value, key))
    for sub in value:
        if sub not in ("path", "include", "exclude"):
            ctx.unknown(f"{key}.{sub}", ["path", "include", "exclude"])
    if "path" not in value:
        raise ctx.error(key, "needs a 'path'")
    globs = {
        name: tuple(ctx.string(g, f"{key}.{name}[{i}]") for i, g in _items(ctx, value, name))
        for name in ("include", "exclude")
    }
    return ExtraPath(ctx.path(value["path"], f"{key}.path"), **globs)


def _sessions(ctx: _Context, raw: Mapping[str, Any], key: str) -> tuple[SessionSource, ...]:
    """Session folders: ``{path, format, max_age_days, tools, name}`` each (a host's
    usual folder when ``path`` is left out)."""
    out = []
    for i, item in _items(ctx, raw, key):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise ctx.error(where, "must be a mapping such as {path: ~/.claude/projects, "
                                   "format: claude-code}")  # fmt: skip
        fmt = item.get("format")
        if fmt not in SESSION_FORMATS:
            raise ctx.error(f"{where}.format", f"must be one of {', '.join(SESSION_FORMATS)}, "
                                               f"got {fmt!r}")  # fmt: skip
        if "path" not in item and fmt not in SESSION_PATHS:
            raise ctx.error(where, f"needs a 'path' for format {fmt}")
        path = ctx.path(item.get("path", SESSION_PATHS.get(fmt)), f"{where}.path")
        rest = {k: v for k, v in item.items() if k != "path"}
        built = _build(ctx, _SessionFields, rest, where)
        out.append(SessionSource(path, **dataclasses.asdict(built)))
    return tuple(out)


@dataclass(frozen=True)
class _SessionFields:
    """The keys of a ``sessions`` entry besides ``path`` (checked by ``_build``)."""

    format: Literal["claude-code", "codex", "openclaw", "jsonl"]
    max_age_days: float = 30.0
    tools: Literal["summary", "omit"] = "summary"
    name: str | None = None

    def __post_init__(self) -> None:
        SessionSource(Path("."), **dataclasses.asdict(self))  # the same checks


def _workspaces(ctx: _Context, raw: Any, top: WorkspaceConfig) -> tuple[WorkspaceConfig, ...]:
    """Each named workspace: its folder, and ``top``'s settings unless it gives its own."""
    if not isinstance(raw, dict) or not raw:
        raise ctx.error("workspaces", "must be a non-empty mapping of names to folders")
    result = []
    for name, spec in raw.items():
        key = f"workspaces.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise ctx.error(key, "a workspace name uses letters, digits, '-', '_' and '.'")
        if isinstance(spec, str):
            result.append(dataclasses.replace(top, name=name, path=ctx.path(spec, key)))
            continue
        if not isinstance(spec, dict):
            raise ctx.error(key, "must be a folder or a mapping with 'workspace'")
        if unknown := [sub for sub in spec if sub not in _WORKSPACE_KEYS]:
            ctx.unknown(f"{key}.{unknown[0]}", list(_WORKSPACE_KEYS))
        if "workspace" not in spec:
            raise ctx.error(key, "needs a 'workspace' folder")
        own: dict[str, Any] = {
            "name": name,
            "path": ctx.path(spec["workspace"], f"{key}.workspace"),
        }
        if "extra_paths" in spec:
            items = _items(ctx, spec, "extra_paths")
            own["extra_paths"] = tuple(_extra(ctx, p, f"{key}.extra_paths[{i}]") for i, p in items)
        if "exclude" in spec:
            items = _items(ctx, spec, "exclude")
            own["exclude"] = tuple(ctx.string(g, f"{key}.exclude[{i}]") for i, g in items)
        if "sessions" in spec:
            own["sessions"] = _sessions(ctx, spec, f"{key}.sessions")
        if "vault" in spec:
            own["vault"] = _vault(ctx, spec, f"{key}.vault")
        result.append(dataclasses.replace(top, **own))
    return tuple(result)


_WORKSPACE_KEYS = ("workspace", "vault", "extra_paths", "exclude", "sessions")


def _vault(ctx: _Context, raw: Mapping[str, Any], key: str) -> bool | None:
    """``vault``: true, false, or auto (unset: auto)."""
    value = raw.get(key.rsplit(".", 1)[-1], "auto")
    if value not in ("auto", None) and not isinstance(value, bool):
        raise ctx.error(key, f"must be true, false or auto, got {value!r}")
    return value if isinstance(value, bool) else None


def _build(ctx: _Context, cls: type, raw: Any, prefix: str) -> Any:
    """Build dataclass ``cls`` from ``raw``, checking every key and type."""
    if not isinstance(raw, dict):
        raise ctx.error(prefix, f"must be a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            ctx.unknown(f"{prefix}.{key}", names)
    values = {name: _value(ctx, hints[name], raw[name], f"{prefix}.{name}") for name in raw}
    try:
        return cls(**values)
    except TypeError as exc:  # a required field is missing
        raise ctx.error(prefix, str(exc)) from exc
    except ValueError as exc:
        raise ctx.error(prefix, str(exc)) from exc


def _value(ctx: _Context, hint: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _value(ctx, options[0], value, key)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise ctx.error(key, f"must be one of {', '.join(map(str, allowed))}, got {value!r}")
        return value
    if dataclasses.is_dataclass(hint):
        return _build(ctx, hint, value, key)
    if hint is bool:
        if not isinstance(value, bool):
            raise ctx.error(key, f"must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ctx.error(key, f"must be a whole number, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ctx.error(key, f"must be a number, got {value!r}")
        return float(value)
    if hint is str:
        return ctx.string(value, key)
    if origin is tuple and typing.get_args(hint)[1:] == (Ellipsis,):
        if not isinstance(value, list):
            raise ctx.error(key, f"must be a list, got {value!r}")
        return tuple(
            _value(ctx, typing.get_args(hint)[0], v, f"{key}[{i}]") for i, v in enumerate(value)
        )
    if origin is tuple:
        kinds = typing.get_args(hint)
        if not isinstance(value, list) or len(value) != len(kinds):
            raise ctx.error(key, f"must be a list of {len(kinds)}, got {value!r}")
        return tuple(
            _value(ctx, k, v, f"{key}[{i}]")
            for i, (k, v) in enumerate(zip(kinds, value, strict=True))
        )
    raise ctx.error(key, f"has an unsupported type {hint!r}")  # pragma: no cover
