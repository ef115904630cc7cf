"""The flush ledger: a ``flush_id`` seen before gets its first answer back, across restarts.

It lives beside the indexes in the state folder but in its own file, so rebuilding an
index never forgets which flushes were written. The ledger only speeds up and sharpens
what the notes already say: a flush whose text is in its file is skipped anyway. So a
damaged ledger is moved aside and started afresh, and one that cannot be written (a full
disk, a read-only folder) costs a warning, never a written entry reported as failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import apsw

from memd.errors import StoreError
from memd.log import get_logger
from memd.store.private import private_file, private_folder

log = get_logger()
T = TypeVar("T")

_DAMAGE = (apsw.CorruptError, apsw.NotADBError)


class FlushLedger:
    """``(workspace, flush_id) → first answer``, kept in ``flush-ledger.sqlite``."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "flush-ledger.sqlite"
        self.db: apsw.Connection | None = None
        self._run(lambda db: None)  # open now: a bad state folder is reported at once

    def get(self, workspace: str, flush_id: str) -> dict | None:
        row = self._run(
            lambda db: db.execute(
                "SELECT answer FROM flushes WHERE workspace = ? AND flush_id = ?",
                (workspace, flush_id),
            ).fetchone()
        )
        if not row:
            return None
        try:
            return json.loads(row[0])
        except ValueError:  # a damaged row: as if never recorded
            return None

    def put(self, workspace: str, flush_id: str, answer: dict) -> None:
        def insert(db: apsw.Connection) -> None:
            with db:
                db.execute(
                    "INSERT OR IGNORE INTO flushes VALUES (?, ?, ?, ?)",
                    (workspace, flush_id, json.dumps(answer), time.time()),
                )

        self._run(insert)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def _run(self, fn: Callable[[apsw.Connection], T]) -> T:
        """``fn`` on the open ledger; damage moves the file aside and tries once more on a
        new one; any other failure is a ``StoreError`` naming the file."""
        for attempt in (1, 2):
            try:
                return fn(self._connection())
            except _DAMAGE as exc:
                if attempt == 2:
                    raise StoreError(f"flush ledger {self.path} is damaged: {exc}") from exc
                self._move_aside(str(exc))
            except (OSError, apsw.Error) as exc:
                self.close()  # the next call opens it again: the folder may be back
                raise StoreError(f"cannot use the flush ledger {self.path}: {exc}") from exc
        raise AssertionError("unreachable")

    def _connection(self) -> apsw.Connection:
        if self.db is None:
            private_folder(self.path.parent)
            private_file(self.path)
            db = apsw.Connection(str(self.path))
            try:
                db.setbusytimeout(5000)
                # WAL without a sync per commit: a record lost to a power cut costs nothing
                # (the text in the file still stops a second write), and a flush waits less.
                db.execute("PRAGMA journal_mode=WAL").fetchall()
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS flushes(workspace TEXT NOT NULL, "
                    "flush_id TEXT NOT NULL, answer TEXT NOT NULL, at REAL NOT NULL, "
                    "PRIMARY KEY(workspace, flush_id))"
                )
            except BaseException:
                db.close()
                raise
            self.db = db
        return self.db

    def _move_aside(self, reason: str) -> None:
        self.close()
        aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
        log.warning("flush_ledger_corrupt", path=str(self.path), moved_to=aside, error=reason)
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
