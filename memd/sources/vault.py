"""Whether a workspace folder is a vault of notes rather than an agent's memory.

People point ``workspace:`` at their Obsidian vault; read as an agent's workspace (only
MEMORY.md and memory/) it would index nothing. A folder that holds Obsidian's
``.obsidian/``, or Markdown but none of an agent's memory files, is read as a vault.
"""

from __future__ import annotations

import os
from pathlib import Path

_LOOK_FOLDERS = 200  # folders looked into for a note before a folder is taken for no vault


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
