"""One note's statements taken apart (``take_apart``), and kept between runs beside the
index, so a process that finds what is current anew (``memd index`` after an edit, a
daemon's start) takes apart only the notes that changed since.

The file is a cache of a pure function of a note's text: an entry counts only while its
note's ``(mtime_ns, size)`` is as it was, and the whole file only for the code that made
it (the statement and value readers' source). It is read only when this user owns it and
no one else may write it, and it holds what the notes say, so it is made private.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import marshal
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from types import ModuleType

from memd.review import statements as _statements_module
from memd.review import updates as _updates_module
from memd.review import values as _values_module
from memd.review import words as _words_module
from memd.review.statements import Statement, statements
from memd.review.updates import read
from memd.review.values import Said
from memd.sources.entries import FileEntry
from memd.store import fts as _fts_module  # its stop words
from memd.store import rows as _rows_module  # lines_digest
from memd.store.rows import lines_digest


@dataclass
class Taken:
    """One note's statements taken apart (``take_apart``), as of ``stamp``."""

    stamp: tuple[int, int]  # (st_mtime_ns, size) of what was read
    said: list[tuple[Statement, Said]]  # those that can state a fact, taken apart
    # line -> lines_digest of the statement's lines: those in ``said``, and in an undated
    # note every statement (each one's first-seen time is kept by its digest).
    digests: dict[int, str]


def take_apart(entry: FileEntry, text: str) -> Taken | None:
    """The statements of the note ``entry`` whose text is ``text`` (None: not a note
    whose statements are read, e.g. a vault's). Runs in the index's workers too
    (``Memory.index(current=True)``), so it is a module-level function."""
    if entry.source == "extra":
        return None
    lines = text.splitlines()
    every = statements(entry.path, text, entry.date)
    said = read(every)
    timed = every if entry.date is None else [s for s, _ in said]
    digests = {s.line: lines_digest(lines[s.line - 1 : s.last]) for s in timed}
    return Taken(stamp(entry), said, digests)


def take_file(entry: FileEntry) -> Taken | None:
    """``take_apart`` of the note ``entry`` as it is on disk (None: gone)."""
    try:
        text = Path(entry.abspath).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return take_apart(entry, text)


def stamp(e: FileEntry) -> tuple[int, int]:
    return (e.mtime_ns, e.size)


def _code() -> str:
    """What made the entries: the readers' source (an edit of any reads every note anew)."""
    readers = (_statements_module, _values_module, _words_module, _updates_module, _fts_module,
               _rows_module, sys.modules[__name__])  # fmt: skip  # this module: the layout
    return code_digest(readers)


def code_digest(modules: Iterable[ModuleType]) -> str:
    """A digest of these modules' source: what is made by their code is kept under it, so
    other code (an upgrade, an edit) makes it anew."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()


def load_kept(path: Path) -> dict[str, Taken]:
    """What ``save_kept`` kept at ``path`` (nothing when it is missing, not this user's own,
    or made by other code)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return {}
            kept = marshal.loads(f.read())
        if kept[0] != _code():
            return {}
        return {p: Taken(tuple(s), [(Statement(*a), Said(*b)) for a, b in said], digests)
                for p, (s, said, digests) in kept[1].items()}  # fmt: skip
    except (OSError, ValueError, EOFError, TypeError, IndexError, KeyError):
        return {}


def save_kept(path: Path, files: dict[str, Taken]) -> None:
    """Keep ``files`` at ``path`` (private; a reader sees the old file or the new)."""
    entries = {
        p: (t.stamp, [(_fields(s), _fields(d)) for s, d in t.said], t.digests)
        for p, t in files.items()
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps((_code(), entries)))
        os.replace(tmp, path)
    except (OSError, ValueError):  # a cache: the next run reads the notes again
        with contextlib.suppress(OSError):
            tmp.unlink()


def _fields(record: object) -> tuple:
    return _getter(type(record))(record)


@functools.cache
def _getter(kind: type) -> Callable[[object], tuple]:
    """A record's fields in order, read at C speed (tens of thousands of statements)."""
    return attrgetter(*(f.name for f in dataclasses.fields(kind)))
