"""One workspace's publishing to the team store, inside the daemon.

After an index pass or a batch of vectors (and once a minute), a publish pass runs in a
thread. While the database is away, it waits longer each time and says so; local indexing,
writes and search never wait for it, and the next pass publishes all that is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import os
import socket
import time
from pathlib import Path

from memd.config import Team
from memd.errors import StoreError
from memd.index.publish import PublishReport
from memd.log import Tally, get_logger
from memd.memory import Memory
from memd.serve.supervise import Supervised
from memd.serve.watcher import wait_event
from memd.sources.layout import is_session_path
from memd.store.dsn import describe
from memd.store.postgres import PostgresStore
from memd.store.postgres_lease import RENEWALS, Lease, LeaseHeld
from memd.store.private import load_json, save_json

log = get_logger()
_PUBLISHED = Tally("published")  # after each edit: a summary a minute

_EVERY_S = 60.0  # a pass even without a kick: vectors saved elsewhere, a database back
_COOLDOWN_MIN, _COOLDOWN_MAX = 1.0, 60.0
_STOP_WAIT_S = 3.0  # a stopping daemon waits this long for its pass's current file


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
        self._where = f"{team.host_name()}@{describe(team.dsn or '')}"
        self._published, self.published_at = self._load()
        self._lease = Lease(
            holder_id(memory.config.state_dir),
            f"{socket.gethostname()} pid {os.getpid()}, state folder {memory.config.state_dir}",
            team.lease_s,
            former_holder(memory.config.state_dir),
        )
        self._passed = 0.0  # when the last publish pass began (monotonic)
        self.refused: dict[str, tuple[str, str]] = {}  # path -> (hash, why), as last refused
        self._ticked = time.monotonic()  # when the pass running last made progress
        self._running: asyncio.Future | None = None  # the call in a thread, if any
        self.task = Supervised("publish")  # the daemon's supervisor fills it in

    def info(self) -> dict:
        state = self.state
        if self.task.restarting:
            state = f"not running: {self.task.last_error}; restarting (crash {self.task.crashes})"
        return {
            "host": self.team.host_name(),
            "state": state,
            "outbox": self.outbox,
            "pending": self.kick.is_set() or self.state != "idle",
            "published_at": self.published_at,
            "refused": len(self.refused),
        } | ({"refused_files": refused_line(self.refused)} if self.refused else {})

    async def run(self) -> None:
        remote: PostgresStore | None = None
        cooldown = 0.0
        self.kick.set()
        await self.ready.wait()
        # The lease is renewed on a timer whatever there is to publish: an idle daemon holds
        # its scope as surely as a busy one (another daemon would otherwise take it).
        renew_every = self.team.lease_s / RENEWALS
        try:
            while not self.stop.is_set():
                await wait_event(self.kick, min(_EVERY_S, renew_every))
                if self.stop.is_set():
                    break
                due = self.kick.is_set() or time.monotonic() - self._passed >= _EVERY_S
                self.kick.clear()
                try:
                    if remote is None:
                        remote = await self._watched(self._open)
                    if not due:
                        self._ended(await self._watched(remote.renew_lease))
                        continue
                    self.state, self._passed = "publishing", time.monotonic()
                    report = await self._watched(self._pass, remote)
                except StoreError as exc:
                    if self.stop.is_set():
                        break  # a pass the daemon's stop cut short: the next run goes on
                    if remote is not None:
                        remote.close()
                        remote = None
                    await self._count()
                    cooldown = min(max(cooldown * 2, _COOLDOWN_MIN), _COOLDOWN_MAX)
                    if isinstance(exc, LeaseHeld):
                        cooldown = _COOLDOWN_MAX  # no hurry: the other daemon publishes
                        self.state = f"refused: {exc}"
                        log.error("team_publish_refused", workspace=self.memory.workspace.name,
                                  error=str(exc))  # fmt: skip
                    else:
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
                for path in report.refused.keys() - self.refused.keys():
                    log.warning("team_file_refused", workspace=self.memory.workspace.name,
                                path=path, reason=report.refused[path][1])  # fmt: skip
                self.refused = report.refused
                if report.published or report.removed:
                    _PUBLISHED.add(workspace=self.memory.workspace.name, files=report.published,
                                   removed=report.removed, vectors=report.vectors,
                                   seconds=round(report.seconds, 3))  # fmt: skip
        finally:
            if self._running is not None and not self._running.done():
                # A pass in its thread stops after its file (``_tick``): no publishing
                # outlives the daemon, and the connection is not closed under it.
                await asyncio.wait({self._running}, timeout=_STOP_WAIT_S)
            if self._running is not None and self._running.done() and not self._running.cancelled():
                self._running.exception()  # seen: its end is the stop's own, not news
            if remote is not None:
                # Stopping: the lease goes with this daemon, so another may publish at once.
                await asyncio.to_thread(_let_go, remote)

    def _pass(self, remote: PostgresStore) -> PublishReport:
        """One publish pass (in a thread): the lease first, so that a pass with nothing to
        write holds it too."""
        self._ended(remote.renew_lease())
        return self.memory.publish(remote, self._tick, self.refused)

    def _ended(self, sessions: int) -> None:
        if sessions:  # a host held the database past its bound (memd.store.postgres_sessions)
            log.warning("team_sessions_ended", workspace=self.memory.workspace.name,
                        sessions=sessions)  # fmt: skip

    def _tick(self) -> None:
        """A file published (in the pass's thread): progress, and the end of the pass when
        the daemon stops."""
        self._ticked = time.monotonic()
        if self.stop.is_set():
            raise StoreError("the daemon is stopping: the next run publishes the rest")

    async def _watched(self, fn, *args):
        """``fn(*args)`` in a thread; while it makes no progress for ``team.timeout_s`` (a
        server that stopped answering: TCP still acknowledges a frozen process), status
        says so and counts the outbox. The call itself ends by its own timeouts."""
        self._ticked = time.monotonic()
        task = self._running = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        limit = self.team.timeout_s
        while not (await asyncio.wait({task}, timeout=limit))[0]:
            silent = time.monotonic() - self._ticked
            if silent >= limit:
                self.state = (f"waiting for the team database {describe(self.team.dsn or '')}: "
                              f"no answer for {silent:.0f} s")  # fmt: skip
                await self._count()
        return task.result()

    async def _count(self) -> None:
        if self._published is not None:  # what the last good pass left there
            self.outbox = await asyncio.to_thread(self._count_outbox)

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
        store = PostgresStore.open(team.dsn, team.host_name(), self.memory.workspace.name)
        store.lease = self._lease
        return store


def refused_line(refused: dict[str, tuple[str, str]], most: int = 5) -> str:
    """The files the team database would not take, each with why (``most`` of them)."""
    named = [f"{path} ({why})" for path, (_, why) in sorted(refused.items())[:most]]
    more = f"; and {len(refused) - most} more" if len(refused) > most else ""
    return "; ".join(named) + more


def holder_id(state_dir: Path) -> str:
    """This installation's lasting name as a publisher: its machine's and its state
    folder's. After a restart, even with the state folder made anew, it takes its lease
    back at once; a daemon elsewhere (another machine, another state folder) waits for the
    lease to run out."""
    machine = socket.gethostname()
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            machine = Path(path).read_text().strip() or machine
            break
    where = f"{machine}\0{Path(os.path.abspath(state_dir)).resolve(strict=False)}"
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def former_holder(state_dir: Path) -> str | None:
    """The name memd gave this daemon before it was named by its machine and state folder
    (a uuid in ``team-holder``), if it ever did."""
    try:
        return (state_dir / "team-holder").read_text().strip() or None
    except OSError:
        return None


def _let_go(remote: PostgresStore) -> None:
    remote.release_lease()
    remote.close()
