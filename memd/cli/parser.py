"""The ``memd`` command line's arguments: each command with its description and options.

Global options are accepted before or after the command and listed once, in ``memd --help``.
An unknown option is refused by the command it was given to, with that command's usage and
the option it most likely meant (``--limit``: did you mean ``--max-results``?).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memd import __version__
from memd.cli.team_options import team_options

_GLOBAL = "global options, before or after the command: --config PATH, --workspace NAME, --json, -v"

# name: (one line for `memd --help`, the description `memd NAME --help` opens with)
_COMMANDS = {
    "search": (
        "search the memory by meaning and keywords",
        "Search the memory; prints the best chunks first with score, citation "
        "(path#Lstart-Lend) and heading, then the text. Without a daemon the index is "
        "brought up to date first.",
    ),
    "get": (
        "print lines of a memory file",
        "Print lines of an indexed memory file, e.g. around a search result's citation. "
        "At most 1,000 lines per call; the next --from is shown when there is more. "
        "A --from past the end says how many lines the file has and exits 1.",
    ),
    "index": (
        "index what changed (or every file with --full)",
        "Bring the index up to date with the files. Through the daemon when one runs (it "
        "embeds in the background); otherwise here, with progress on a terminal, then embeds "
        "the chunks that have no vector yet. Keyword search works as soon as indexing is done; "
        "what later notes replaced is then found in the background (--wait: before returning).",
    ),
    "status": (
        "what is indexed, how fresh, which config and socket",
        "Show what is indexed and how fresh it is, the config file, the socket, and the "
        "daemon that answered (or that none runs).",
    ),
    "doctor": (
        "check the setup and say what to fix",
        "Check what usually goes wrong: the config, the workspace folders, the state folder, "
        "the daemon (running, and serving this config), the embeddings provider, the file "
        "watcher and the inotify limit. Says what to do for each problem; exits 1 if any.",
    ),
    "flush": (
        "append a note to today's daily note (or MEMORY.md)",
        "Append a note under a '## HH:MM — title' heading to today's memory/YYYY-MM-DD.md, "
        "or with --core under '## YYYY-MM-DD HH:MM — title' to MEMORY.md. The text comes "
        "from --text, --file or standard input; it is searchable when the command returns.",
    ),
    "store": (
        "keep one '- **KEY**: CONTENT' line",
        "Keep one line '- **KEY**: CONTENT' in the category's file (core: MEMORY.md, daily: "
        "today's note, another name: memory/NAME.md); storing a key again replaces its line.",
    ),
    "forget": (
        "remove a stored key's line",
        "Remove the line of a stored key. Exits 1 if there is no such key.",
    ),
    "list": ("list stored keys and their values", "List stored keys with their values and lines."),
    "context": (
        "print memory for a session's start (a SessionStart hook)",
        "Print the lines of MEMORY.md that weigh most, the last days' notes and what the notes "
        "say about the current project, each with its citation, within --budget tokens; "
        "nothing when there is nothing. With --hook, the hook's JSON comes on standard input. "
        "Always exits 0; problems go to hooks.log in the state folder (memd doctor).",
    ),
    "recall": (
        "print the notes that answer a prompt (a UserPromptSubmit hook)",
        "Search with the prompt (the words given, or with --hook the hook's JSON on standard "
        "input) and print the results above the relevance floor within --budget tokens, or "
        "nothing. Always exits 0.",
    ),
    "hooks": (
        "wire memd into an agent host (Claude Code, Codex)",
        "install merges memd's hooks into Claude Code's settings.json (every other setting kept, "
        "a backup made, idempotent) or memd's MCP server into Codex's config.toml; uninstall "
        "removes exactly what install added; status says what is installed where.",
    ),
    "review": (
        "propose promotions, conflicts and duplicates",
        "Review the notes: durable statements of daily notes not yet in MEMORY.md (promote), "
        "statements that disagree (conflict), lines said twice (duplicate). --apply ID appends "
        "a promotion to MEMORY.md with where it came from, or stores the newer value of a "
        "key; nothing a person wrote is changed. --dismiss ID hides a proposal for good.",
    ),
    "serve": (
        "run the daemon in the foreground",
        "Run the daemon in the foreground: watch the workspaces, keep the index fresh and "
        "answer on the socket. Ctrl-C or SIGTERM stops it; SIGHUP reloads the config.",
    ),
    "mcp": (
        "serve memd's tools over MCP stdio",
        "Serve memory_search, memory_get, memory_flush and the other tools over MCP on "
        "standard input and output, for agent hosts (Claude Desktop, Cursor, ...).",
    ),
    "ui": (
        "serve a page to see memory in a browser",
        "Print the address of a local page (127.0.0.1, with a token) that shows search, the "
        "timeline, notes, what is current, the review and status; the daemon's when it serves "
        "one (ui.enabled), else served here until Ctrl-C.",
    ),
    "service": (
        "install, remove or check memd as a user service",
        "Install memd as a systemd user service (Linux) or launchd agent (macOS), remove it, "
        "or show its state.",
    ),
    "team": (
        "set up and inspect the team's PostgreSQL",
        "Run the team database (the team section of the config): init creates or migrates "
        "its tables and policies; add-host lets a PostgreSQL role publish as a host; grant and "
        "revoke let a role read a host's workspaces; status shows what each host published. "
        "Use an administrator's DSN (--dsn) for all but status.",
    ),
}


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that knows its options and its commands' parsers, so an
    unknown option gets the usage of the command it was given to, and a suggestion."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: list[str] = []  # before super(): it adds -h/--help
        self.commands: dict[str, Parser] = {}
        super().__init__(*args, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every option it adds, and one without a width
        # imports shutil (and bz2, lzma) for the terminal's: a third of a command's imports.
        return self.formatter_class(prog=self.prog, width=_columns())

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options += action.option_strings
        return action

    def parse_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = self.commands.get(getattr(parsed, "command", ""), self)
            command.error(command.unrecognized(extra))
        return parsed

    def unrecognized(self, extra: list[str]) -> str:
        message = f"unrecognized arguments: {' '.join(extra)}"
        from memd.configfile import nearest  # only a mistyped option pays for the config

        for word in extra:
            if word.startswith("-") and (close := nearest(word.split("=", 1)[0], self.options)):
                return f"{message} (did you mean {close}?)"
        return message


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it: $COLUMNS, the
    terminal of standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def _global_options(parser: argparse.ArgumentParser, shown: bool) -> None:
    # Accepted before or after the command (`memd search x --config c`), listed once: in
    # `memd --help`. SUPPRESS as default keeps a subcommand from resetting a value given
    # before it.
    def helped(text: str) -> str:
        return text if shown else argparse.SUPPRESS

    parser.add_argument(
        "--config", default=argparse.SUPPRESS, metavar="PATH", help=helped("config file to read")
    )
    parser.add_argument(
        "--workspace",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help=helped("workspace to use (default: the first configured)"),
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help=helped("print the result object as JSON, as the socket returns it"),
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help=helped("log progress and details to stderr"),
    )


class _Unbuilt:
    """Stands in for a command's parser that ``make_parser(only=...)`` leaves out."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass


def make_parser(only: str | None = None) -> Parser:
    """The ``memd`` argument parser: every command, its description and options; with
    ``only``, that one command (what a command answered by a daemon builds: the whole tree
    took a third of its time)."""
    parser = Parser(
        prog="memd",
        description="Keep an AI agent's Markdown memory searchable.",
        epilog="'memd COMMAND --help' describes a command. Exit codes: 0 ok, 1 error, 2 usage.",
    )
    _global_options(parser, shown=True)
    parser.add_argument(
        "--version", action="version", version=f"memd {__version__}", help="print memd's version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    def command(name: str) -> Parser:
        if only is not None and name != only:
            return _Unbuilt()  # type: ignore[return-value]
        summary, description = _COMMANDS[name]
        p = sub.add_parser(name, help=summary, description=description, epilog=_GLOBAL)
        _global_options(p, shown=False)
        parser.commands[name] = p
        return p

    p = command("search")
    p.add_argument("query", help="what to look for, in plain words")
    p.add_argument("--max-results", type=int, metavar="N",
                   help="how many results (default: search.max_results)")  # fmt: skip
    p.add_argument("--min-score", type=float, metavar="S", help="drop results below this (0-1)")
    p.add_argument("--min-results", type=int, metavar="N", help="fill up to N with weak "
                   "matches, below the floor (default: search.min_results)")  # fmt: skip
    p.add_argument(
        "--mode",
        choices=["auto", "hybrid", "keyword", "vector"],
        help="hybrid = meaning and words; keyword or vector alone; auto (default) = hybrid "
        "when vectors exist, else keyword",
    )
    p.add_argument(
        "--scope",
        choices=["local", "team"],
        help="team = every host's published workspaces too (needs a team section); default local",
    )
    p.add_argument(
        "--path",
        action="append",
        dest="paths",
        metavar="GLOB",
        help="only files matching this glob (repeatable)",
    )
    p.add_argument(
        "--tag",
        action="append",
        dest="tags",
        metavar="TAG",
        help="only notes with this tag (repeatable)",
    )
    p.add_argument(
        "--all-chunks",
        action="store_true",
        help="every matching chunk of a note, not only its best (default: one place per note)",
    )
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only dated notes from this date")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="only dated notes up to this date")
    p.add_argument(
        "--wait",
        nargs="?",
        type=float,
        const=2.0,
        metavar="SECONDS",
        help="first let the index catch up with every edit made so far (up to 10 s; default 2)",
    )
    p.add_argument("--now", metavar="DATETIME", help="read time words against this ISO date-time")
    p.add_argument(
        "--source",
        action="append",
        dest="sources",
        choices=["memory", "sessions"],
        help="only notes (memory) or only session transcripts (sessions); default both",
    )

    p = command("get")
    p.add_argument("path", help="path as shown in search results, e.g. memory/2026-01-20.md")
    p.add_argument("--from", dest="from_", type=int, metavar="N", help="first line (1-based)")
    p.add_argument("--lines", type=int, metavar="N", help="how many lines (default 120)")
    p.add_argument("--host", help="another host's note, as a team search named it")

    p = command("index")
    p.add_argument("--full", action="store_true", help="re-read and re-chunk every file")
    p.add_argument(
        "--no-embed",
        action="store_true",
        help="index only; leave embedding to the daemon or a later 'memd index'",
    )
    p.add_argument("--wait", action="store_true",
                   help="no daemon: find what later notes replaced before returning")  # fmt: skip

    p = command("status")
    p.add_argument(
        "--socket", action="store_true", help="print only the socket path (for socat, nc, scripts)"
    )

    command("doctor")

    p = command("flush")
    p.add_argument("--text", help="the note (else --file, else standard input)")
    p.add_argument("--file", type=Path, help="read the note from this file")
    p.add_argument("--title", help="heading for the note (default: its first words)")
    p.add_argument("--core", action="store_true", help="append to MEMORY.md instead")
    p.add_argument("--flush-id", help="write at most once per id, across restarts")
    p.add_argument("--date", metavar="YYYY-MM-DD", help="the daily note to append to")
    p.add_argument(
        "--hook", action="store_true", help="a PreCompact/SessionEnd hook's JSON on standard input"
    )
    p.add_argument("--host-name", default="Claude Code", help=argparse.SUPPRESS)

    p = command("store")
    p.add_argument("key", metavar="KEY", help="a short name, e.g. editor or timezone")
    p.add_argument("content", metavar="CONTENT", help="the value, kept on one line")
    p.add_argument("--category", default="core", help="core, daily, or a name (default core)")

    p = command("forget")
    p.add_argument("key", metavar="KEY", help="the key to remove")
    p.add_argument("--category", help="only in this category's file")

    p = command("list")
    p.add_argument("--category", help="only this category (core, daily, or a name)")

    p = command("context")
    p.add_argument("--hook", action="store_true", help="read the hook's JSON on standard input")
    p.add_argument("--budget", type=int, metavar="TOKENS", help="at most this many (default 1500)")
    p.add_argument("--cwd", metavar="DIR", help="the project folder (default: the hook's cwd)")
    p.add_argument(
        "--source",
        choices=["startup", "resume", "clear", "compact"],
        help="how the session started (default: the hook's); compact also shows the last flush",
    )
    p.add_argument("--now", metavar="DATETIME", help="read the notes as of this ISO date-time")

    p = command("recall")
    p.add_argument("prompt", nargs="*", help="the prompt (else the hook's JSON with --hook)")
    p.add_argument("--hook", action="store_true", help="read the hook's JSON on standard input")
    p.add_argument("--budget", type=int, metavar="TOKENS", help="at most this many (default 600)")
    p.add_argument("--now", metavar="DATETIME", help="read time words against this ISO date-time")

    p = command("hooks")
    p.add_argument("action", choices=["install", "uninstall", "status"], help="what to do")
    p.add_argument("host", nargs="?", choices=["claude-code", "codex"], help="the agent host")
    p.add_argument(
        "--project", type=Path, metavar="DIR", help="claude-code: DIR/.claude/settings.json"
    )
    p.add_argument(
        "--events",
        nargs="+",
        metavar="EVENT",
        choices=["SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"],
        help="claude-code: which hooks (default SessionStart PreCompact SessionEnd)",
    )
    p.add_argument(
        "--sessions", action="store_true", help="also index the host's transcripts (config)"
    )

    p = command("review")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only what daily notes say from then on")
    p.add_argument("--kind", choices=["promote", "conflict", "duplicate"], action="append",
                   help="only proposals of this kind (repeatable)")  # fmt: skip
    p.add_argument("--apply", nargs="+", metavar="ID", default=[], help="carry these out")
    p.add_argument("--dismiss", nargs="+", metavar="ID", default=[], help="hide these for good")

    command("serve")
    command("mcp")
    p = command("ui")
    p.add_argument("--port", type=int, metavar="N", help="serve on this port (default: ui.port)")
    p = command("service")
    p.add_argument(
        "action",
        choices=["install", "uninstall", "status"],
        help="install (write, enable, start), uninstall (stop, disable, remove), status",
    )
    team_options(command("team"))
    return parser
