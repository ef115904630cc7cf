"""psycopg's errors as memd's: a failure names the database and never its password, a
missing lease is ``LeaseHeld``, and what the database refuses of one file is that file's
``FileRefused`` (the rest are published)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from memd.errors import FileRefused, StoreError
from memd.store.dsn import describe, scrub
from memd.store.postgres_functions import FILE_REFUSED, HOST_FULL, NO_LEASE
from memd.store.postgres_lease import LeaseHeld


@contextlib.contextmanager
def database_errors(dsn: str) -> Iterator[None]:
    """psycopg failures as ``StoreError`` naming the database (never its password)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        said = f"team database {describe(dsn)}: {scrub(str(exc).strip(), dsn)}"
        if exc.sqlstate == NO_LEASE:
            raise LeaseHeld(said) from exc
        raise StoreError(said) from exc


@contextlib.contextmanager
def refusals(path: str, dsn: str) -> Iterator[None]:
    """What the database refuses of one file (memd's bounds, a value it cannot hold) as
    ``FileRefused``: that file is skipped, the rest are published."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        if exc.sqlstate in (FILE_REFUSED, HOST_FULL) or isinstance(exc, psycopg.DataError):
            reason = exc.diag.message_primary or str(exc).strip()
            raise FileRefused(path, scrub(reason, dsn)) from exc
        raise
