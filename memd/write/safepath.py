"""Where memd may write: files inside a workspace's real folder, never through a link out.

Reading follows symlinks (a note linked in from elsewhere is indexed and searchable);
writing never leaves the workspace. Every folder from the workspace's real root down is
opened one at a time, relative to the one before: a folder that is a symlink is entered
only if it resolves inside the root. The file itself is opened with ``O_NOFOLLOW``: a
link to a regular file inside the workspace is written at its target, a link out of the
workspace or to nothing is refused with ``PathRefused`` naming the link. Replacing a file
renames inside the folder opened here, so a link is never turned into a regular file.

A hard link is the same file under another name, and nothing says where its other names
are: a file with more than one link is written only if all of them are found inside the
workspace's real folder; otherwise it is refused like a symbolic link out of it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memd.errors import PathRefused

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# O_NONBLOCK: opening a named pipe that someone left at a note's path must not hang the
# writer; it is refused below as not a regular file.
_FILE = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", errno.ELOOP))


@dataclass
class OpenFile:
    """A workspace file open for writing: its descriptor, its folder's, and its name there."""

    fd: int
    folder_fd: int
    name: str  # inside folder_fd (a followed link's target name)
    path: Path  # as asked for (root/rel): what messages show

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.folder_fd)


def inside(real: str, real_root: str) -> bool:
    """Whether the resolved path ``real`` is ``real_root`` or lies below it."""
    return real == real_root or real.startswith(real_root.rstrip("/") + "/")


def open_for_write(root: Path, rel: str, create: bool = True) -> OpenFile:
    """Open ``root/rel`` (a '/'-separated workspace-relative path) for appending.

    Missing folders (and, with ``create``, the file) are made. Raises ``PathRefused`` for
    a link out of the workspace or to nothing, ``OSError`` for anything else.
    """
    return _open(Path(os.path.realpath(root)), rel, create, root / rel, rel, follow=True)


def _open(
    real_root: Path, rel: str, create: bool, path: Path, shown: str, follow: bool
) -> OpenFile:
    *folders, name = rel.split("/")
    folder_fd, here = _open_folder(str(real_root), folders, create, shown)
    try:
        try:
            fd = os.open(name, _FILE | (os.O_CREAT if create else 0), 0o644, dir_fd=folder_fd)
        except OSError as exc:
            link = os.path.join(here, name)
            if exc.errno not in _LINK_ERRORS or not os.path.islink(link):
                raise
            target = os.path.realpath(link)
            if not inside(target, str(real_root)):
                raise _refused(shown, target, real_root) from None
            if not follow or not os.path.isfile(target):
                raise PathRefused(
                    f"{shown} is a symbolic link to {target}, which is not a file; "
                    "memd never creates a file through a link (replace the link with a file)"
                ) from None
            os.close(folder_fd)
            inner = os.path.relpath(target, real_root)
            return _open(real_root, inner, False, path, shown, follow=False)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            if st.st_nlink > 1:
                _check_hard_links(st, str(real_root), shown)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except OSError:
            os.close(fd)
            raise
        return OpenFile(fd, folder_fd, name, path)
    except BaseException:
        os.close(folder_fd)
        raise


def _open_folder(real_root: str, parts: list[str], create: bool, shown: str) -> tuple[int, str]:
    """``(descriptor, real path)`` of the folder ``parts`` below ``real_root``."""
    fd = os.open(real_root, _FOLDER)
    here = real_root
    try:
        for part in parts:
            nxt = os.path.join(here, part)
            try:
                new = os.open(part, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                new = os.open(part, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in _LINK_ERRORS or not os.path.islink(nxt):
                    raise
                nxt = os.path.realpath(nxt)
                if not inside(nxt, real_root):
                    link = os.path.relpath(os.path.join(here, part), real_root)
                    raise _refused(shown, nxt, Path(real_root), link) from None
                new = os.open(nxt, _FOLDER)
            os.close(fd)
            fd, here = new, nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, here


def _check_hard_links(st: os.stat_result, real_root: str, shown: str) -> None:
    """Refuse a file with more names than the workspace holds: one is outside it."""
    found = _names_inside(real_root, (st.st_dev, st.st_ino), st.st_nlink)
    if found < st.st_nlink:
        raise PathRefused(
            f"{shown} is a hard link: the file has {st.st_nlink} names, {found} inside "
            f"the workspace {real_root}; memd never writes to a file that "
            "also lives outside the workspace (make it a file of its own: copy it, then "
            "move the copy over it)"
        )


def _names_inside(real_root: str, file: tuple[int, int], enough: int) -> int:
    """How many names the file ``(st_dev, st_ino)`` has below ``real_root``, up to ``enough``.

    Hard links never cross file systems, so folders on another device are not entered;
    symbolic links are not followed (what they reach is outside, or counted where it is)."""
    dev, ino = file
    found = 0
    folders = [real_root]
    while folders and found < enough:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue  # a folder memd cannot read holds no name it could show
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.stat(follow_symlinks=False).st_dev == dev:
                        folders.append(entry.path)
                elif entry.inode() == ino and entry.stat(follow_symlinks=False).st_dev == dev:
                    found += 1
            except OSError:
                continue
    return found


def _refused(shown: str, target: str, root: Path, link: str | None = None) -> PathRefused:
    what = (
        f"{shown} passes through {link}, a symbolic link" if link else f"{shown} is a symbolic link"
    )
    return PathRefused(
        f"{what} to {target}, outside the workspace {root}; memd never writes through a "
        "link out of the workspace (replace the link with a file or a folder inside it)"
    )
