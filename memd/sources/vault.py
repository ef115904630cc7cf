"""Whether a workspace folder is a vault of notes rather than an agent's memory.

People point ``workspace:`` at their Obsidian vault; read as an agent's workspace (only
MEMORY.md and memory/) it would index nothing. A folder that holds Obsidian's
``.obsidian/``, or Markdown but none of an agent's memory files, is read as a vault.

A folder found to be a vault stays one: the verdict is kept in the state folder, so the
agent's first daily note (memd's own flush writes ``memory/``) or a ``MEMORY.md`` does not
turn every other note off. ``vault: false`` in the config says otherwise.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memd.config import WorkspaceConfig

_LOOK_FOLDERS = 200  # folders looked into for a note before a folder is taken for no vault


def is_vault(config: WorkspaceConfig, state_dir: Path | None, memory: tuple[str, ...]) -> bool:
    """Whether the workspace's folder is read as a vault: as the config says, else (auto)
    if it was found to be one before (kept in ``state_dir``) or looks like one now."""
    if config.vault is not None:
        return config.vault
    return found_before(config.path, state_dir, config.name) or looks_like_vault(
        config.path, memory
    )


def found_before(folder: Path, state_dir: Path | None, name: str) -> bool:
    """Whether ``folder`` was found to be a vault before (``remember``)."""
    if state_dir is None:
        return False
    try:
        return _mark(state_dir, name).read_text(encoding="utf-8").strip() == str(folder)
    except (OSError, UnicodeDecodeError):
        return False


def remember(folder: Path, state_dir: Path, name: str) -> None:
    """Keep, in ``state_dir``, that the folder of workspace ``name`` is a vault (a state
    folder that cannot be written only loses the memory, never the index)."""
    if found_before(folder, state_dir, name):
        return
    with contextlib.suppress(OSError):
        # 0600 like every file of the state folder (the store's rule; no import from there)
        fd = os.open(_mark(state_dir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f"{folder}\n")


def _mark(state_dir: Path, name: str) -> Path:
    return state_dir / f"vault-{name}"


def looks_like_vault(folder: Path, memory: tuple[str, ...]) -> bool:
    """Whether ``folder`` holds ``.obsidian/``, or Markdown but none of ``memory`` (the
    names of an agent's memory files and folder)."""
    try:
        if (folder / ".obsidian").is_dir():
            return True
        if any((folder / name).exists() for name in memory):
            return False
        return _holds_markdown(folder)
    except OSError:
        return False


def _holds_markdown(folder: Path) -> bool:
    """Whether a Markdown file lies in ``folder`` or the first folders below it (hidden
    ones and node_modules left out, as a walk leaves them)."""
    for looked, (_, dirs, names) in enumerate(os.walk(folder), start=1):
        if any(n.endswith(".md") and not n.startswith(".") for n in names):
            return True
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        if looked >= _LOOK_FOLDERS:
            return False
    return False
