"""SQLite failures as memd errors that name the database file, for every store method."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memd.errors import IndexCorrupt, StoreError

T = TypeVar("T")


@contextlib.contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """Map SQLite failures to memd errors that name the database file."""
    try:
        yield
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        raise IndexCorrupt(f"index database {path} is corrupt: {exc}") from exc
    except apsw.FullError as exc:
        raise StoreError(f"disk full while writing index {path}") from exc
    except apsw.ReadOnlyError as exc:
        raise StoreError(f"index database {path} is read-only") from exc
    except (apsw.IOError, apsw.CantOpenError, apsw.PermissionsError, apsw.BusyError) as exc:
        raise StoreError(f"cannot use index database {path}: {exc}") from exc


def guard(method: Callable[..., T]) -> Callable[..., T]:
    """A store method whose SQLite failures become ``StoreError`` / ``IndexCorrupt``."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        with sqlite_errors(self.path):
            return method(self, *args, **kwargs)

    return wrapper
