"""The only writes memd makes to a workspace: whole appended entries, and its own key lines.

Appends (``memory_flush``, a new key) are one ``write`` of the whole entry under an
exclusive advisory lock, on a descriptor opened for appending; if the write fails part-way
(a full disk), the file is cut back to its old length, so a file holds the entry or not,
never a torn line. Changing or removing a key line re-reads the file under the lock,
changes only that line, and replaces the file by rename, refusing if the file changed
between reading and replacing (an editor saved meanwhile). Files and folders are fsynced.
Files are opened through ``memd.write.safepath``: never through a link out of the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memd.errors import InvalidParams, PathRefused, WriteError
from memd.records import Written
from memd.write.keylines import KeyLine, escape_free_text, key_line, key_lines, key_value
from memd.write.safepath import OpenFile, open_for_write

MAX_ENTRY_BYTES = 64 * 1024
# C0 and C1 control characters, DEL, and the Unicode line and paragraph separators: in a
# key, category or title any of them can end the line early or hide text from a reader.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@contextlib.contextmanager
def locked(
    root: Path, rel: str, create_header: str = "", create: bool = True
) -> Iterator[OpenFile]:
    """An exclusive lock on the workspace file ``rel`` (created, with ``create_header``,
    if missing); never reached through a link out of the workspace (``memd.write.safepath``)."""
    path = root / rel
    try:
        opened = open_for_write(root, rel, create)
    except OSError as exc:
        raise WriteError(f"cannot open {path} for writing: {exc.strerror}") from exc
    try:
        fcntl.flock(opened.fd, fcntl.LOCK_EX)
        if create_header and os.fstat(opened.fd).st_size == 0:
            _write_all(opened.fd, create_header.encode(), path, 0)
        yield opened
    finally:
        opened.close()


def read_locked(fd: int) -> bytes:
    """The whole file behind ``fd``."""
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def append(
    fd: int, path: Path, text: str, before: bytes | None = None, sync: bool = True
) -> tuple[int, int]:
    """Append ``text`` (whole lines) as one write; returns its 1-based first and last line.

    A file that does not end in a newline gets one first. ``before`` is the file's content
    when the caller has just read it under the lock.
    """
    check_size(text)
    data = text.encode("utf-8")
    if before is None:
        before = read_locked(fd)
    lead = b"\n" if before and not before.endswith(b"\n") else b""
    first = before.count(b"\n") + len(lead) + 1
    _write_all(fd, lead + data, path, len(before), sync)
    last = first + data.rstrip(b"\n").count(b"\n")
    return first, last


def _write_all(fd: int, data: bytes, path: Path, old_size: int, sync: bool = True) -> None:
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, "short write")
        if sync:
            _fdatasync(fd)  # the data and the new size; an append changes nothing else
    except OSError as exc:
        # Whole entry or nothing: cut back whatever part of it reached the file.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, old_size)
            os.fsync(fd)
        full = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
        reason = "the disk is full" if full else exc.strerror
        raise WriteError(f"could not write to {path} ({reason}); the file is unchanged") from exc
    if old_size == 0:  # a new file: its name in the folder must last too
        _fsync_folder(path.parent)


_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has only fsync


def sync_files(root: Path, rels: set[str]) -> dict[str, WriteError]:
    """Put what was appended to these workspace files on disk; the files that failed.

    A sync covers every write to the file, whichever descriptor made it."""
    failed: dict[str, WriteError] = {}
    for rel in sorted(rels):
        try:
            opened = open_for_write(root, rel, create=False)
            try:
                _fdatasync(opened.fd)
            finally:
                opened.close()
        except (OSError, PathRefused) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            failed[rel] = WriteError(
                f"could not make {rel} durable ({reason}); what was appended may be lost"
            )
    return failed


def replace_text(
    fd: int, path: Path, before: bytes, after: bytes, at: tuple[int, str] | None = None
) -> None:
    """Replace the file's content ``before`` with ``after`` by rename, unless it changed.

    ``at`` is ``(folder descriptor, name)`` of the file as ``locked`` opened it; the new
    file is made and renamed there, so a symlink is never replaced by a regular file.
    """
    if read_locked(fd) != before:
        raise WriteError(f"{path} changed while memd was updating it; nothing was written")
    mode = os.fstat(fd).st_mode & 0o777
    folder, name = at if at is not None else (None, path.name)
    own_folder = folder is None
    tmp = None
    try:
        if folder is None:
            folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        tmp = f".memd-{name}.{secrets.token_hex(4)}.tmp"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode,
                      dir_fd=folder)  # fmt: skip
        try:
            os.fchmod(out, mode)
            _write_fully(out, after)
            os.fsync(out)
        finally:
            os.close(out)
        # Someone who saved without taking our lock since we read: keep their version. A
        # link put in the file's place meanwhile is refused, never replaced.
        try:
            current = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise PathRefused(
                f"{path} became a symbolic link while memd was updating it; nothing was written"
            ) from None
        try:
            same = os.fstat(current).st_ino == os.fstat(fd).st_ino
            if not same or read_locked(current) != before:
                raise WriteError(f"{path} changed while memd was updating it; nothing was written")
        finally:
            os.close(current)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        tmp = None
        os.fsync(folder)
    except OSError as exc:
        raise WriteError(
            f"could not update {path} ({exc.strerror}); the file is unchanged"
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
        if own_folder and folder is not None:
            os.close(folder)


def _write_fully(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


# Where an entry of a category goes: ``(workspace-relative file, header of a new file)``.
Target = Callable[[str], tuple[str, str]]


def entry_block(entry: Entry, clock: str) -> str:
    """``## HH:MM — title`` then the text, as appended to a note (a line that looks like a
    key line escaped, see ``memd.write.keylines``)."""
    title = " ".join((entry.title or _first_words(entry.text)).split())
    return f"\n## {clock} — {title}\n\n{escape_free_text(entry.text.strip())}\n"


def _first_words(text: str, limit: int = 60) -> str:
    line = text.strip().splitlines()[0].lstrip("#>-*+ ").strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def already_there(content: bytes, text: str) -> bool:
    """Whether the file already holds ``text`` as whole paragraphs (whitespace aside)."""
    want = _paragraphs(text)
    if not want:
        return False
    decoded = content.decode("utf-8", "replace")
    # Most entries are new: one search for the first paragraph's words, in order with any
    # whitespace between, rules them out without splitting a long note into paragraphs.
    words = want[0].split(" ")
    if max(words, key=len) not in decoded:
        return False
    # A literal start lets the regex engine skip ahead fast; the start of a word is checked
    # by hand (a look-behind would make it try every position).
    pattern = re.compile(r"\s+".join(map(re.escape, words)) + r"(?!\S)")
    starts = (m.start() for m in pattern.finditer(decoded))
    if not any(at == 0 or decoded[at - 1].isspace() for at in starts):
        return False
    have = _paragraphs(decoded)
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def check_one_line(param: str, value: str) -> None:
    """Refuse a key, category or title holding a control character (``\\r``, ``\\t``, ...)."""
    if m := _CONTROL.search(value):
        raise InvalidParams(
            param,
            f"may not contain control characters (found {m.group()!r} at position {m.start()})",
        )


def check_size(text: str) -> None:
    """Refuse an entry over ``MAX_ENTRY_BYTES`` before anything is opened."""
    size = len(text.encode("utf-8"))
    if size > MAX_ENTRY_BYTES:
        raise InvalidParams("text", f"entry is {size} bytes; the limit is {MAX_ENTRY_BYTES}")


def flush_entries(
    root: Path,
    entries: list[Entry],
    target: Target,
    clock: str,
    core_clock: str | None = None,
    sync: bool = True,
) -> tuple[list[Written], list[dict]]:
    """Append each entry to the file ``target`` gives for it; skip text already there.
    ``core_clock`` heads core entries: MEMORY.md's name has no date, so it carries one.

    With ``sync`` False the data is not yet on disk: the caller runs ``sync_files`` on the
    written paths before it answers (group commit: one sync for many flushes)."""
    for entry in entries:
        check_size(entry.text)
    written, skipped = [], []
    for n, entry in enumerate(entries):
        rel, header = target(entry.target)
        with locked(root, rel, header) as f:
            content = read_locked(f.fd)
            escaped = escape_free_text(entry.text)
            if already_there(content, entry.text) or (
                escaped != entry.text and already_there(content, escaped)
            ):
                skipped.append({"entry": n, "path": rel, "reason": "already in the file"})
                continue
            block = entry_block(
                entry, core_clock if entry.target == "core" and core_clock else clock
            )
            first, last = append(f.fd, f.path, block, content, sync)
        # The block starts with a blank line; the entry is its heading to its last line.
        written.append(Written(rel, first + 1, last))
    return written, skipped


def append_under(
    root: Path, rel: str, header: str, heading: str, line: str
) -> tuple[Written, bool]:
    """Append ``- line`` to ``rel`` under ``## heading`` (written first unless it is the
    file's last heading); returns where, and False when that line is already there."""
    item = f"- {escape_free_text(' '.join(line.split()))}"
    with locked(root, rel, header) as f:
        before = read_locked(f.fd)
        text = _decode(before, rel)
        lines = [x.rstrip() for x in text.splitlines()]
        if item in lines:
            at = lines.index(item) + 1
            return Written(rel, at, at), False
        headings = [x.strip() for x in lines if x.startswith("#")]
        block = f"{item}\n" if headings[-1:] == [f"## {heading}"] else f"\n## {heading}\n\n{item}\n"
        _, last = append(f.fd, f.path, block, before)
        return Written(rel, last, last), True


def store_key(root: Path, rel: str, header: str, key: str, content: str) -> tuple[Written, bool]:
    """Keep one ``- **key**: content`` line in ``rel``; returns where, and if it replaced one."""
    line = key_line(key, content)
    with locked(root, rel, header) as f:
        before = read_locked(f.fd)
        text = _decode(before, rel)
        match = _one_key_line(text, key, rel)
        if match is None:
            first, last = append(f.fd, f.path, line + "\n")
            return Written(rel, first, last), False
        after = text[: match.start] + line + text[match.end :]
        replace_text(f.fd, f.path, before, after.encode("utf-8"), (f.folder_fd, f.name))
        return Written(rel, match.line, match.line), True


def forget_key(root: Path, rel: str, key: str) -> bool:
    """Remove the key's line from ``rel``; False if it was not there."""
    if not os.path.lexists(root / rel):
        return False
    with locked(root, rel, create=False) as f:
        before = read_locked(f.fd)
        text = _decode(before, rel)
        match = _one_key_line(text, key, rel)
        if match is None:
            return False
        after = text[: match.start] + text[match.end + 1 :]
        replace_text(f.fd, f.path, before, after.encode("utf-8"), (f.folder_fd, f.name))
        return True


def _one_key_line(text: str, key: str, rel: str) -> KeyLine | None:
    matches = key_lines(text, key)
    if len(matches) > 1:
        lines = ", ".join(str(m.line) for m in matches)
        raise WriteError(
            f"key {key!r} appears on {len(matches)} lines of {rel} (lines {lines}); fix it by hand"
        )
    return matches[0] if matches else None


def _decode(data: bytes, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WriteError(
            f"{rel} is not valid UTF-8 (byte {exc.start}); memd will not rewrite it"
        ) from None


def list_keys(root: Path, rels: list[str]) -> list[dict]:
    """Every key line (``memd.write.keylines``) in the given files."""
    found = []
    for rel in rels:
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found.extend(
            {"key": k.key, "path": rel, "line": k.line, "value": key_value(text, k)}
            for k in key_lines(text)
        )
    return found
