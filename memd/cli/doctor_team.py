"""``memd doctor``'s team checks: whether this host can publish, and which of a
workspace's files the team database would not take."""

from __future__ import annotations

from memd.cli.check import Check
from memd.config import Config, WorkspaceConfig
from memd.errors import MemdError


def team_check(config: Config) -> Check:
    """Whether this host can publish: the database answers, has memd's tables, and this
    role publishes as this host."""
    from memd.store import postgres_admin

    team, admin_fix = config.team, "memd team {} --dsn <an administrator's DSN>"
    try:
        me = postgres_admin.whoami(team.dsn or "")
    except MemdError as exc:
        return Check("team", "fail", str(exc), "check team.dsn, the server, PGPASSWORD/~/.pgpass")
    if me["version"] is None:
        return Check("team", "fail", "the database has no memd tables", admin_fix.format("init"))
    host = team.host_name()
    if me["host"] != host and not me["super"]:
        where = f"publishes as {me['host']}" if me["host"] else "may not publish"
        fix = admin_fix.format(f"add-host {me['role']} {host}")
        return Check("team", "fail", f"role {me['role']} {where}, not as {host}", fix)
    return Check(
        "team", "ok", f"PostgreSQL {me['server']}, schema {me['version']}, "
        f"role {me['role']} publishes as {host}",
    )  # fmt: skip


def refused_files(ws: WorkspaceConfig, status: dict) -> Check | None:
    """The files of ``ws`` the team database would not take (None: it publishes none)."""
    team = status.get("team")
    if not team:
        return None
    name = f"team files {ws.name}"
    if not team.get("refused"):
        return Check(name, "ok", "every file published")
    return Check(
        name,
        "warn",
        f"{team['refused']} not published, the rest are: {team['refused_files']}",
        "fix what each names (a NUL byte, a note too large, the host's share full: memd "
        "team add-host ROLE HOST --max-bytes N); an edited file is tried again",
    )
