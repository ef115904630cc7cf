"""The flush ledger: a ``flush_id`` seen before gets its first answer back, across restarts.

It lives beside the indexes in the state folder but in its own file, so rebuilding an
index never forgets which flushes were written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw

from memd.errors import StoreError
from memd.private import private_file, private_folder


class FlushLedger:
    """``(workspace, flush_id) → first answer``, kept in ``flush-ledger.sqlite``."""

    def __init__(self, state_dir: Path) -> None:
        path = state_dir / "flush-ledger.sqlite"
        try:
            private_folder(state_dir)
            private_file(path)
            self.db = apsw.Connection(str(path))
            self.db.setbusytimeout(5000)
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS flushes(workspace TEXT NOT NULL, "
                "flush_id TEXT NOT NULL, answer TEXT NOT NULL, at REAL NOT NULL, "
                "PRIMARY KEY(workspace, flush_id))"
            )
        except (OSError, apsw.Error) as exc:
            raise StoreError(f"cannot open the flush ledger {path}: {exc}") from exc

    def get(self, workspace: str, flush_id: str) -> dict | None:
        row = self.db.execute(
            "SELECT answer FROM flushes WHERE workspace = ? AND flush_id = ?", (workspace, flush_id)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, workspace: str, flush_id: str, answer: dict) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR IGNORE INTO flushes VALUES (?, ?, ?, ?)",
                (workspace, flush_id, json.dumps(answer), time.time()),
            )

    def close(self) -> None:
        self.db.close()
