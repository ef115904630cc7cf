"""Know at once that a file changed: a second inotify instance, read without waiting.

watchfiles hands changes on after a short quiet period, so an answer computed in between
would say ``stale: false`` about an index that misses a write the client has already made.
The kernel queues an inotify event before ``write(2)`` returns, so reading this queue
(without blocking) just before answering tells exactly which writes happened before the
request. Linux only: elsewhere a ``Tripwire`` is inert (``active`` is False) and callers
compare the files' stat with the index instead.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import threading
from collections.abc import Callable, Iterable

from memd.log import get_logger

log = get_logger()

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE) | (
    _IN_DELETE | _IN_ONLYDIR
)
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


class Tripwire:
    """Watches ``flat`` folders and ``deep`` trees; ``drain`` returns what changed since.

    ``keep`` maps a changed path to the path to report, or None to ignore it.
    """

    def __init__(
        self,
        flat: Iterable[str],
        deep: Iterable[str],
        keep: Callable[[str], str | None],
        follow: Callable[[str], bool] = lambda folder: True,
    ) -> None:
        self.keep = keep
        self.follow = follow
        self._lock = threading.Lock()
        self._fd = -1
        self._dirs: dict[int, tuple[str, bool]] = {}  # wd -> (folder, its subfolders too)
        self._libc = None
        if not sys.platform.startswith("linux"):
            return
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
            fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            log.warning("tripwire_unavailable", error=os.strerror(ctypes.get_errno()))
            return
        self._fd = fd
        complete = all([self._add(folder, False) for folder in flat])
        complete &= all([self._add_tree(folder) for folder in deep])
        if not complete:
            self._give_up()

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def drain(self) -> tuple[set[str], bool]:
        """Paths changed since the last drain, and whether events were lost (the queue
        overflowed, or a folder could not be watched): then only a full pass is sure."""
        changed: set[str] = set()
        lost = False
        with self._lock:
            while self._fd >= 0:
                try:
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    lost = True
                    break
                lost |= self._parse(data, changed)
        return changed, lost

    def _give_up(self) -> None:
        """A folder could not be watched (the system's inotify watch limit, most likely): a
        tripwire with holes would hide changes, so it stops and the watcher reports what
        watchfiles sees. Call with the lock held, or in ``__init__``."""
        log.warning(
            "tripwire_unavailable",
            reason="a folder could not be watched",
            error=os.strerror(ctypes.get_errno()) if ctypes.get_errno() else None,
        )
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _parse(self, data: bytes, changed: set[str]) -> bool:
        lost = False
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
            raw = data[offset + _HEADER.size : offset + _HEADER.size + size]
            offset += _HEADER.size + size
            if mask & _IN_Q_OVERFLOW:
                lost = True
                continue
            folder, recursive = self._dirs.get(wd, (None, False))
            if mask & _IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            if folder is None:
                continue
            name = os.fsdecode(raw.rstrip(b"\0"))
            path = os.path.join(folder, name) if name else folder
            if (
                recursive
                and mask & _IN_ISDIR
                and mask & (_IN_CREATE | _IN_MOVED_TO)
                and not self._add_tree(path)
            ):
                self._give_up()
                lost = True
            reported = self.keep(path)
            if reported is not None:
                changed.add(reported)
        return lost

    def _add_tree(self, top: str) -> bool:
        folders, _ = folders_below(top, lambda path: bool(self.keep(path)) and self.follow(path))
        return all([self._add(folder, True) for folder in folders])

    def _add(self, folder: str, recursive: bool) -> bool:
        assert self._libc is not None
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
        if wd < 0:
            # Gone already, not a folder, or not readable (watchfiles skips it too): no
            # hole. Anything else (ENOSPC: the watch limit) is one.
            return ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR, errno.EACCES)
        self._dirs[wd] = (folder, recursive)
        return True


def folders_below(top: str, enter: Callable[[str], bool]) -> tuple[list[str], bool]:
    """The folders of the tree at ``top`` (links followed, loops cut) that ``enter``
    accepts, and whether it refused any."""
    folders, refused, seen = [], False, set()
    for folder, subfolders, _files in os.walk(top, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link loop
            subfolders.clear()
            continue
        seen.add(real)
        folders.append(folder)
        kept = [d for d in subfolders if enter(os.path.join(folder, d))]
        refused |= len(kept) < len(subfolders)
        subfolders[:] = kept
    return folders, refused
