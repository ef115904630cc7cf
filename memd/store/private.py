"""The state folder is private: folder 0700, every file memd keeps in it 0600, whatever the
umask.

The indexes hold the text of every note, so another user must not read them. SQLite makes
a database's ``-wal`` and ``-shm`` files with the database file's own mode, so creating
the database file 0600 before SQLite opens it covers them too. Files and a folder left
readable by an older memd are tightened when opened. The user's Markdown files are not
touched here: they keep the modes the user's umask gives.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from memd.log import get_logger

log = get_logger()

_SQLITE_SIDES = ("", "-wal", "-shm", "-journal")


def private_folder(folder: Path, tighten: bool = True) -> None:
    """Create ``folder`` and its missing parents 0700. With ``tighten``, an existing
    ``folder`` of this user's also loses group and other access (the state folder); a
    folder memd did not create is otherwise left as it is (a shared 1777 socket folder).

    Raises ``OSError`` when it cannot be created.
    """
    missing = []
    here = folder
    while not os.path.lexists(here) and here != here.parent:
        missing.append(here)
        here = here.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by someone else: not ours to change
            continue
        os.chmod(path, 0o700)  # whatever the umask took away
    if tighten and not missing:
        _tighten(folder)


def private_file(path: Path) -> None:
    """Create ``path`` 0600 if missing (an empty file is an empty database); take group
    and other access away from it and the SQLite files beside it."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    for side in _SQLITE_SIDES:
        _tighten(Path(f"{path}{side}"))


def _tighten(path: Path) -> None:
    """Take group and other bits away from ``path`` if this user owns it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if st.st_uid != os.getuid() or not st.st_mode & 0o077:
        return
    mode = st.st_mode & 0o700
    try:
        os.chmod(path, mode)
    except OSError as exc:
        log.warning("state_mode_unchanged", path=str(path), error=exc.strerror)
        return
    log.info("state_mode_tightened", path=str(path), was=oct(st.st_mode & 0o777), now=oct(mode))


def load_json(path: Path) -> Any:
    """What ``save_json`` wrote to ``path``; None when there is none or it cannot be read
    (the caller starts afresh)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_json(path: Path, data: object) -> None:
    """Write ``data`` to ``path`` as JSON, 0600, whole or not at all (by rename); raises
    ``OSError`` (a full disk)."""
    part = path.with_name(path.name + ".part")
    private_file(part)
    part.write_text(json.dumps(data), encoding="utf-8")
    os.replace(part, path)
