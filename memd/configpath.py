"""Where the config file is: ``$MEMD_CONFIG``, else the XDG config folder; and ``~`` read
from a given environment. Standard library only, so the thin client
(``memd.cli.thin``) can find the file without loading YAML or the config's dataclasses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_config_path(env: Mapping[str, str]) -> Path:
    """Where memd looks for its config: ``$MEMD_CONFIG``, else the XDG config folder."""
    if env.get("MEMD_CONFIG"):
        return expand_home(env["MEMD_CONFIG"], env)
    base = env.get("XDG_CONFIG_HOME") or f"{home(env)}/.config"
    return expand_home(base, env) / "memd" / "config.yaml"


def config_file(path: str | Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file a command reads (``--config PATH`` or the default), and whether it
    was named (``--config`` or ``$MEMD_CONFIG``): a named file must exist."""
    explicit = path is not None or bool(env.get("MEMD_CONFIG"))
    file = expand_home(str(path), env) if path is not None else default_config_path(env)
    return file, explicit


def home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def expand_home(path: str, env: Mapping[str, str]) -> Path:
    """``~`` and ``~/x`` from the given environment's HOME (other users' ``~name`` too)."""
    if path == "~" or path.startswith("~/"):
        return Path(home(env) + path[1:])
    return Path(path).expanduser()
