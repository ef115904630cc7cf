"""``memd team``: the team database's tables, hosts, grants and what each host published."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memd.config import Config
from memd.errors import InvalidParams
from memd.store import postgres_admin as admin
from memd.store.dsn import secrets


def team(args: argparse.Namespace, config: Config) -> int:
    """Run one ``memd team`` action; prints what it did."""
    if getattr(args, "json", False) and args.action != "status":
        raise InvalidParams("json", f"--json is not available for 'memd team {args.action}'")
    dsn = _dsn(args, config)
    action, as_json = args.action, getattr(args, "json", False)
    if action == "init":
        if args.lock_timeout <= 0:
            raise InvalidParams("lock-timeout", "must be a positive number of seconds")
        version = admin.init(dsn, tuple(args.dims or (384,)), args.lock_timeout)
        print(f"team database ready (schema version {version})")
    elif action == "status":
        seen = admin.status(dsn)
        if as_json:
            print(json.dumps(seen, indent=2))
            return 0
        _print_status(seen)
    else:
        if not args.role or not args.host:
            raise InvalidParams("role", f"memd team {action} needs ROLE and HOST")
        # `memd team grant ROLE HOST --workspace NAME` means the workspace granted, as the
        # positional WORKSPACE does (not the global option: team commands use none).
        named = (args.team_workspace, getattr(args, "workspace", None))
        given = [w for w in named if w is not None]  # "" too: refused, never "every one"
        if len(set(given)) > 1:
            raise InvalidParams("workspace", "give the workspace once: WORKSPACE or --workspace")
        workspace = given[0] if given else "*"
        if action == "add-host" and given:
            raise InvalidParams("workspace", "add-host takes ROLE and HOST only")
        if action == "add-host":
            admin.add_host(dsn, args.role, args.host, args.max_bytes, args.max_hold_s,
                           args.connections)  # fmt: skip
            print(f"role {args.role} publishes as {args.host}")
        elif action == "grant":
            admin.grant(dsn, args.role, args.host, workspace)
            print(f"role {args.role} may read {args.host}/{workspace}")
        else:
            admin.revoke(dsn, args.role, args.host, workspace)
            print(f"role {args.role} may no longer read {args.host}/{workspace}")
    return 0


def _dsn(args: argparse.Namespace, config: Config) -> str:
    """The DSN to use: --dsn-file's first line, --dsn, or the config's team.dsn."""
    if args.dsn_file and args.dsn:
        raise InvalidParams("dsn", "give --dsn or --dsn-file, not both")
    if args.dsn_file:
        try:
            lines = Path(args.dsn_file).read_text().splitlines()
        except OSError as exc:
            raise InvalidParams("dsn-file", f"cannot read {args.dsn_file}: {exc.strerror}") from exc
        if not lines or not lines[0].strip():
            raise InvalidParams("dsn-file", f"{args.dsn_file} holds no DSN on its first line")
        return lines[0].strip()
    if args.dsn and secrets(args.dsn):
        print(
            "memd: warning: the password in --dsn can be read by anyone on this machine "
            "(ps, /proc); put it in ~/.pgpass or PGPASSFILE, or the DSN in --dsn-file",
            file=sys.stderr,
        )
    dsn = args.dsn or config.team.dsn
    if dsn is None:
        raise InvalidParams("dsn", "give --dsn, or a team section with a dsn in the config")
    return dsn


def _print_status(seen: dict) -> None:
    for r in seen["workspaces"]:
        print(f"{r['host']}/{r['workspace']}: {r['files']} files, {r['chunks']} chunks, "
              f"{r['vectors']} vectors, last published {r['published_at']}")  # fmt: skip
    if not seen["workspaces"]:
        print("nothing published yet")
    for h in seen["hosts"]:
        stored = (
            f" ({h['bytes']:,} of {h['max_bytes']:,} bytes, transactions up to "
            f"{h['max_hold_s']} s, {h['connections'] or 'unlimited'} connections)"
            if h["max_bytes"]
            else ""
        )
        print(f"host {h['host']}: role {h['role']}{stored}")
    for g in seen["grants"]:
        print(f"grant: role {g['role']} reads {g['host']}/{g['workspace']}")
