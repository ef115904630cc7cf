"""``memd doctor``: check what users usually get wrong, and say what to do about each.

Each check gives ``ok``, ``warn`` (works, but not as well as it could) or ``fail`` (something
a user must fix), a line saying what was found, and for anything not ok what to do. The
checks only read: nothing is created or changed, except a temporary file in the state
folder to prove it can be written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

from memd.cli.check import Check
from memd.cli.doctor_team import refused_files, team_check
from memd.cli.format import counted
from memd.client import Client, describe, mismatch
from memd.config import Config, WorkspaceConfig, shown_url
from memd.configfile import default_config_path, load_config
from memd.errors import MemdError
from memd.sources.layout import MEMORY_DIR, Workspace, is_note
from memd.write.keylines import key_lines, look_alikes

_INOTIFY = Path("/proc/sys/fs/inotify")


def doctor(config_arg: str | None, workspace: str | None, as_json: bool) -> int:
    """Run every check, print the findings; 1 if anything failed."""
    checks = list(run_checks(config_arg, workspace, os.environ))
    failed = [c for c in checks if c.state == "fail"]
    if as_json:
        print(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    for c in checks:
        state = c.state.upper() if c.state == "fail" else c.state
        print(f"{state:<5} {c.name:<{width}}  {c.detail}")
        if c.fix:
            print(f"{'':<5} {'':<{width}}  fix: {c.fix}")
    warned = sum(c.state == "warn" for c in checks)
    if failed:
        print(f"\n{counted(len(failed), 'problem')} to fix.")
    else:
        warnings = f" ({counted(warned, 'warning')})" if warned else ""
        print(f"\nno problems found{warnings}.")
    return 1 if failed else 0


def run_checks(
    config_arg: str | None, workspace: str | None, env: Mapping[str, str]
) -> Iterator[Check]:
    """Every check in order; later ones are skipped when the config cannot be read."""
    try:
        config = load_config(config_arg, env)
    except MemdError as exc:
        fix = "fix what it names, or point --config or $MEMD_CONFIG at a good file"
        yield Check("config", "fail", str(exc), fix)
        return
    where = config.source or default_config_path(env)
    if config.source:
        yield Check("config", "ok", f"{config.source} (valid)")
    else:
        yield Check("config", "ok", f"no file at {where}: built-in defaults")
    workspaces = [config.workspace(workspace)] if workspace else list(config.workspaces)
    for ws in workspaces:
        yield _workspace(ws, where, config.source is None, config.state_dir)
        if (keys := _look_alikes(ws)) is not None:
            yield keys
    yield _state_dir(config, where)
    if (hooks := _hooks(config)) is not None:
        yield hooks
    status, daemon_check = _daemon(config, workspaces)
    yield daemon_check
    yield _embeddings(config, status)
    for ws in workspaces:
        if status is not None:  # without a daemon nothing watches: the daemon line says so
            yield _watcher(ws, status[ws.name])
            if skipped := status[ws.name].get("skipped_files"):
                yield _skipped(ws, skipped)
            if (refused := refused_files(ws, status[ws.name])) is not None:
                yield refused
    if sys.platform.startswith("linux"):
        yield _inotify(workspaces, config.state_dir)
    if config.team.enabled:
        yield team_check(config)


def _workspace(ws: WorkspaceConfig, where: Path, defaults: bool, state_dir: Path) -> Check:
    name = f"workspace {ws.name}"
    if defaults and not ws.path.exists():
        return Check(
            name,
            "warn",
            f"{ws.path} does not exist yet: memd serve creates it on first start",
            f"memd serve, or mkdir -p {ws.path / MEMORY_DIR}, or set workspace in {where}",
        )
    if not ws.path.is_dir():
        return Check(
            name,
            "fail",
            f"{ws.path} does not exist" if not ws.path.exists() else f"{ws.path} is not a folder",
            f"mkdir -p {ws.path / MEMORY_DIR}, or set the workspace folder in {where}",
        )
    if not os.access(ws.path, os.R_OK | os.X_OK):
        return Check(name, "fail", f"{ws.path} cannot be read", f"chmod u+rx {ws.path}")
    missing = [str(e.path) for e in ws.extra_paths if not e.path.exists()]
    if missing:
        return Check(
            name,
            "warn",
            f"{ws.path}; extra path missing: {', '.join(missing)}",
            f"create it, or remove it from extra_paths in {where}",
        )
    layout = Workspace(ws, state_dir)
    found, read = _markdown_read(layout)
    if layout.vault:
        return Check(name, "ok", f"{ws.path} (a vault: {counted(read, 'note')} read)")
    if found >= _UNREAD_MIN and read * 2 < found:
        return Check(
            name,
            "warn",
            f"{ws.path}: {read} of {counted(found, 'note')} indexed (a workspace "
            "reads MEMORY.md and memory/ only)",
            f"to read every note as a vault does, set 'vault: true' for this workspace in "
            f"{where} (or list its note folders in extra_paths)",
        )
    return Check(
        name, "ok", f"{ws.path} ({counted(read, 'Markdown file')} in MEMORY.md and memory/)"
    )


_UNREAD_MIN = 10  # Markdown files left unread before a workspace is worth a warning
_LOOK_MAX = 100_000  # files looked at before counting stops (a home folder as a workspace)


def _markdown_read(layout: Workspace) -> tuple[int, int]:
    """``(notes under the workspace folder, how many of them memd indexes)``,
    hidden folders and node_modules left out as memd leaves them."""
    found = read = 0
    for top, dirs, names in os.walk(layout.path):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        for n in names:
            if is_note(n) and not n.startswith("."):
                found += 1
                read += layout.locate(os.path.join(top, n)) is not None
        if found >= _LOOK_MAX:
            break
    return found, read


def _look_alikes(ws: WorkspaceConfig) -> Check | None:
    """Hand-written lines in key form that share a key with memd's own: store replaces and
    forget removes only memd's line, which a person may not expect. A person's list of
    bold names alone is no concern of memd's and is not mentioned."""
    ours: set[str] = set()
    theirs: list[tuple[str, str]] = []
    for path in [ws.path / "MEMORY.md", *sorted((ws.path / MEMORY_DIR).glob("*.md"))]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        ours |= {k.key.casefold() for k in key_lines(text)}
        where = path.relative_to(ws.path)
        theirs += [(key, f"{where}:{n}") for n, key in look_alikes(text)]
    found = [place for key, place in theirs if key.casefold() in ours]
    if not found:
        return None
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return Check(
        f"keys {ws.name}",
        "warn",
        f"{counted(len(found), 'hand-written line')} with the key of one memd stored ({shown}): "
        "memd store and forget change only memd's line, never these",
        "if both say the same thing, delete one; to let memd replace yours, end it with "
        "<!-- memd:key -->",
    )


def _hooks(config: Config) -> Check | None:
    """What went wrong in an agent host's hooks lately (they exit 0 and log it instead)."""
    try:
        lines = (config.state_dir / "hooks.log").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    since = time.time() - 86400
    recent = []
    for line in lines[-200:]:
        try:
            entry = json.loads(line)
            if "error" in entry and dt.datetime.fromisoformat(entry["at"]).timestamp() >= since:
                recent.append(entry)  # a run that answered is logged too, with its route
        except (ValueError, KeyError, TypeError):
            continue
    if not recent:
        return Check("hooks", "ok", "no hook failed in the last 24 hours")
    last = recent[-1]
    return Check(
        "hooks",
        "warn",
        f"{counted(len(recent), 'hook run')} failed in the last 24 hours; last "
        f"({last['command']}, {last['at']}): {last['error']}",
        f"see {config.state_dir / 'hooks.log'}; the host went on without memd's memory",
    )


def _state_dir(config: Config, where: Path) -> Check:
    state = config.state_dir
    existing = state
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    fix = f"chmod u+rwx {existing}, or set state_dir in {where} to a folder you can write"
    if not existing.is_dir():
        return Check("state folder", "fail", f"{existing} is not a folder", fix)
    if existing != state:
        if os.access(existing, os.W_OK | os.X_OK):
            return Check("state folder", "ok", f"{state} (created on first use)")
        return Check("state folder", "fail", f"{state} cannot be created in {existing}", fix)
    try:
        with tempfile.TemporaryFile(dir=state):
            pass
    except OSError as exc:
        return Check("state folder", "fail", f"{state} cannot be written: {exc.strerror}", fix)
    return Check("state folder", "ok", f"{state} (writable)")


def _daemon(config: Config, workspaces: list[WorkspaceConfig]) -> tuple[dict | None, Check]:
    """The daemon's status per workspace (None without a usable daemon), and the check."""
    start = "memd serve (in the foreground), or memd service install"
    if not config.socket.exists():
        return None, Check(
            "daemon",
            "warn",
            f"none on {config.socket}: commands open the index themselves and nothing "
            "watches the files",
            start,
        )
    try:
        with Client(config.socket, timeout=10) as client:
            health = client.call("health")
            problem = mismatch(health, config)
            if problem is not None:
                return None, Check(
                    "daemon",
                    "fail",
                    problem[0],
                    "stop that daemon, or run memd with the config it serves, or give this "
                    "config its own socket and state_dir",
                )
            status = {ws.name: client.call("status", workspace=ws.name) for ws in workspaces}
    except MemdError as exc:
        return None, Check(
            "daemon", "warn", f"{config.socket} exists but no daemon answers ({exc})", start
        )
    if health.get("config_drift"):
        return status, Check(
            "daemon",
            "warn",
            f"{describe(health)}, memd {health.get('version')}: {health['config_drift']}",
            "fix the config file (memd doctor checks it), or restart memd",
        )
    return status, Check(
        "daemon", "ok", f"{describe(health)}, memd {health.get('version')}, serving this config"
    )


def _embeddings(config: Config, status: dict | None) -> Check:
    settings = config.embeddings
    if settings.provider == "none":
        return Check("embeddings", "ok", "provider none: keyword search only")
    if status:
        for answer in status.values():
            if answer["embeddings"].startswith("cooling down"):
                return Check(
                    "embeddings",
                    "fail",
                    f"the daemon's provider fails: {answer['embeddings']}",
                    _embedding_fix(config),
                )
    from memd.embed.providers import make_embedder

    try:
        embedder = make_embedder(settings)
    except MemdError as exc:
        return Check("embeddings", "fail", str(exc), _embedding_fix(config))
    if not embedder.enabled:
        return Check("embeddings", "ok", "provider auto: memd[local] not installed, keyword only")
    outcome: dict = {}

    def probe() -> None:
        started = time.monotonic()
        try:
            vectors = embedder.embed(["memd doctor: is the embedding provider answering?"], "query")
            outcome["ok"] = (time.monotonic() - started, vectors.shape[1])
        except Exception as exc:  # any failure of the provider is the finding
            outcome["error"] = str(exc)

    limit = settings.timeout_s * (settings.retries + 1) + 30  # the local model loads first
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(limit)
    what = f"{embedder.provider} model {embedder.model}"
    if "ok" in outcome:
        seconds, dims = outcome["ok"]
        return Check("embeddings", "ok", f"{what} answered in {seconds:.2f} s ({dims} dimensions)")
    error = outcome.get("error", f"no answer in {limit:.0f} s")
    return Check("embeddings", "fail", f"{what}: {error}", _embedding_fix(config))


def _embedding_fix(config: Config) -> str:
    settings = config.embeddings
    if settings.provider == "openai":
        where = shown_url(settings.base_url or "api.openai.com")
        return (
            f"check that the server at {where} runs and serves "
            f"model {settings.model}, and the API key; keyword search works meanwhile"
        )
    return (
        "pip install -e '.[local]' in memd's checkout, or set embeddings.provider: none "
        "for keyword search only"
    )


def _watcher(ws: WorkspaceConfig, status: dict) -> Check:
    name = f"watcher {ws.name}"
    if status["watcher"] == "running":
        return Check(name, "ok", "running")
    return Check(
        name,
        "fail",
        f"{status['watcher']}: edits are not picked up until the next sweep",
        f"check that {ws.path} exists; the daemon's log says why "
        "(journalctl --user -u memd, or the terminal running memd serve)",
    )


def _skipped(ws: WorkspaceConfig, skipped: list[str]) -> Check:
    more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    return Check(
        f"files {ws.name}",
        "warn",
        f"{len(skipped)} not indexed, the rest are: {'; '.join(skipped[:5])}{more}",
        "fix what each names (rename a file whose name is not UTF-8); it is indexed then",
    )


def _inotify(workspaces: list[WorkspaceConfig], state_dir: Path) -> Check:
    try:
        limit = int((_INOTIFY / "max_user_watches").read_text())
    except (OSError, ValueError):
        return Check("inotify", "warn", "cannot read /proc/sys/fs/inotify/max_user_watches")
    # One watch per folder: each workspace folder alone (a vault's deep), memory/ and extra
    # folders deep.
    folders = 0
    for ws in workspaces:
        vault = Workspace(ws, state_dir).vault
        folders += 0 if vault else 1
        deep = [ws.path if vault else ws.path / MEMORY_DIR]
        deep += [e.path for e in ws.extra_paths if e.path.is_dir()]
        folders += sum(_count(top) for top in deep)
    # Watches are per folder: the files in them are counted on the workspace's own line.
    detail = f"{counted(folders, 'folder')} to watch; max_user_watches is {limit}"
    fix = (
        "echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/60-memd.conf "
        "&& sudo sysctl --system"
    )
    if folders >= limit:
        return Check("inotify", "fail", detail + ": edits will be missed", fix)
    if folders > limit // 2:
        return Check("inotify", "warn", detail + ": other programs share that limit", fix)
    return Check("inotify", "ok", detail)


def _count(top: Path) -> int:
    """Folders under ``top``, itself included."""
    return sum(1 for _ in os.walk(top))
