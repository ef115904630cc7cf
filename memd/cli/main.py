"""The ``memd`` command: parse arguments, call one library method, print.

Exit codes: 0 ok, 1 error, 2 usage. ``--json`` prints the method's result object as the
socket would return it; without it the output is for people (``memd.cli.format``).

A command pays only for what it uses: answered by a daemon, it needs the config, a socket
and JSON; the index, numpy and markdown-it are imported only when it works on the index
itself, and the daemon, MCP and service code only by their own commands.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memd.cli import format as cli_format
from memd.cli.parser import make_parser
from memd.errors import InvalidParams, MemdError

HUMAN_WAIT = 1.0  # seconds a search for people waits for edits to be indexed

if TYPE_CHECKING:
    from memd.config import Config
    from memd.memory import Memory
    from memd.serve.router import Router


def main(
    argv: Sequence[str] | None = None,
    parsed: argparse.Namespace | None = None,
    config: Config | None = None,
) -> int:
    """Run the ``memd`` command line; returns the exit code. ``parsed``: ``argv`` as the
    thin client (``memd.cli.thin``) parsed it already, so the whole parser is not built;
    ``config``: the config that ``argv`` names, as the thin client found it remembered."""
    try:
        code = _main(argv, parsed, config)
        sys.stdout.flush()  # here, so a reader gone away is met inside the ``try``
        return code
    except BrokenPipeError:
        # The reader closed the pipe (``| head``): what it wanted it has. Python would
        # complain again when flushing at exit, so stdout goes nowhere from now on.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(
    argv: Sequence[str] | None,
    parsed: argparse.Namespace | None = None,
    config: Config | None = None,
) -> int:
    args = parsed if parsed is not None else make_parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    config_arg = getattr(args, "config", None)
    if getattr(args, "json", False) and args.command in _NO_JSON:
        print(f"memd: --json is not available for 'memd {args.command}'", file=sys.stderr)
        return 2
    if args.command in ("context", "recall") or (args.command == "flush" and args.hook):
        from memd.cli.hookrun import run_hook

        return run_hook(args.command, args)  # never fails: the host's session comes first
    try:
        if args.command == "doctor":
            from memd.cli.doctor import doctor

            workspace = getattr(args, "workspace", None)
            return doctor(config_arg, workspace, getattr(args, "json", False))
        config = config or load_and_remember(config_arg)
        if args.command == "serve":
            return _serve(config, config_arg, verbose)
        if args.command == "service":
            return _service(args.action, config)
        if args.command == "team":
            from memd.cli.team import team

            return team(args, config)
        if args.command == "hooks":
            from memd.cli.hooks import hooks

            return hooks(args, config)
        if args.command == "mcp":
            from memd.log import configure_logging
            from memd.serve.mcp import serve_mcp

            # stdout carries the protocol: every log line goes to stderr.
            configure_logging("debug" if verbose else "warning", "json", sys.stderr)
            return serve_mcp(config, getattr(args, "workspace", None))
        if args.command == "ui":
            from memd.cli.ui import ui

            return ui(args, config)
        if args.command == "status" and args.socket:
            as_json = getattr(args, "json", False)
            print(json.dumps({"socket": str(config.socket)}) if as_json else config.socket)
            return 0
        return _run(args, config, verbose)
    except (MemdError, KeyboardInterrupt) as exc:
        return failed(exc)


def failed(exc: MemdError | KeyboardInterrupt) -> int:
    """Say on stderr why a command stopped; its exit code (2 usage, 1 error, 130 Ctrl-C)."""
    if isinstance(exc, InvalidParams):
        print(f"memd: {exc}", file=sys.stderr)
        return 2
    if isinstance(exc, MemdError):
        print(f"memd: error: {exc}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        cli_format.Progress.clear()
    print("memd: interrupted", file=sys.stderr)
    return 130


def load_and_remember(config_arg: str | None) -> Config:
    """The config, remembered for the next command (``memd.socketcache``): one answered
    by a daemon then reaches it without loading the config (``memd.cli.thin``)."""
    import os

    from memd.configfile import load_config
    from memd.socketcache import remember

    config = load_config(config_arg)
    remember(config, config_arg, os.environ)
    return config


# Commands whose output is a protocol, a log or a report of changed files: no JSON form.
_NO_JSON = ("serve", "mcp", "service", "hooks", "ui")  # and team but its status


def _serve(config: Config, config_arg: str | None, verbose: bool) -> int:
    from memd.log import configure_logging
    from memd.serve.daemon import Daemon

    configure_logging("debug" if verbose else config.log.level, config.log.format)
    try:
        return Daemon(config, config_arg).run()
    except MemdError:
        return 1  # the daemon logged why (daemon_start_failed): say it once


def _service(action: str, config: Config) -> int:
    import os

    from memd.serve import service

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
    from memd.serve.router import Router

    def local_logging() -> None:  # this process works on the index itself
        from memd.log import configure_logging, configure_plain
        from memd.sources.chunker import keep_encoder_copy

        if verbose:
            configure_logging("debug", config.log.format)
        else:
            configure_plain("warning")  # warnings as plain lines, without loading structlog
        keep_encoder_copy(config.state_dir)  # an edited note is chunked: its tokens counted

    from memd.index.finishlock import wait_bounds

    def finish(memory: Memory) -> None:  # a one-shot read changed the index, as ``memd index``
        from memd.cli.finish import start

        start(memory, getattr(args, "config", None))

    router = Router(config, None if args.command == "index" else 60.0, on_local=local_logging,
                    waits=wait_bounds(os.environ), finish=finish, regrow=False)  # fmt: skip
    try:
        return run_command(args, router)
    finally:
        for notice in router.notices:
            cli_format.note(f"memd: {notice}")
        router.close()


def run_command(args: argparse.Namespace, router: Router) -> int:
    """Carry out a command that calls one method (search, get, status, ...) through
    ``router`` (a ``Router``, or the thin client's connection to a daemon) and print."""
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
            min_results=args.min_results,
            mode=args.mode,
            paths=args.paths,
            tags=args.tags,
            since=args.since,
            until=args.until,
            now=args.now,
            sources=args.sources,
            scope=args.scope,
            all_chunks=args.all_chunks or None,
            # A person who just saved a note wants it in the answer: wait briefly for
            # edits the daemon already knows of (scripts that read --json choose).
            wait_fresh=args.wait if args.wait is not None or as_json else HUMAN_WAIT,
        )
        return _emit(router.call("memory_search", params), as_json, cli_format.search)
    if command == "get":
        params.update(path=args.path, lines=args.lines, host=args.host)
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
    if command == "review":
        if args.apply or args.dismiss:
            params.update(ids=args.apply, dismiss=args.dismiss)
            result = router.call("memory_review_apply", params)
            _emit(result, as_json, cli_format.review_applied)
            return 1 if any("error" in a for a in result["applied"]) else 0
        params.update(since=args.since, kind=args.kind)
        return _emit(router.call("memory_review", params), as_json, cli_format.review)
    result = router.call("status", params)
    return _emit(result, as_json, lambda r: cli_format.status(r, _answered_by(router)))


def _answered_by(router: Router) -> dict:
    daemon = router.daemon
    if daemon is not None:
        return {"daemon": f"pid {daemon.get('pid', '?')}, serving this config"}
    return {"daemon": "none running; answered by this process"}


def _index(args: argparse.Namespace, router: Router, params: dict, as_json: bool) -> int:
    router.check_folder(params["workspace"])
    if router.daemon_running():
        result = router.call("reindex", {**params, "full": args.full})
        code = _emit(result, as_json, cli_format.index_report)
        if not as_json and router.config.embeddings.provider != "none":
            embedding = router.call("status", params).get("embedding")
            if embedding:
                cli_format.note(
                    f"the daemon embeds in the background: {cli_format.embedding_line(embedding)}"
                    "; keyword search works now, and 'memd status' shows the progress"
                )
        return code
    if args.full:  # every note is parsed again: as for a first index (``Router.memory``)
        from memd.index.prepare import warm_workers

        warm_workers()
    memory = router.memory(params["workspace"])
    return _index_here(
        memory, args.full, args.no_embed, as_json, args.wait, getattr(args, "config", None)
    )


def _index_here(memory: Memory, full: bool, no_embed: bool, as_json: bool, wait: bool,
                config_arg: str | None) -> int:  # fmt: skip
    """Index (and, with no daemon to do it later, embed) in this process, with progress.
    What later notes replaced is found here too with ``wait``; else by a process of its
    own, with the same ``config_arg``, once this one has returned (``memd.cli.finish``)."""
    on_terminal = sys.stderr.isatty() and not as_json
    progress = cli_format.Progress("indexing", "files") if on_terminal else None
    # --wait: with what later notes replaced, as the daemon keeps it, each note read once.
    # One pass and the process ends: no later pass re-chunks an append from a file's end.
    result = memory.index(full=full, progress=progress, current=wait, regrow=False).as_dict()
    if on_terminal:
        progress.clear()
    pending = memory.db.vector_counts()[1] if memory.embedder.enabled else 0
    if not as_json:  # this process's pass logged each file's warning already
        cli_format.index_report(result, warnings=False)
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
            # Batches of a few seconds: progress moves, and Ctrl-C loses little.
            batch = max(16, 2 * memory.embedder.batch_size)
            result["embedded"] = memory.embed_all(embedding, batch=batch)
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
    if not wait:
        from memd.cli.finish import start, started_line

        result.update(start(memory, config_arg))
        if not as_json and (line := started_line(result)):
            print(line)
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
