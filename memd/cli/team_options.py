"""The options of ``memd team`` (administering the team's PostgreSQL)."""

from __future__ import annotations

import argparse


def team_options(p: argparse.ArgumentParser) -> None:
    """Add ``memd team``'s action, arguments and options to its parser."""
    p.add_argument(
        "action", choices=["init", "add-host", "grant", "revoke", "status"], help="what to do"
    )
    p.add_argument("role", nargs="?", help="add-host, grant, revoke: the PostgreSQL role")
    p.add_argument("host", nargs="?", help="add-host: the host it publishes as; grant: whose")
    p.add_argument(
        "team_workspace",
        nargs="?",
        metavar="WORKSPACE",
        help="grant, revoke: one of the host's workspaces, or --workspace NAME (default *)",
    )
    p.add_argument(
        "--dsn",
        help="the database to use (default: team.dsn of the config); no password in it: "
        "other users can read a command line (use ~/.pgpass, PGPASSFILE or --dsn-file)",
    )
    p.add_argument(
        "--dsn-file",
        metavar="PATH",
        help="read the DSN from this file (its first line; keep it private: chmod 600)",
    )
    p.add_argument(
        "--lock-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="init: wait at most this long for a table another session holds (default 10)",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        metavar="N",
        help="add-host: the most this host may store (default 4 GiB)",
    )
    p.add_argument(
        "--max-hold-s",
        type=int,
        metavar="SECONDS",
        help="add-host: the longest this host's transaction may stay open before memd ends "
        "its session, whatever the session sets (default 120)",
    )
    p.add_argument(
        "--connections",
        type=int,
        metavar="N",
        help="add-host: the most connections this host may open (default: its role's own "
        "limit, else 10; the team's hosts together at most 3/4 of the server's)",
    )
    p.add_argument(
        "--dims",
        type=int,
        action="append",
        metavar="N",
        help="init: accepted and ignored (each scope's passages are ranked exactly; no vector "
        "index serves every host)",
    )
