"""``memd team``: the team database's tables, hosts, grants and what each host published."""

from __future__ import annotations

import argparse
import json

from memd.config import Config
from memd.errors import InvalidParams
from memd.store import postgres_admin as admin


def team(args: argparse.Namespace, config: Config) -> int:
    """Run one ``memd team`` action; prints what it did."""
    if getattr(args, "json", False) and args.action != "status":
        raise InvalidParams("json", f"--json is not available for 'memd team {args.action}'")
    dsn = args.dsn or config.team.dsn
    if dsn is None:
        raise InvalidParams("dsn", "give --dsn, or a team section with a dsn in the config")
    action, as_json = args.action, getattr(args, "json", False)
    if action == "init":
        version = admin.init(dsn, tuple(args.dims or (384,)))
        print(f"team database ready (schema version {version})")
    elif action == "status":
        rows = admin.status(dsn)
        if as_json:
            print(json.dumps(rows, indent=2))
            return 0
        for r in rows:
            print(f"{r['host']}/{r['workspace']}: {r['files']} files, {r['chunks']} chunks, "
                  f"{r['vectors']} vectors, last published {r['published_at']}")  # fmt: skip
        if not rows:
            print("nothing published yet")
    else:
        if not args.role or not args.host:
            raise InvalidParams("role", f"memd team {action} needs ROLE and HOST")
        # `memd team grant ROLE HOST --workspace NAME` means the workspace granted, as the
        # positional WORKSPACE does (not the global option: team commands use none).
        given = {w for w in (args.team_workspace, getattr(args, "workspace", None)) if w}
        if len(given) > 1:
            raise InvalidParams("workspace", "give the workspace once: WORKSPACE or --workspace")
        workspace = next(iter(given), "*")
        if action == "add-host" and given:
            raise InvalidParams("workspace", "add-host takes ROLE and HOST only")
        if action == "add-host":
            admin.add_host(dsn, args.role, args.host)
            print(f"role {args.role} publishes as {args.host}")
        elif action == "grant":
            admin.grant(dsn, args.role, args.host, workspace)
            print(f"role {args.role} may read {args.host}/{workspace}")
        else:
            admin.revoke(dsn, args.role, args.host, workspace)
            print(f"role {args.role} may no longer read {args.host}/{workspace}")
    return 0
