"""The only writes memd makes to a workspace: whole appended entries, and its own key lines.

Appends (``memory_flush``, a new key) are one ``write`` of the whole entry under an
exclusive advisory lock, on a descriptor opened for appending; if the write fails part-way
(a full disk), the file is cut back to its old length, so a file holds the entry or not,
never a torn line. Changing or removing a key line re-reads the file under the lock,
changes only that line, and replaces the file by rename, refusing if the file changed
between reading and replacing (an editor saved meanwhile). Files and folders are fsynced.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memd.errors import InvalidParams, WriteError
from memd.records import Written

MAX_ENTRY_BYTES = 64 * 1024
_KEY_LINE = r"^[ \t]*[-*+][ \t]+\*\*{key}\*\*[ \t]*:"


@contextlib.contextmanager
def locked(path: Path, create_header: str = "") -> Iterator[int]:
    """An exclusive lock on ``path`` (created, with ``create_header``, if missing)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise WriteError(f"cannot open {path} for writing: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if create_header and os.fstat(fd).st_size == 0:
            _write_all(fd, create_header.encode(), path, 0)
        yield fd
    finally:
        os.close(fd)


def read_locked(fd: int) -> bytes:
    """The whole file behind ``fd``."""
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def append(fd: int, path: Path, text: str) -> tuple[int, int]:
    """Append ``text`` (whole lines) as one write; returns its 1-based first and last line.

    A file that does not end in a newline gets one first.
    """
    check_size(text)
    data = text.encode("utf-8")
    before = read_locked(fd)
    lead = b"\n" if before and not before.endswith(b"\n") else b""
    first = before.count(b"\n") + len(lead) + 1
    _write_all(fd, lead + data, path, len(before))
    last = first + data.rstrip(b"\n").count(b"\n")
    return first, last


def _write_all(fd: int, data: bytes, path: Path, old_size: int) -> None:
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, "short write")
        os.fsync(fd)
    except OSError as exc:
        # Whole entry or nothing: cut back whatever part of it reached the file.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, old_size)
            os.fsync(fd)
        full = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
        reason = "the disk is full" if full else exc.strerror
        raise WriteError(f"could not write to {path} ({reason}); the file is unchanged") from exc
    _fsync_folder(path.parent)


def replace_text(fd: int, path: Path, before: bytes, after: bytes) -> None:
    """Replace the file's content ``before`` with ``after`` by rename, unless it changed."""
    if read_locked(fd) != before:
        raise WriteError(f"{path} changed while memd was updating it; nothing was written")
    mode = os.fstat(fd).st_mode & 0o777
    tmp = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".memd-", delete=False) as f:
            tmp = f.name
            f.write(after)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        # Someone who saved without taking our lock since we read: keep their version.
        with open(path, "rb") as current:
            if current.read() != before:
                raise WriteError(f"{path} changed while memd was updating it; nothing was written")
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise WriteError(
            f"could not update {path} ({exc.strerror}); the file is unchanged"
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _fsync_folder(path.parent)


def key_line_pattern(key: str) -> re.Pattern[str]:
    """Finds a ``- **key**: ...`` line, also after hand edits to spacing or bullet."""
    return re.compile(_KEY_LINE.format(key=re.escape(key)), re.MULTILINE)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Entry:
    """One thing to remember: its text, an optional heading title, and where it goes."""

    text: str
    title: str | None = None
    target: str = "daily"  # daily | core


_KEY_IN_LINE = re.compile(r"^[ \t]*[-*+][ \t]+\*\*(.+?)\*\*[ \t]*:", re.MULTILINE)

# Where an entry of a category goes: ``(workspace-relative file, header of a new file)``.
Target = Callable[[str], tuple[str, str]]


def entry_block(entry: Entry, clock: str) -> str:
    """``## HH:MM — title`` then the text, as appended to a note."""
    title = " ".join((entry.title or _first_words(entry.text)).split())
    return f"\n## {clock} — {title}\n\n{entry.text.strip()}\n"


def _first_words(text: str, limit: int = 60) -> str:
    line = text.strip().splitlines()[0].lstrip("#>-*+ ").strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def already_there(content: bytes, text: str) -> bool:
    """Whether the file already holds ``text`` as whole paragraphs (whitespace aside)."""
    have = _paragraphs(content.decode("utf-8", "replace"))
    want = _paragraphs(text)
    if not want:
        return False
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def check_size(text: str) -> None:
    """Refuse an entry over ``MAX_ENTRY_BYTES`` before anything is opened."""
    size = len(text.encode("utf-8"))
    if size > MAX_ENTRY_BYTES:
        raise InvalidParams("text", f"entry is {size} bytes; the limit is {MAX_ENTRY_BYTES}")


def flush_entries(
    root: Path, entries: list[Entry], target: Target, clock: str, core_clock: str | None = None
) -> tuple[list[Written], list[dict]]:
    """Append each entry to the file ``target`` gives for it; skip text already there.
    ``core_clock`` heads core entries: MEMORY.md's name has no date, so it carries one."""
    for entry in entries:
        check_size(entry.text)
    written, skipped = [], []
    for n, entry in enumerate(entries):
        rel, header = target(entry.target)
        path = root / rel
        with locked(path, header) as fd:
            if already_there(read_locked(fd), entry.text):
                skipped.append({"entry": n, "path": rel, "reason": "already in the file"})
                continue
            block = entry_block(
                entry, core_clock if entry.target == "core" and core_clock else clock
            )
            first, last = append(fd, path, block)
        # The block starts with a blank line; the entry is its heading to its last line.
        written.append(Written(rel, first + 1, last))
    return written, skipped


def store_key(root: Path, rel: str, header: str, key: str, content: str) -> tuple[Written, bool]:
    """Keep one ``- **key**: content`` line in ``rel``; returns where, and if it replaced one."""
    line = f"- **{key}**: {content}"
    path = root / rel
    with locked(path, header) as fd:
        before = read_locked(fd)
        text = _decode(before, rel)
        matches = list(key_line_pattern(key).finditer(text))
        if len(matches) > 1:
            raise WriteError(
                f"key {key!r} appears on {len(matches)} lines of {rel}; fix it by hand"
            )
        if not matches:
            first, last = append(fd, path, line + "\n")
            return Written(rel, first, last), False
        start = matches[0].start()
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        after = text[:start] + line + text[end:]
        replace_text(fd, path, before, after.encode("utf-8"))
        number = text.count("\n", 0, start) + 1
        return Written(rel, number, number), True


def forget_key(root: Path, rel: str, key: str) -> bool:
    """Remove the key's line from ``rel``; False if it was not there."""
    path = root / rel
    if not path.exists():
        return False
    with locked(path) as fd:
        before = read_locked(fd)
        text = _decode(before, rel)
        matches = list(key_line_pattern(key).finditer(text))
        if not matches:
            return False
        if len(matches) > 1:
            raise WriteError(
                f"key {key!r} appears on {len(matches)} lines of {rel}; fix it by hand"
            )
        start = matches[0].start()
        end = text.find("\n", start)
        after = text[:start] + ("" if end == -1 else text[end + 1 :])
        replace_text(fd, path, before, after.encode("utf-8"))
        return True


def _decode(data: bytes, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WriteError(
            f"{rel} is not valid UTF-8 (byte {exc.start}); memd will not rewrite it"
        ) from None


def list_keys(root: Path, rels: list[str]) -> list[dict]:
    """Every ``- **key**: ...`` line in the given files."""
    found = []
    for rel in rels:
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in _KEY_IN_LINE.finditer(text):
            end = text.find("\n", m.end())
            value = text[m.end() : None if end == -1 else end].strip()
            line = text.count("\n", 0, m.start()) + 1
            found.append({"key": m.group(1), "path": rel, "line": line, "value": value})
    return found
