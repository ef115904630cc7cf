"""``memd hooks``: wire memd into an agent host, and take it out again exactly.

Claude Code: memd's commands go into the ``hooks`` of ``~/.claude/settings.json`` (or a
project's ``.claude/settings.json``), every other hook and setting kept. Codex: memd's MCP
server goes into ``~/.codex/config.toml``. The first install keeps the file as it was
beside it (``*.memd-backup``); uninstall removes what install added and, when nothing else
changed meanwhile, puts that original back byte for byte. Every write is atomic.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memd.cli.format import counted
from memd.config import Config
from memd.configfile import default_config_path
from memd.errors import InvalidParams

EVENTS = {
    "SessionStart": "context --hook",
    "UserPromptSubmit": "recall --hook",
    "PreCompact": "flush --hook",
    "SessionEnd": "flush --hook",
}
DEFAULT_EVENTS = ("SessionStart", "PreCompact", "SessionEnd")
_OURS = re.compile(r"memd\S*(?:\s+--config\s+\S+)?\s+(?:context|recall|flush) --hook\b")
_HOOK_TIMEOUT_S = 10
_CODEX_BLOCK = "# added by `memd hooks install codex`; `memd hooks uninstall codex` removes it\n"
_ABSENT = b"memd: this file did not exist\n"
_SESSIONS_MARK = "# added by `memd hooks install claude-code --sessions`"


def hooks(args: argparse.Namespace, config: Config) -> int:
    """Run ``memd hooks ACTION [HOST]``; returns the exit code."""
    if args.action == "status":
        for line in status(args.project):
            print(line)
        return 0
    if args.host is None:
        raise InvalidParams("host", "name the agent host: claude-code or codex")
    memd = memd_command(config)
    if args.host == "codex":
        path = codex_config()
        print(codex_install(path, memd) if args.action == "install" else codex_uninstall(path))
        return 0
    path = claude_settings(args.project)
    if args.action == "uninstall":
        print(claude_uninstall(path))
        if removed := remove_sessions(config):
            print(removed)
        return 0
    print(claude_install(path, memd, args.events or DEFAULT_EVENTS))
    print(f"MCP tools too: claude mcp add --scope user memd -- {memd} mcp")
    if args.sessions:
        print(add_sessions(config, "~/.claude/projects", "claude-code"))
    return 0


def memd_command(config: Config) -> str:
    """How a host runs this memd: its executable beside this Python, and this config."""
    beside = Path(sys.executable).parent / "memd"
    command = shlex.quote(str(beside)) if beside.exists() else f"{sys.executable} -m memd"
    if config.source is not None and config.source != default_config_path(os.environ):
        command += f" --config {shlex.quote(str(config.source))}"
    return command


def claude_settings(project: Path | None) -> Path:
    if project is not None:
        return project.expanduser().resolve() / ".claude" / "settings.json"
    return Path.home() / ".claude" / "settings.json"


def codex_config() -> Path:
    return Path(os.environ.get("CODEX_HOME", Path.home() / ".codex")) / "config.toml"


def claude_install(path: Path, memd: str, events: tuple[str, ...] | list[str]) -> str:
    """Add memd's hook to each event in ``path`` (kept: everything else); idempotent."""
    before = path.read_bytes() if path.exists() else None
    settings = _settings(before, path)
    table = settings.setdefault("hooks", {})
    added = []
    for event in events:
        groups = table.setdefault(event, [])
        if any(_is_ours(h) for g in groups for h in g.get("hooks", [])):
            continue
        command = f"{memd} {EVENTS[event]}"
        groups.append({"hooks": [{"type": "command", "command": command,
                                  "timeout": _HOOK_TIMEOUT_S}]})  # fmt: skip
        added.append(event)
    if not added:
        return f"memd's hooks are already in {path}"
    _backup(path, before)
    _write(path, json.dumps(settings, indent=2) + "\n")
    return f"added memd's hooks for {', '.join(added)} to {path}"


def claude_uninstall(path: Path) -> str:
    """Remove exactly the hooks install added; the original back when nothing else changed."""
    if not path.exists():
        return f"no {path}: nothing to remove"
    settings = _settings(path.read_bytes(), path)
    table = settings.get("hooks")
    removed = 0
    if isinstance(table, dict):
        for event in list(table):
            kept_groups = []
            for group in table[event]:
                kept = [h for h in group.get("hooks", []) if not _is_ours(h)]
                removed += len(group.get("hooks", [])) - len(kept)
                if kept or not group.get("hooks"):
                    kept_groups.append({**group, "hooks": kept})
            if kept_groups:
                table[event] = kept_groups
            else:
                del table[event]
        if not table:
            del settings["hooks"]
    if not removed:
        return f"no memd hooks in {path}"
    _restore(path, json.dumps(settings, indent=2) + "\n", json.loads)
    return f"removed {counted(removed, 'memd hook')} from {path}"


def codex_install(path: Path, memd: str) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if re.search(r"^\[mcp_servers\.memd\]", text, re.M):
        return f"an MCP server named memd is already in {path}"
    command, *rest = shlex.split(memd)
    block = (f"{_CODEX_BLOCK}[mcp_servers.memd]\ncommand = {json.dumps(command)}\n"
             f"args = {json.dumps([*rest, 'mcp'])}\n")  # fmt: skip
    _backup(path, path.read_bytes() if path.exists() else None)
    lead = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    _write(path, text + lead + block)
    return f"added memd's MCP server to {path} (Codex starts it with: {memd} mcp)"


def codex_uninstall(path: Path) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    at = text.find(_CODEX_BLOCK)
    if at < 0:
        return f"no memd MCP server added by memd in {path}"
    end = text.find("\n[", at + len(_CODEX_BLOCK))  # the next table, if any
    after = text[end + 1 :] if end >= 0 else ""
    cleaned = text[:at].rstrip("\n") + ("\n" if text[:at].strip() else "") + after
    _restore(path, cleaned, str.strip)
    return f"removed memd's MCP server from {path}"


def status(project: Path | None) -> list[str]:
    """Where memd is wired in, one line a file."""
    lines = []
    for path in dict.fromkeys([claude_settings(None), claude_settings(project or Path.cwd())]):
        try:
            table = _settings(path.read_bytes(), path).get("hooks", {}) if path.exists() else {}
        except InvalidParams as exc:
            lines.append(f"claude-code  {exc}")
            continue
        events = [e for e, groups in table.items()
                  if any(_is_ours(h) for g in groups for h in g.get("hooks", []))]  # fmt: skip
        lines.append(f"claude-code  {path}: " + (", ".join(events) if events else "not installed"))
    toml = codex_config()
    there = toml.exists() and _CODEX_BLOCK in toml.read_text(encoding="utf-8")
    lines.append(f"codex        {toml}: " + ("MCP server memd" if there else "not installed"))
    return lines


def add_sessions(config: Config, folder: str, fmt: str) -> str:
    """Index the host's transcripts: a ``sessions`` entry in memd's config file."""
    path = config.source or default_config_path(os.environ)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    entry = f"  - {{path: {folder}, format: {fmt}}}  {_SESSIONS_MARK}\n"
    if re.search(r"^sessions:\s*\S", text, re.M) and "[]" not in text.split("sessions:", 1)[1][:4]:
        return f"{path} has a sessions list: add this line to it, then restart memd:\n{entry}"
    if any(f"path: {folder}" in line for line in text.splitlines()):
        return f"{folder} is already a sessions source in {path}"
    body = re.sub(r"^sessions:\s*\[\]\s*$\n?", "", text, flags=re.M)
    lead = "" if not body or body.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, f"{body}{lead}sessions:  {_SESSIONS_MARK}\n{entry}")
    return f"added {folder} ({fmt} transcripts) to {path}; a running memd picks it up"


def remove_sessions(config: Config) -> str | None:
    """Take out what ``add_sessions`` put in memd's config file: its marked entry, and the
    ``sessions:`` line it added once no entry is left under it. None: nothing of ours."""
    path = config.source or default_config_path(os.environ)
    if not path.exists():
        return None
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [
        line for line in lines if not (line.lstrip().startswith("- ") and _SESSIONS_MARK in line)
    ]
    if len(kept) == len(lines):
        return None
    out = []
    for n, line in enumerate(kept):
        rest = kept[n + 1 :]
        empty = not rest or not rest[0].startswith((" ", "\t", "-"))
        if line.startswith("sessions:") and _SESSIONS_MARK in line and empty:
            continue
        out.append(line)
    _write(path, "".join(out))
    return f"removed the sessions entry install added from {path}"


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def _settings(data: bytes | None, path: Path) -> dict:
    if not data or not data.strip():
        return {}
    try:
        settings = json.loads(data)
    except ValueError as exc:
        raise InvalidParams("settings", f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(settings, dict):
        raise InvalidParams("settings", f"{path} does not hold a JSON object")
    return settings


def _backup(path: Path, before: bytes | None) -> None:
    backup = path.with_name(path.name + ".memd-backup")
    if not backup.exists():  # the first install's original: what uninstall goes back to
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(backup, (_ABSENT if before is None else before).decode("utf-8", "surrogateescape"))


def _restore(path: Path, text: str, read: Callable[[str], Any]) -> None:
    """Write ``text``, or the original bytes when ``read`` finds the same in them; an
    empty ``text`` where no file was removes the file."""
    backup = path.with_name(path.name + ".memd-backup")
    original = backup.read_bytes() if backup.exists() else None
    if original == _ABSENT and not read(text):
        path.unlink()
        backup.unlink()
        return
    if original is not None and original != _ABSENT:
        try:
            same = read(original.decode("utf-8")) == read(text)
        except ValueError:
            same = False
        if same:
            _write(path, original.decode("utf-8", "surrogateescape"))
            backup.unlink()
            return
    _write(path, text)


def _write(path: Path, text: str) -> None:
    """Replace ``path`` whole (a temporary file renamed over it), keeping its mode."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
