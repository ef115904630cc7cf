"""One workspace's publishing to the team store, inside the daemon.

After an index pass or a batch of vectors (and once a minute), a publish pass runs in a
thread. While the database is away, it waits longer each time and says so; local indexing,
writes and search never wait for it, and the next pass publishes all that is left.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from memd.config import Team
from memd.errors import StoreError
from memd.log import Tally, get_logger
from memd.memory import Memory
from memd.serve.watcher import wait_event
from memd.sources.layout import is_session_path
from memd.store.postgres import PostgresStore
from memd.store.private import load_json, save_json

log = get_logger()
_PUBLISHED = Tally("published")  # after each edit: a summary a minute

_EVERY_S = 60.0  # a pass even without a kick: vectors saved elsewhere, a database back
_COOLDOWN_MIN, _COOLDOWN_MAX = 1.0, 60.0


class Publisher:
    """Publishes one workspace; ``info()`` is what ``status`` shows of it."""

    def __init__(
        self, memory: Memory, team: Team, stop: asyncio.Event, ready: asyncio.Event
    ) -> None:
        self.memory, self.team, self.stop = memory, team, stop
        self.ready = ready  # the first index pass has ended: publish no half-indexed copy
        self.kick = asyncio.Event()
        self.state = "starting"
        self.outbox: int | None = None  # files the database lacks or holds old (None: unknown)
        self.published_at: str | None = None
        # path -> hash as the database has it, kept in the state folder: after a restart
        # with the database away, the outbox is still known.
        self._record = memory.config.state_dir / f"team-published-{memory.workspace.name}.json"
        self._where = f"{team.host_name()}@{(team.dsn or '').rsplit('@', 1)[-1]}"
        self._published, self.published_at = self._load()

    def info(self) -> dict:
        return {
            "host": self.team.host_name(),
            "state": self.state,
            "outbox": self.outbox,
            "pending": self.kick.is_set() or self.state != "idle",
            "published_at": self.published_at,
        }

    async def run(self) -> None:
        remote: PostgresStore | None = None
        cooldown = 0.0
        self.kick.set()
        await self.ready.wait()
        try:
            while not self.stop.is_set():
                await wait_event(self.kick, _EVERY_S)
                self.kick.clear()
                try:
                    if remote is None:
                        remote = await asyncio.to_thread(self._open)
                    self.state = "publishing"
                    report = await asyncio.to_thread(self.memory.publish, remote)
                except StoreError as exc:
                    if remote is not None:
                        remote.close()
                        remote = None
                    if self._published is not None:  # what the last good pass left there
                        self.outbox = await asyncio.to_thread(self._count_outbox)
                    cooldown = min(max(cooldown * 2, _COOLDOWN_MIN), _COOLDOWN_MAX)
                    self.state = f"waiting {cooldown:g} s for the team database: {exc}"
                    log.warning("team_unavailable", workspace=self.memory.workspace.name,
                                error=str(exc), retry_in_s=cooldown)  # fmt: skip
                    await wait_event(self.stop, cooldown)
                    self.kick.set()
                    continue
                cooldown = 0.0
                self._published = report.held  # as the pass saw it, not as the files are now
                self.published_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
                await asyncio.to_thread(self._save, report.held)
                self.state, self.outbox = "idle", len(report.skipped)
                if report.published or report.removed:
                    _PUBLISHED.add(workspace=self.memory.workspace.name, files=report.published,
                                   removed=report.removed, vectors=report.vectors,
                                   seconds=round(report.seconds, 3))  # fmt: skip
        finally:
            if remote is not None:
                remote.close()

    def _count_outbox(self) -> int:
        """Files changed, added or removed since the last good pass (read locally only)."""
        assert self._published is not None
        transcripts = self.team.transcripts
        rows = self.memory.db.read(lambda store: store.files())
        now = {p: r.hash for p, r in rows.items() if transcripts or not is_session_path(p)}
        then = self._published
        return sum(then.get(p) != h for p, h in now.items()) + len(then.keys() - now.keys())

    def _load(self) -> tuple[dict[str, str] | None, str | None]:
        saved = load_json(self._record)  # none, unreadable: known after the next good pass
        try:
            if saved["where"] == self._where:  # the same host in the same database
                return dict(saved["files"]), saved["published_at"]
        except (KeyError, TypeError, ValueError):
            pass
        return None, None

    def _save(self, published: dict[str, str]) -> None:
        data = {"where": self._where, "published_at": self.published_at, "files": published}
        try:
            save_json(self._record, data)
        except OSError as exc:  # a full disk costs the outbox after a restart, nothing more
            log.warning("team_record_unsaved", path=str(self._record), error=exc.strerror)

    def _open(self) -> PostgresStore:
        team = self.team
        assert team.dsn is not None  # a publisher exists only for a team with a database
        return PostgresStore.open(team.dsn, team.host_name(), self.memory.workspace.name)
