"""Install memd as a user service: a systemd user unit on Linux, a launchd agent on macOS.

The templates live in the repository's ``systemd/`` and ``launchd/`` folders (installed to
``<prefix>/share/memd`` by a wheel). Rendering fills in the absolute path of the Python
that runs this code, so the service starts the same installation whatever its PATH.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from memd.errors import MemdError

UNIT_NAME = "memd.service"
AGENT_LABEL = "com.memd.daemon"


class ServiceError(MemdError):
    """The service manager refused or is not reachable."""


@dataclass(frozen=True)
class ServicePlan:
    """Where the rendered service file goes, what it says, and the commands that load it."""

    manager: str  # systemd | launchd
    path: Path
    text: str
    enable: tuple[tuple[str, ...], ...]
    disable: tuple[tuple[str, ...], ...]
    status: tuple[str, ...]


def template(name: str) -> str:
    """Read ``systemd/memd.service`` or ``launchd/com.memd.daemon.plist``."""
    here = Path(__file__).resolve().parent
    for base in (here.parent, Path(sys.prefix) / "share" / "memd"):
        path = base / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise ServiceError(f"service template {name} is missing from this installation")


def serve_command(config: Path | None) -> list[str]:
    """The command a service runs: this Python, ``-m memd``, the config if one was given."""
    args = [sys.executable, "-m", "memd"]
    if config is not None:
        args += ["--config", str(config)]
    return [*args, "serve"]


def render_systemd(command: Sequence[str]) -> str:
    """The user unit with ``ExecStart`` set to ``command`` (quoted for systemd)."""
    exec_start = " ".join(_systemd_quote(arg) for arg in command)
    return template(f"systemd/{UNIT_NAME}").replace("@EXEC_START@", exec_start)


def render_launchd(command: Sequence[str], log_dir: Path) -> str:
    """The launchd agent plist running ``command``, logging to ``log_dir/memd.log``."""
    args = "\n".join(f"        <string>{escape(arg)}</string>" for arg in command)
    text = template(f"launchd/{AGENT_LABEL}.plist")
    return text.replace("@PROGRAM_ARGUMENTS@", args).replace("@LOG_DIR@", escape(str(log_dir)))


def plan(config: Path | None, env: Mapping[str, str], platform: str = sys.platform) -> ServicePlan:
    """What ``memd service install`` would write and run on this platform."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    command = serve_command(config)
    if platform == "darwin":
        uid = os.getuid()
        path = home / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        log_dir = home / "Library" / "Logs" / "memd"
        domain = f"gui/{uid}"
        return ServicePlan(
            manager="launchd",
            path=path,
            text=render_launchd(command, log_dir),
            enable=(("launchctl", "bootstrap", domain, str(path)),),
            disable=(("launchctl", "bootout", f"{domain}/{AGENT_LABEL}"),),
            status=("launchctl", "print", f"{domain}/{AGENT_LABEL}"),
        )
    if not platform.startswith("linux"):
        raise ServiceError(f"no service manager support for {platform}; run 'memd serve' yourself")
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    ctl = ("systemctl", "--user")
    return ServicePlan(
        manager="systemd",
        path=config_home / "systemd" / "user" / UNIT_NAME,
        text=render_systemd(command),
        enable=((*ctl, "daemon-reload"), (*ctl, "enable", "--now", UNIT_NAME)),
        disable=((*ctl, "disable", "--now", UNIT_NAME),),
        status=(*ctl, "status", "--no-pager", UNIT_NAME),
    )


def install(p: ServicePlan) -> list[str]:
    """Write the service file and enable it; returns what was done, line by line."""
    if p.manager == "launchd":
        (Path(p.path).parent.parent / "Logs" / "memd").mkdir(parents=True, exist_ok=True)
    p.path.parent.mkdir(parents=True, exist_ok=True)
    p.path.write_text(p.text, encoding="utf-8")
    done = [f"wrote {p.path}"]
    for cmd in p.enable:
        _run(cmd, p)
        done.append(f"ran {shlex.join(cmd)}")
    return done


def uninstall(p: ServicePlan) -> list[str]:
    """Stop and disable the service and remove its file."""
    done = []
    if p.path.exists():
        for cmd in p.disable:
            _run(cmd, p, check=False)
            done.append(f"ran {shlex.join(cmd)}")
        p.path.unlink()
        done.append(f"removed {p.path}")
        if p.manager == "systemd":
            _run(("systemctl", "--user", "daemon-reload"), p, check=False)
    else:
        done.append(f"no service file at {p.path}; nothing to remove")
    return done


def status(p: ServicePlan) -> tuple[int, str]:
    """The service manager's own report, and its exit code."""
    if not p.path.exists():
        return 3, f"memd is not installed as a service ({p.path} does not exist)"
    result = _run(p.status, p, check=False)
    return result.returncode, (result.stdout + result.stderr).strip()


def _run(cmd: Sequence[str], p: ServicePlan, check: bool = True) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise ServiceError(
            f"{cmd[0]} is not available; the service file is at {p.path}, load it yourself"
        ) from exc
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()
        raise ServiceError(f"'{shlex.join(cmd)}' failed ({result.returncode}): {detail}")
    return result


def _systemd_quote(arg: str) -> str:
    if arg and not any(c in arg for c in " \t\"'\\$%;"):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    return f'"{escaped}"'
