"""The ``memd`` command: parse arguments, call one library method, print.

Exit codes: 0 ok, 1 error, 2 usage. ``--json`` prints the method's result object as the
socket would return it; without it the output is for people (``memd.cli_format``).

A command pays only for what it uses: answered by a daemon, it needs the config, a socket
and JSON; the index, numpy and markdown-it are imported only when it works on the index
itself, and the daemon, MCP and service code only by their own commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd import __version__, cli_format
from memd.configfile import load_config
from memd.errors import InvalidParams, MemdError

if TYPE_CHECKING:
    from memd.config import Config
    from memd.memory import Memory
    from memd.router import Router

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
        "the chunks that have no vector yet. Keyword search works as soon as indexing is done.",
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
    "service": (
        "install, remove or check memd as a user service",
        "Install memd as a systemd user service (Linux) or launchd agent (macOS), remove it, "
        "or show its state.",
    ),
}


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memd",
        description="Keep an AI agent's Markdown memory searchable.",
        epilog="'memd COMMAND --help' describes a command. Exit codes: 0 ok, 1 error, 2 usage.",
    )
    _global_options(parser, shown=True)
    parser.add_argument("--version", action="version", version=f"memd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    def command(name: str) -> argparse.ArgumentParser:
        summary, description = _COMMANDS[name]
        p = sub.add_parser(name, help=summary, description=description, epilog=_GLOBAL)
        _global_options(p, shown=False)
        return p

    p = command("search")
    p.add_argument("query", help="what to look for, in plain words")
    p.add_argument("--max-results", type=int, metavar="N", help="how many results (default 6)")
    p.add_argument("--min-score", type=float, metavar="S", help="drop results below this (0-1)")
    p.add_argument(
        "--mode",
        choices=["auto", "hybrid", "keyword", "vector"],
        help="hybrid = meaning and words; keyword or vector alone; auto (default) = hybrid "
        "when vectors exist, else keyword",
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
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only daily notes from this date")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="only daily notes up to this date")

    p = command("get")
    p.add_argument("path", help="path as shown in search results, e.g. memory/2026-01-20.md")
    p.add_argument("--from", dest="from_", type=int, metavar="N", help="first line (1-based)")
    p.add_argument("--lines", type=int, metavar="N", help="how many lines (default 120)")

    p = command("index")
    p.add_argument("--full", action="store_true", help="re-read and re-chunk every file")
    p.add_argument(
        "--no-embed",
        action="store_true",
        help="index only; leave embedding to the daemon or a later 'memd index'",
    )

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

    p = command("store")
    p.add_argument("key", metavar="KEY", help="a short name, e.g. editor or timezone")
    p.add_argument("content", metavar="CONTENT", help="the value, kept on one line")
    p.add_argument("--category", default="core", help="core, daily, or a name (default core)")

    p = command("forget")
    p.add_argument("key", metavar="KEY", help="the key to remove")
    p.add_argument("--category", help="only in this category's file")

    p = command("list")
    p.add_argument("--category", help="only this category (core, daily, or a name)")

    command("serve")
    command("mcp")
    p = command("service")
    p.add_argument(
        "action",
        choices=["install", "uninstall", "status"],
        help="install (write, enable, start), uninstall (stop, disable, remove), status",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``memd`` command line; returns the exit code."""
    args = _parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    config_arg = getattr(args, "config", None)
    try:
        if args.command == "doctor":
            from memd.doctor import doctor

            workspace = getattr(args, "workspace", None)
            return doctor(config_arg, workspace, getattr(args, "json", False))
        config = load_config(config_arg)
        if args.command == "serve":
            return _serve(config, config_arg, verbose)
        if args.command == "service":
            return _service(args.action, config)
        if args.command == "mcp":
            from memd.log import configure_logging
            from memd.mcp import serve_mcp

            # stdout carries the protocol: every log line goes to stderr.
            configure_logging("debug" if verbose else "warning", "json", sys.stderr)
            return serve_mcp(config, getattr(args, "workspace", None))
        if args.command == "status" and args.socket:
            print(config.socket)
            return 0
        return _run(args, config, verbose)
    except InvalidParams as exc:
        print(f"memd: {exc}", file=sys.stderr)
        return 2
    except MemdError as exc:
        print(f"memd: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if sys.stderr.isatty():
            cli_format.Progress.clear()
        print("memd: interrupted", file=sys.stderr)
        return 130


def _serve(config: Config, config_arg: str | None, verbose: bool) -> int:
    from memd.daemon import Daemon
    from memd.log import configure_logging

    configure_logging("debug" if verbose else config.log.level, config.log.format)
    try:
        return Daemon(config, config_arg).run()
    except MemdError:
        return 1  # the daemon logged why (daemon_start_failed): say it once


def _service(action: str, config: Config) -> int:
    import os

    from memd import service

    plan = service.plan(config.source, os.environ)
    if action == "status":
        code, report = service.status(plan)
        print(report)
        return 0 if code == 0 else 1
    for line in (service.install if action == "install" else service.uninstall)(plan):
        print(line)
    if action == "install":
        print(f"memd is running as a {plan.manager} service; socket {config.socket}")
    return 0


def _run(args: argparse.Namespace, config: Config, verbose: bool) -> int:
    """Answer through the running daemon if there is one, else directly on the index."""
    from memd.router import Router

    def local_logging() -> None:
        from memd.log import configure_logging, configure_plain

        if verbose:
            configure_logging("debug", config.log.format)
        else:
            configure_plain("warning")  # warnings as plain lines, without loading structlog

    router = Router(config, None if args.command == "index" else 60.0, on_local=local_logging)
    try:
        return _command(args, router)
    finally:
        for notice in router.notices:
            cli_format.note(f"memd: {notice}")
        router.close()


def _command(args: argparse.Namespace, router: Router) -> int:
    workspace = getattr(args, "workspace", None)
    as_json = getattr(args, "json", False)
    params: dict[str, Any] = {"workspace": workspace}
    command = args.command
    if command == "index":
        return _index(args, router, params, as_json)
    if command == "search":
        params.update(
            query=args.query,
            max_results=args.max_results,
            min_score=args.min_score,
            mode=args.mode,
            paths=args.paths,
            tags=args.tags,
            since=args.since,
            until=args.until,
        )
        return _emit(router.call("memory_search", params), as_json, cli_format.search)
    if command == "get":
        params.update(path=args.path, lines=args.lines)
        params["from"] = args.from_
        result = router.call("memory_get", params)
        if as_json:
            _emit(result, True, print)
            return 0 if result["text"] or result["from"] <= max(result["total_lines"], 1) else 1
        return cli_format.get(result)
    if command == "flush":
        target = "core" if args.core else "daily"
        entry = {"text": _flush_text(args), "title": args.title, "target": target}
        params.update(
            entries=[{k: v for k, v in entry.items() if v is not None}],
            flush_id=args.flush_id,
            date=args.date,
        )
        return _emit(router.call("memory_flush", params), as_json, cli_format.flush)
    if command == "store":
        params.update(key=args.key, content=args.content, category=args.category)
        return _emit(router.call("memory_store", params), as_json, cli_format.store)
    if command == "forget":
        params.update(key=args.key, category=args.category)
        result = router.call("memory_forget", params)
        if as_json:
            _emit(result, True, print)
            return 0 if result["removed"] else 1
        return cli_format.forget(result, args.key)
    if command == "list":
        params.update(category=args.category)
        return _emit(router.call("memory_list", params), as_json, cli_format.key_list)
    result = router.call("status", params)
    return _emit(result, as_json, lambda r: cli_format.status(r, _answered_by(router)))


def _answered_by(router: Router) -> dict:
    daemon = router.daemon
    if daemon is not None:
        return {"daemon": f"pid {daemon.get('pid', '?')}, serving this config"}
    return {"daemon": "none running; answered by this process"}


def _index(args: argparse.Namespace, router: Router, params: dict, as_json: bool) -> int:
    if router.daemon_running():
        result = router.call("reindex", {**params, "full": args.full})
        code = _emit(result, as_json, cli_format.index_report)
        if not as_json and router.config.embeddings.provider != "none":
            pending = router.call("status", params)["pending_embeddings"]
            if pending:
                cli_format.note(
                    f"the daemon embeds {pending} chunks in the background; keyword search "
                    "works now, and 'memd status' shows the progress"
                )
        return code
    memory = router.memory(params["workspace"])
    return _index_here(memory, args.full, args.no_embed, as_json)


def _index_here(memory: Memory, full: bool, no_embed: bool, as_json: bool) -> int:
    """Index (and, with no daemon to do it later, embed) in this process, with progress."""
    on_terminal = sys.stderr.isatty() and not as_json
    progress = cli_format.Progress("indexing", "files") if on_terminal else None
    result = memory.index(full=full, progress=progress).as_dict()
    if on_terminal:
        progress.clear()
    pending = memory.db.vector_counts()[1] if memory.embedder.enabled else 0
    if not as_json:
        cli_format.index_report(result)
    if pending and no_embed:
        if not as_json:
            cli_format.note(
                f"{pending} chunks wait for embeddings: 'memd serve' embeds them in the "
                "background, or run 'memd index' again"
            )
        result["embedded"] = 0
    elif pending:
        embedding = cli_format.Progress("embedding", "chunks", rate=True) if on_terminal else None
        if embedding is not None:
            cli_format.note(
                f"keyword search works now; embedding {pending} chunks for search by meaning "
                "(Ctrl-C stops; what is done is kept)"
            )

            def estimate(left: str) -> None:
                embedding.clear()
                cli_format.note(f"embedding will take about {left} ({memory.embedder.provider})")

            embedding.first_estimate = estimate
        try:
            result["embedded"] = memory.embed_all(embedding)
        except KeyboardInterrupt:
            if embedding is not None:
                embedding.clear()
            left = memory.db.vector_counts()[1]
            cli_format.note(
                f"stopped with {left} chunks still to embed; 'memd serve' or the next "
                "'memd index' embeds them"
            )
            raise
        if on_terminal:
            embedding.clear()
        if not as_json and result["embedded"]:
            print(f"embedded {result['embedded']} chunks")
    else:
        result["embedded"] = 0
    if as_json:
        _emit(result, True, print)
    return 0


def _flush_text(args: argparse.Namespace) -> str:
    if args.text is not None:
        return args.text
    if args.file is not None:
        try:
            return args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidParams("file", f"cannot read {args.file}: {exc}") from exc
    if sys.stdin.isatty():
        raise InvalidParams("text", "give --text, --file, or the note on standard input")
    return sys.stdin.read()


def _emit(result: dict, as_json: bool, human: Callable[[dict], Any]) -> int:
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        human(result)
    return 0
