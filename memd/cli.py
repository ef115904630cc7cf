"""The ``memd`` command: parse arguments, call one library method, print.

Exit codes: 0 ok, 1 error, 2 usage. ``--json`` prints the method's result object as the
socket would return it; without it the output is for people.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memd import __version__, service
from memd.config import Config
from memd.configfile import load_config
from memd.daemon import Daemon
from memd.errors import InvalidParams, MemdError
from memd.log import configure_logging
from memd.memory import Memory
from memd.router import Router


def _parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command (`memd search x --config c`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=argparse.SUPPRESS, help="config file to read")
    common.add_argument("--workspace", default=argparse.SUPPRESS, help="workspace name")
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the result object as JSON",
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log progress and details to stderr",
    )

    parser = argparse.ArgumentParser(
        prog="memd",
        description="Keep an AI agent's Markdown memory searchable.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"memd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index the workspace (only what changed)")
    p.add_argument("--full", action="store_true", help="re-read and re-chunk every file")

    p = sub.add_parser("search", parents=[common], help="search the memory")
    p.add_argument("query", help="what to look for, in plain words")
    p.add_argument("--max-results", type=int, help="how many results (default 6)")
    p.add_argument("--min-score", type=float, help="drop results scoring below this (0-1)")
    p.add_argument("--mode", choices=["auto", "hybrid", "keyword", "vector"])
    p.add_argument(
        "--path",
        action="append",
        dest="paths",
        metavar="GLOB",
        help="only files matching this glob (repeatable)",
    )
    p.add_argument("--tag", action="append", dest="tags", help="only notes with this tag")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only daily notes from this date")
    p.add_argument("--until", metavar="YYYY-MM-DD", help="only daily notes up to this date")
    p.add_argument(
        "--wait",
        nargs="?",
        type=float,
        const=2.0,
        metavar="SECONDS",
        help="first let the index catch up with every edit made so far (up to 10 s; default 2)",
    )

    p = sub.add_parser("get", parents=[common], help="print lines of a memory file")
    p.add_argument("path", help="path as shown in search results, e.g. memory/2026-01-20.md")
    p.add_argument("--from", dest="from_", type=int, metavar="N", help="first line (1-based)")
    p.add_argument("--lines", type=int, metavar="N", help="how many lines (default 120)")

    sub.add_parser("status", parents=[common], help="what is indexed and how fresh it is")

    p = sub.add_parser("flush", parents=[common], help="append a note to today's memory")
    p.add_argument("--text", help="the note (else --file, else standard input)")
    p.add_argument("--file", type=Path, help="read the note from this file")
    p.add_argument("--title", help="heading for the note (default: its first words)")
    p.add_argument("--core", action="store_true", help="append to MEMORY.md instead")
    p.add_argument("--flush-id", help="write at most once per id, across restarts")
    p.add_argument("--date", metavar="YYYY-MM-DD", help="the daily note to append to")

    p = sub.add_parser("store", parents=[common], help="keep one '- **key**: content' line")
    p.add_argument("key")
    p.add_argument("content")
    p.add_argument("--category", default="core", help="core, daily, or a name (default core)")

    p = sub.add_parser("forget", parents=[common], help="remove a stored key's line")
    p.add_argument("key")
    p.add_argument("--category", help="only in this category's file")

    p = sub.add_parser("list", parents=[common], help="list stored keys")
    p.add_argument("--category", help="only this category")
    sub.add_parser("serve", parents=[common], help="run the daemon in the foreground")
    sub.add_parser("mcp", parents=[common], help="serve memd's tools over MCP stdio")
    p = sub.add_parser("service", parents=[common], help="install memd as a user service")
    p.add_argument("action", choices=["install", "uninstall", "status"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``memd`` command line; returns the exit code."""
    args = _parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    config_arg = getattr(args, "config", None)
    try:
        config = load_config(config_arg)
        if args.command == "serve":
            configure_logging("debug" if verbose else config.log.level, config.log.format)
            return Daemon(config, config_arg).run()
        if args.command == "service":
            return _service(args.action, config)
        if args.command == "mcp":
            from memd.mcp import serve_mcp

            # stdout carries the protocol: every log line goes to stderr.
            configure_logging("debug" if verbose else "warning", "json", sys.stderr)
            return serve_mcp(config, getattr(args, "workspace", None))
        configure_logging("debug" if verbose else "warning", config.log.format)
        return _run(args, config)
    except InvalidParams as exc:
        print(f"memd: {exc}", file=sys.stderr)
        return 2
    except MemdError as exc:
        print(f"memd: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("memd: interrupted", file=sys.stderr)
        return 130


def _service(action: str, config: Config) -> int:
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


def _run(args: argparse.Namespace, config: Config) -> int:
    """Answer through the running daemon if there is one, else directly on the index."""
    router = Router(config, timeout=None if args.command == "index" else 60.0)
    try:
        return _command(args, router)
    finally:
        router.close()


def _command(args: argparse.Namespace, router: Router) -> int:
    workspace = getattr(args, "workspace", None)
    as_json = getattr(args, "json", False)
    params: dict[str, Any] = {"workspace": workspace}
    if args.command == "index":
        if router.daemon_running():
            result = router.call("reindex", {**params, "full": args.full})
        else:
            result = _index_here(router.memory(workspace), args.full, as_json)
        return _emit(result, as_json, _print_index)
    if args.command == "search":
        params.update(
            query=args.query,
            max_results=args.max_results,
            min_score=args.min_score,
            mode=args.mode,
            paths=args.paths,
            tags=args.tags,
            since=args.since,
            until=args.until,
            wait_fresh=args.wait,
        )
        return _emit(router.call("memory_search", params), as_json, _print_search)
    if args.command == "get":
        params.update(path=args.path, lines=args.lines)
        params["from"] = args.from_
        return _emit(router.call("memory_get", params), as_json, _print_get)
    if args.command == "flush":
        entry = {
            "text": _flush_text(args),
            "title": args.title,
            "target": "core" if args.core else "daily",
        }
        params.update(
            entries=[{k: v for k, v in entry.items() if v is not None}],
            flush_id=args.flush_id,
            date=args.date,
        )
        return _emit(router.call("memory_flush", params), as_json, _print_flush)
    if args.command == "store":
        params.update(key=args.key, content=args.content, category=args.category)
        return _emit(router.call("memory_store", params), as_json, _print_store)
    if args.command == "forget":
        params.update(key=args.key, category=args.category)
        return _emit(router.call("memory_forget", params), as_json, _print_forget)
    if args.command == "list":
        params.update(category=args.category)
        return _emit(router.call("memory_list", params), as_json, _print_list)
    return _emit(router.call("status", params), as_json, _print_status)


def _index_here(memory: Memory, full: bool, as_json: bool) -> dict:
    """Index (and, with no daemon to do it later, embed) in this process, with progress."""
    on_terminal = sys.stderr.isatty() and not as_json
    result = memory.index(full=full, progress=_progress_printer() if on_terminal else None)
    _finish_progress(on_terminal)
    embedding = _progress_printer("embedding", "chunks") if on_terminal else None
    result = result.as_dict()
    result["embedded"] = memory.embed_all(embedding)
    _finish_progress(on_terminal)
    return result


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


def _emit(result: dict, as_json: bool, human: Callable[[dict], None]) -> int:
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        human(result)
    return 0


def _print_index(r: dict) -> None:
    print(
        f"indexed in {r['seconds']:.2f} s: {r['added']} added, {r['changed']} changed, "
        f"{r['removed']} removed, {r['unchanged']} unchanged, {r['skipped']} skipped "
        f"({r['chunks']} chunks written)"
    )
    if r.get("embedded"):
        print(f"embedded {r['embedded']} chunks")
    for w in r["warnings"]:
        print(f"warning: {w}", file=sys.stderr)


def _print_search(r: dict) -> None:
    if r.get("warning"):
        print(f"warning: {r['warning']}", file=sys.stderr)
    if not r["results"]:
        print("nothing relevant found")
        return
    for n, hit in enumerate(r["results"]):
        if n:
            print()
        heading = f"  {hit['heading']}" if hit["heading"] else ""
        print(f"{hit['score']:.2f}  {hit['citation']}{heading}")
        for line in hit["snippet"].splitlines():
            print(f"      {line}")


def _print_get(r: dict) -> None:
    sys.stdout.write(r["text"])
    if r["next_from"]:
        print(
            f"-- lines {r['from']}-{r['from'] + r['lines'] - 1} of {r['total_lines']}; "
            f"more with --from {r['next_from']}",
            file=sys.stderr,
        )


def _print_flush(r: dict) -> None:
    if r["duplicate"]:
        print("already flushed with this id; nothing written")
    for w in r["written"]:
        print(f"wrote {w['path']}#L{w['start_line']}-L{w['end_line']}")
    for s in r.get("skipped", []):
        print(f"skipped: {s['reason']} ({s['path']})")


def _print_store(r: dict) -> None:
    verb = "replaced" if r["replaced"] else "stored"
    print(f"{verb} {r['path']}#L{r['start_line']}-L{r['end_line']}")


def _print_forget(r: dict) -> None:
    print(f"removed from {', '.join(r['paths'])}" if r["removed"] else "no such key")


def _print_list(r: dict) -> None:
    for e in r["entries"]:
        print(f"{e['key']}\t{e['path']}:{e['line']}\t{e['category']}")


def _print_status(r: dict) -> None:
    width = max(len(k) for k in r)
    for key, value in r.items():
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        print(f"{key.replace('_', ' '):<{width}}  {'-' if value is None else value}")


def _progress_printer(verb: str = "indexing", unit: str = "files") -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\r{verb} {done}/{total} {unit}")
        sys.stderr.flush()

    return show


def _finish_progress(shown: object) -> None:
    if shown:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
