"""Install memd as a user service: a systemd user unit on Linux, a launchd agent on macOS.

The templates live in the repository's ``systemd/`` and ``launchd/`` folders (installed to
``<prefix>/share/memd`` by a wheel). Rendering fills in the absolute path of the Python
that runs this code, so the service starts the same installation whatever its PATH.
"""

from __future__ import annotations

import os
import shlex
import shutil
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
    # Succeeds only when the user's service manager can be reached (a user session bus
    # for systemd, a GUI login for launchd): asked before anything is written.
    probe: tuple[str, ...] = ()
    # Links the manager made when enabling, removed with the file if it cannot be asked.
    links: tuple[Path, ...] = ()
    command: tuple[str, ...] = ()  # what the service runs, for another supervisor


_NO_MANAGER = {
    "systemd": (
        "no systemd user manager is reachable ({error}); this is usual in a container or "
        "over ssh without a login session. Either run 'loginctl enable-linger $USER', log in "
        "again (or export XDG_RUNTIME_DIR=/run/user/$(id -u)) and run 'memd service install' "
        "again; or run '{serve}' under another supervisor (supervisord, runit, a container's "
        "init, tmux)"
    ),
    "launchd": (
        "launchd's GUI domain is not reachable ({error}); log in at the Mac's screen, or run "
        "'{serve}' under another supervisor"
    ),
}


def template(name: str) -> str:
    """Read ``systemd/memd.service`` or ``launchd/com.memd.daemon.plist``."""
    checkout = Path(__file__).resolve().parents[2]  # a checkout: memd/serve/ is two down
    for base in (checkout, Path(sys.prefix) / "share" / "memd"):
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
    """The user unit with ``ExecStart`` set to ``command`` (quoted for systemd); only that
    line changes, comments stay as written."""
    exec_start = " ".join(_systemd_quote(arg) for arg in command)
    lines = template(f"systemd/{UNIT_NAME}").splitlines(keepends=True)
    return "".join(
        f"ExecStart={exec_start}\n" if line.strip() == "ExecStart=@EXEC_START@" else line
        for line in lines
    )


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
            probe=("launchctl", "print", domain),
            command=tuple(command),
        )
    if not platform.startswith("linux"):
        raise ServiceError(f"no service manager support for {platform}; run 'memd serve' yourself")
    units = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"
    ctl = ("systemctl", "--user")
    return ServicePlan(
        manager="systemd",
        path=units / UNIT_NAME,
        text=render_systemd(command),
        enable=((*ctl, "daemon-reload"), (*ctl, "enable", "--now", UNIT_NAME)),
        disable=((*ctl, "disable", "--now", UNIT_NAME),),
        status=(*ctl, "status", "--no-pager", UNIT_NAME),
        probe=(*ctl, "show-environment"),
        links=(units / "default.target.wants" / UNIT_NAME,),
        command=tuple(command),
    )


def reachable(p: ServicePlan) -> str | None:
    """None when the service manager answers, else why it does not (its own words)."""
    if not p.probe:
        return None
    try:
        result = subprocess.run(list(p.probe), capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return f"{p.probe[0]} is not installed"
    except subprocess.TimeoutExpired:
        return f"'{shlex.join(p.probe)}' did not answer in 30 s"
    if result.returncode == 0:
        return None
    return (result.stderr or result.stdout).strip() or f"exit status {result.returncode}"


def no_manager(p: ServicePlan, error: str) -> str:
    """What to do when the service manager cannot be reached."""
    return _NO_MANAGER[p.manager].format(error=error, serve=shlex.join(p.command))


def install(p: ServicePlan) -> list[str]:
    """Write the service file and enable it; returns what was done, line by line.

    Nothing is written when the manager cannot be reached, and a failure while enabling
    takes back what was written, so an install either works or leaves no trace."""
    if p.probe and shutil.which(p.probe[0]) is None:
        raise ServiceError(
            f"{p.probe[0]} is not available, so memd cannot set up a {p.manager} service; "
            f"run '{shlex.join(p.command)}' under another supervisor. Nothing was installed."
        )
    if (error := reachable(p)) is not None:
        raise ServiceError(f"{no_manager(p, error)}. Nothing was installed.")
    if p.manager == "launchd":
        (Path(p.path).parent.parent / "Logs" / "memd").mkdir(parents=True, exist_ok=True)
    p.path.parent.mkdir(parents=True, exist_ok=True)
    previous = p.path.read_bytes() if p.path.exists() else None
    p.path.write_text(p.text, encoding="utf-8")
    done = [f"wrote {p.path}"]
    try:
        for cmd in p.enable:
            _run(cmd, p)
            done.append(f"ran {shlex.join(cmd)}")
    except ServiceError:
        if previous is None:
            p.path.unlink(missing_ok=True)
        else:
            p.path.write_bytes(previous)
        raise
    return done


def uninstall(p: ServicePlan) -> list[str]:
    """Stop and disable the service and remove its file; says only what really happened."""
    if not p.path.exists():
        return [f"no service file at {p.path}; nothing to remove"]
    done = []
    error = reachable(p)
    if error is None:
        for cmd in p.disable:
            result = _run(cmd, p, check=False)
            if result.returncode == 0:
                done.append(f"ran {shlex.join(cmd)}")
            else:
                detail = (result.stderr or result.stdout).strip()
                done.append(f"'{shlex.join(cmd)}' failed ({result.returncode}): {detail}")
    else:
        done.append(f"did not stop or disable it: {p.manager} is not reachable ({error})")
    p.path.unlink()
    done.append(f"removed {p.path}")
    for link in p.links:  # what 'enable' made, left dangling if nobody could disable it
        if link.is_symlink():
            link.unlink()
            done.append(f"removed {link}")
    if error is None and p.manager == "systemd":
        _run(("systemctl", "--user", "daemon-reload"), p, check=False)
    return done


def status(p: ServicePlan) -> tuple[int, str]:
    """Whether the service is installed and what its manager says about it, with an exit
    code (0 only when the manager reports it active)."""
    if not p.path.exists():
        return 3, f"memd is not installed as a service ({p.path} does not exist)"
    if (error := reachable(p)) is not None:
        return 4, f"{p.path} is installed, but {no_manager(p, error)}"
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
