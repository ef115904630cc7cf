"""What a walk of a workspace finds: one file as it is on disk (``FileEntry``), the stamp
the index compares to skip it unread, and a walk's result against the index (``Scan``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any, NamedTuple


class FileEntry(NamedTuple):
    """One indexable Markdown file as found on disk (a tuple: a walk makes one per file,
    and a frozen dataclass took several times as long to build)."""

    path: str  # shown in results: relative, '/'-separated
    abspath: str  # as walked (may pass through symlinks)
    realpath: str
    source: str  # core | daily | memory | extra
    date: str | None  # YYYY-MM-DD for daily notes
    size: int
    mtime_ns: int
    stamp: int | None = None  # ``stat_stamp`` of the stat the walk took (None: not taken)


class Scan(NamedTuple):
    """The files to look at, and the result paths of those the index holds as they are."""

    changed: list[FileEntry]
    unchanged: list[str]
    unnamed: tuple[str, ...] = ()  # paths of files named in bytes that are not UTF-8


Known = Mapping[str, Any] | None  # result path: the index's row (realpath, size, mtime_ns)


def stat_stamp(st: os.stat_result) -> int:
    """What the index compares (in its ``mtime_ns`` column) to skip a file unread: mtime,
    ctime and inode together. An edit that keeps the size and puts the old mtime back
    still moves ctime (which no one can set), and a save by rename changes the inode."""
    raw = b"%d:%d:%d" % (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)  # one per file walked
    return int.from_bytes(hashlib.blake2b(raw, digest_size=7).digest(), "big")


# Why a file whose name is not valid UTF-8 is not indexed (SQLite's text, JSON answers
# and the team database hold no such name; os.fsdecode gave it as lone surrogates).
UNNAMED = "its name is not valid UTF-8: rename the file to have it indexed"


def holdable(path: str) -> bool:
    """Whether the index can hold a file named ``path`` (its name is valid UTF-8)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(path: str) -> str:
    """``path`` as it can be printed: bytes that are not UTF-8 as ``\\xff``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def named(e: FileEntry) -> bool:
    """Whether the index can hold the file ``e`` (its names are UTF-8)."""
    return holdable(e.path) and holdable(e.abspath) and holdable(e.realpath)
