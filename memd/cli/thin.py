"""The ``memd`` command's front door: a read answered by a running daemon loads only what
talks to the socket and prints.

``memd search``, ``get``, ``status``, ``context`` and ``recall`` find the daemon through
``memd.socketcache`` (no YAML, no config dataclasses), parse only their own options,
check with ``health`` that the daemon serves this config, and ask it. Whenever that is not
so (no daemon, another daemon, a config file changed since it was last loaded, a workspace
folder missing, any other command) the full command line (``memd.cli.main``) runs instead,
and says what there is to say.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from memd import socketcache
from memd.client import Client, WrongDaemon, mismatch
from memd.errors import DaemonUnavailable, MemdError

THIN = ("search", "get", "status", "context", "recall")
_VALUED = ("--config", "--workspace")  # global options that take a value
_FLAGS = ("--json", "-v", "--verbose")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``memd`` command line; returns the exit code. A read command (a hook's
    answer, a search), run as the process's own command line, ends the process as soon as
    it is printed."""
    if argv is None and command_of(sys.argv[1:]) in THIN:
        # Over in a second: the cyclic collector would only walk again and again what the
        # command loaded (the statements a search after an edit pairs: a tenth of a second).
        gc.disable()
        code = _main(sys.argv[1:])
        _leave(code)
    return _main(sys.argv[1:] if argv is None else list(argv))


def _leave(code: int) -> None:
    """End the process now: the host waits for its exit, and an orderly one (a reader of
    the index still running, modules to tear down, the statements a search after an edit
    paired to free) takes tenths of a second."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a reader gone away: nothing more to say to it
        pass
    os._exit(code)


def _main(argv: list[str]) -> int:
    parsed: list[Any] = []  # the arguments, once parsed, and the config if remembered:
    try:  # the full command reuses them
        code = _thin(argv, parsed)
        if code is not None:
            sys.stdout.flush()  # here, so a reader gone away is met inside the ``try``
            return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # as memd.cli.main does
        return 0
    from memd.cli.main import main as full

    return full(argv, *parsed)


def command_of(argv: Sequence[str]) -> str | None:
    """The command of a command line, if it is one the thin client may answer and every
    option before it is a global one spelt out (an abbreviation is left to argparse)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _VALUED:
            i += 2
        elif word.split("=", 1)[0] in _VALUED or word in _FLAGS:
            i += 1
        elif word.startswith("-"):
            return None
        else:
            return word if word in THIN else None
    return None


def _thin(argv: list[str], parsed: list[Any]) -> int | None:
    """The exit code of a command the daemon answered, or None to run the full one (the
    arguments, parsed, put in ``parsed``)."""
    command = command_of(argv)
    if command is None:
        return None
    from memd.cli.parser import make_parser

    args = make_parser(only=command).parse_args(argv)
    parsed.append(args)
    config_arg = getattr(args, "config", None)
    target = socketcache.lookup(config_arg, os.environ)
    if target is None:
        return _status_of_last_good(args) if command == "status" else None
    if command == "status" and args.socket:
        as_json = getattr(args, "json", False)
        print(json.dumps({"socket": str(target.socket)}) if as_json else target.socket)
        return 0
    folder = target.workspace_path(getattr(args, "workspace", None))
    if folder is None or not os.path.isdir(folder):
        return None  # an unknown workspace, or a folder gone: the full command says which
    if command in ("context", "recall"):
        from memd.cli.hookrun import daemon_share, run_hook

        share = daemon_share()
        try:
            client = Client(target.socket, share)
        except DaemonUnavailable:  # none runs: the index, or MEMORY.md, without asking it
            return run_hook(command, args, target=target)
        try:
            client = _checked(client, target, late=True)
        except DaemonUnavailable:  # no answer within its share: the hook does not ask again
            return run_hook(command, args, asked=share, target=target)
        return None if client is None else _answer(command, args, client)
    try:
        client = Client(target.socket, 60.0)
    except DaemonUnavailable:
        # No daemon: this process works on the index, with the config as last loaded
        # from this very file (no YAML read again), if it was kept.
        parsed.append(socketcache.config_of(config_arg, os.environ))
        return None
    return _answer(command, args, client, target)


def _reach(target: socketcache.Target, timeout: float) -> Client | None:
    """A client for the daemon on the target's socket if it serves that config."""
    try:
        client = Client(target.socket, timeout)
    except DaemonUnavailable:
        return None
    return _checked(client, target)


def _checked(client: Client, target: socketcache.Target, late: bool = False) -> Client | None:
    """``client`` if its daemon serves the target's config (else closed, None); with
    ``late``, raises ``DaemonUnavailable`` when it took the connection but did not answer
    in time (a daemon starting, hung or too busy)."""
    try:
        client.health = client.call("health")
        if mismatch(client.health, target) is None:  # type: ignore[arg-type]
            return client
    except DaemonUnavailable:
        client.close()
        if late:
            raise
        return None
    except MemdError:
        pass
    client.close()
    return None


def _answer(
    command: str, args: Any, client: Client, target: socketcache.Target | None = None
) -> int | None:
    """Answer through ``client``: a daemon that serves this config, or (with ``target``)
    one asked ``health`` beside the first call, which is answered only if it does."""
    if command in ("context", "recall"):
        from memd.cli.hookrun import run_hook

        return run_hook(command, args, client)  # always 0, as without the thin client
    from memd.cli.main import failed, run_command

    router = _Connected(client, target)
    try:
        return run_command(args, router)  # type: ignore[arg-type]
    except (DaemonUnavailable, WrongDaemon):
        return None  # no daemon for this config (any more): the full command answers
    except (MemdError, KeyboardInterrupt) as exc:
        return failed(exc)
    finally:
        client.close()


class _Connected:
    """What ``memd.cli.main.run_command`` needs of a ``Router``, over one connection.

    With ``target``, the first call goes out together with ``health`` (one round trip for
    both) and its answer counts only if the daemon serves that config (else ``WrongDaemon``:
    it was a read, so asking it changed nothing)."""

    def __init__(self, client: Client, target: socketcache.Target | None = None) -> None:
        self.client = client
        self.target = target
        self.daemon = client.health
        self.notices: list[str] = []

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict:
        params = {k: v for k, v in (params or {}).items() if v is not None}
        if self.daemon is not None:
            return self.client.call(method, params)
        health, answer = self.client.pipeline([("health", {}), (method, params)])
        if isinstance(health, MemdError):
            raise health
        problem = mismatch(health, self.target)  # type: ignore[arg-type]
        if problem is not None:
            raise WrongDaemon(problem[0], problem[1], health)
        self.daemon = self.client.health = health
        if isinstance(answer, MemdError):
            raise answer
        return answer


def _status_of_last_good(args: Any) -> int | None:
    """``memd status`` when the config file changed since it was last loaded: load it (and
    remember it); when it cannot be loaded, ask the daemon of the config last loaded from
    that file, which says how what it serves differs from the file (``config_drift``)."""
    from memd.cli.main import load_and_remember

    config_arg = getattr(args, "config", None)
    try:
        load_and_remember(config_arg)
        return None  # loadable: remembered for the next command; this one runs in full
    except MemdError as exc:
        error = exc
    target = socketcache.last_good(config_arg, os.environ)
    client = None if target is None or args.socket else _reach(target, 60.0)
    if client is None:
        return None  # the full command reports the config's error
    print(f"memd: error: {error}", file=sys.stderr)
    print("memd: the daemon below still serves the config it read before", file=sys.stderr)
    return _answer("status", args, client)
