"""The commands an agent host's hooks run: ``memd context``, ``memd recall`` and ``memd
flush --hook``. They never break the host.

Whatever happens (no daemon, bad JSON on standard input, a timeout, a missing workspace)
they exit 0 and print nothing but memory; what went wrong is appended to ``hooks.log`` in
the state folder, which ``memd doctor`` shows. With a daemon they ask it (one round trip;
``flush --hook`` does not even wait for the answer: the daemon finishes the flush); without
one they do the work in this process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from memd.client import Client, connect
from memd.errors import DaemonUnavailable

_ANSWER_S = 2.0  # a daemon that does not answer in this long is skipped: the host waits


def run_hook(command: str, args: argparse.Namespace, client: Client | None = None) -> int:
    """Run one hook command; always 0. ``client``: a daemon that serves this config,
    found by the thin client (``memd.cli.thin``) without loading the config."""
    started = time.monotonic()
    state_dir = None
    try:
        if client is None:
            from memd.configfile import load_config

            config = load_config(getattr(args, "config", None))
            state_dir = config.state_dir
        else:
            config, state_dir = None, Path((client.health or {})["state_dir"])
        hook = _hook_input(args)
        method, params = _request(command, args, hook)
        params["workspace"] = getattr(args, "workspace", None)
        result = _call(config, method, params, wait=command != "flush", client=client)
        if getattr(args, "json", False) and result is not None:
            sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        elif result and result.get("text"):
            sys.stdout.write(result["text"])
    except Exception as exc:  # the host's session matters more than this hook
        _log(state_dir, command, exc, time.monotonic() - started)
    return 0


def _hook_input(args: argparse.Namespace) -> dict:
    if not getattr(args, "hook", False):
        return {}
    raw = sys.stdin.read()
    hook = json.loads(raw) if raw.strip() else {}
    if not isinstance(hook, dict):
        raise ValueError("the hook's input is not a JSON object")
    return hook


def _request(command: str, args: argparse.Namespace, hook: dict) -> tuple[str, dict[str, Any]]:
    if command == "context":
        source = hook.get("source") if isinstance(hook.get("source"), str) else None
        cwd = args.cwd or hook.get("cwd") or (None if args.hook else os.getcwd())
        return "memory_context", {"cwd": cwd, "source": args.source or source,
                                  "budget": args.budget}  # fmt: skip
    if command == "recall":
        prompt = " ".join(args.prompt) if args.prompt else hook.get("prompt", "")
        return "memory_recall", {"prompt": prompt, "budget": args.budget}
    return "memory_flush_hook", {"hook": hook, "host": args.host_name}


def _call(
    config: Any, method: str, params: dict, wait: bool, client: Client | None = None
) -> dict | None:
    params = {k: v for k, v in params.items() if v is not None}
    if client is None:
        try:
            client = connect(config, timeout=_ANSWER_S)
        except DaemonUnavailable:
            client = None
    if client is not None:
        with client:
            if not wait:
                client.send(method, params)
                return None
            return client.call(method, params)
    from memd.serve.router import Router

    router = Router(config, _ANSWER_S)
    try:
        return router.call(method, params)
    finally:
        router.close()


def _log(state_dir: Any, command: str, exc: BaseException, seconds: float) -> None:
    """One JSON line in the state folder's hooks.log; never raises."""
    if state_dir is None:
        return
    try:
        from memd.store.private import private_file, private_folder

        private_folder(state_dir)
        path = state_dir / "hooks.log"
        private_file(path)
        line = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": command,
                "error": f"{type(exc).__name__}: {exc}", "seconds": round(seconds, 3)}  # fmt: skip
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except Exception:  # a full disk: the hook still returns 0
        pass
