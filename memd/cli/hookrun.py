"""The commands an agent host's hooks run: ``memd context``, ``memd recall`` and ``memd
flush --hook``. They never break the host, and context and recall always answer in time.

Whatever happens (no daemon, bad JSON on standard input, a timeout, a missing workspace)
they exit 0 and print nothing but memory; what went wrong is appended to ``hooks.log`` in
the state folder, which ``memd doctor`` shows. ``flush --hook`` sends its request to the
daemon and does not wait for the answer (the daemon finishes the flush); without one it
flushes in this process.

Context and recall answer within ``BUDGET_S``, from the first of these that can:

1. the daemon, when it answers within ``DAEMON_S`` (a daemon starting, back-filling or
   hung does not hold the session);
2. the index on disk, read directly and read-only (keyword search over what is indexed:
   no model is loaded, nothing is re-indexed), while time is left;
3. MEMORY.md as written (``memd.agent.coretext``: nothing to parse or load).

Each run's route goes to ``hooks.log`` and, as one short line after the memory, to the
model. The daemon and the index on disk give the same answer for the same index and time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from memd.cli.format import PENDING
from memd.cli.hookclock import (
    BUDGET_S,
    CONFIG_CPU_S,
    DAEMON_S,
    EXIT_S,
    INDEX_CPU_S,
    budget_s,
    daemon_share,
    in_time,
    since_start,
    stretch,
)
from memd.client import Client, connect
from memd.errors import DaemonUnavailable, MemdError
from memd.index.finishlock import FinishLock, wait_bounds

_HEALTHY_S = 0.25  # a daemon that has not answered by then: the index is read meanwhile
_BUSY = "too little time left to read the index on a machine this busy"
_MARKER_TOKENS = 40  # the route's line after the memory, at most
_ANSWER_S = 2.0  # flush --hook: a daemon that does not take the request in this long is skipped
_ROUTES = {
    "daemon": "memd: answered by the daemon",
    "index": "memd: read from the index on disk ({why}); the newest edits may be missing",
    "text": "memd: MEMORY.md as written ({why}); no notes or search",
}


def run_hook(
    command: str,
    args: argparse.Namespace,
    client: Client | None = None,
    asked: float = 0.0,
    target: Any = None,
) -> int:
    """Run one hook command; always 0. ``client``: a daemon that serves this config,
    found by the thin client (``memd.cli.thin``) without loading the config; asked first,
    within the daemon's share of the budget, before the routes that need the config.
    ``asked``: the seconds the thin client gave a daemon that did not answer (it is not
    asked again). ``target``: the config as the thin client found it remembered
    (``memd.socketcache``): on a machine too busy to load the config and read the index in
    time, MEMORY.md as written is answered from it at once."""
    started = time.monotonic() - since_start()  # the host has waited since the process began
    stretch()
    state_dir, config = None, None
    try:
        if client is not None:
            state_dir = Path((client.health or {}).get("state_dir") or ".")
        elif target is not None:
            state_dir = target.state_dir
        else:
            config = _config(args)
            state_dir = config.state_dir
        hook = _hook_input(args)
        method, params = _request(command, args, hook)
        params["workspace"] = getattr(args, "workspace", None)
        result, route, why = None, None, None
        budget = budget_s(os.environ)
        if client is not None and command != "flush":
            result, asked = _thin(client, method, params, started, budget)
            route = "daemon" if result is not None else None
        deadline = started + budget - EXIT_S
        busy = not in_time(started, deadline, CONFIG_CPU_S + INDEX_CPU_S)
        if result is None and target is not None and command != "flush" and busy:
            why = f"the daemon did not answer within {asked:.1f} s" if asked else None
            why = f"{why or 'no daemon is running'}; {_BUSY}"
            folder = target.workspace_path(params["workspace"])
            shown = {**params, "budget": _memory_budget(params, method)}
            result, route = _core_text(folder, method, shown), "text"
            _say_pending(result, _finish_lock(target, params["workspace"]))
        if result is None:
            config = config or _config(args)
            state_dir = config.state_dir
            if command == "flush":
                result = _call(config, method, params, wait=False, client=client)
            else:
                # A person's read may wait for what is current; a hook's within its budget.
                wait = 0.0 if args.hook else wait_bounds(os.environ)[method]
                result, route, why = answer(config, method, params, started, budget, asked, wait)
        if route is not None:
            _log(state_dir, command, None, time.monotonic() - started, route, why)
        if getattr(args, "json", False) and result is not None:
            result = {**result, "route": route} if route else result
            sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        elif result and result.get("text"):
            sys.stdout.write(result["text"])
            if route is not None:
                first = (why or "").split("; ")[0]
                sys.stdout.write(f"\n({_ROUTES[route].format(why=first)})\n")
            if result.get("current") == "pending":
                sys.stdout.write(f"(memd: {PENDING})\n")
    except Exception as exc:  # the host's session matters more than this hook
        _log(state_dir, command, exc, time.monotonic() - started)
    return 0


def _config(args: argparse.Namespace) -> Any:
    from memd.configfile import load_config

    return load_config(getattr(args, "config", None))


def _thin(
    client: Client, method: str, params: dict, started: float, budget: float
) -> tuple[dict | None, float]:
    """The answer of a daemon the thin client found, within its share of the budget (None
    when it did not give one: the other routes then answer), and the seconds it had when
    it gave none in time (else 0)."""
    asked = {k: v for k, v in params.items() if v is not None}
    asked["budget"] = _memory_budget(asked, method)
    share = daemon_share(started, budget)
    try:
        with client:
            client.set_timeout(share)
            return client.call(method, asked), share
    except (DaemonUnavailable, OSError):  # no answer in time: not asked again
        return None, share
    except MemdError:  # an answer, but an error: asked again, as without the thin client
        return None, 0.0


def answer(
    config: Any,
    method: str,
    params: dict,
    started: float,
    budget: float = BUDGET_S,
    asked: float = 0.0,
    wait: float = 0.0,
) -> tuple[dict | None, str, str | None]:
    """Context or recall from the daemon, the index on disk or the files, whichever answers
    first within ``budget`` seconds of ``started``; the answer, its route and why the
    routes before it did not. ``asked``: the seconds the thin client gave the daemon already,
    in which it did not answer (it is not asked again). ``wait``: seconds more the index
    on disk may take while what is current is being found (``memd.cli.finish``)."""
    params = {k: v for k, v in params.items() if v is not None}
    lock = _finish_lock(config, params.get("workspace"))
    wait = wait if wait and lock is not None and lock.in_flight() is not None else 0.0
    # The line naming the route comes after the memory: within the budget too.
    params["budget"] = _memory_budget(params, method)
    from memd.sources.chunker import keep_encoder_copy

    keep_encoder_copy(config.state_dir)
    # The daemon's share counts from now (a loaded machine's slow start of this process
    # is no reason to skip a daemon that answers: asking it costs this process next to
    # nothing, where reading the index means importing the search); the index is read
    # meanwhile. A budget set longer gives the daemon longer too.
    deadline = started + budget + wait - EXIT_S
    share = budget * DAEMON_S / BUDGET_S
    until = min(time.monotonic() + share, deadline)
    share = max(until - time.monotonic(), 0.05)
    said: dict[str, Any] = {}
    daemon = threading.Thread(target=_ask_into, args=(said, config, method, params, until),
                              daemon=True)  # fmt: skip
    if not asked:
        daemon.start()
        # A daemon answers a healthy hook in a fraction of its share: the index is read
        # only when it has not by then (in parallel: one that never answers costs no more).
        daemon.join(min(_HEALTHY_S, share))
    done: dict[str, Any] = {}
    # What is current being found: the index is read once it is, or when only twice a
    # read's time is left (the index saying "pending" beats MEMORY.md as written).
    current_by = deadline - 2 * INDEX_CPU_S * stretch()
    if wait:  # a person's read waits its own bound, whatever the budget
        current_by = min(current_by, time.monotonic() + wait)
    reader = threading.Thread(target=_read_into, daemon=True,
                              args=(done, config, method, params, lock, current_by))  # fmt: skip
    reading = (asked or daemon.is_alive() or said.get("result") is None) and in_time(
        started, deadline
    )
    if reading:
        _ready_to_leave()
        reader.start()
    if not asked:
        daemon.join(max(until + 0.05 - time.monotonic(), 0.0))
    if said.get("result") is not None:
        return said["result"], "daemon", None
    if asked or daemon.is_alive() or isinstance(said.get("error"), DaemonUnavailable):
        why = f"the daemon did not answer within {asked or share:.1f} s"
    elif "error" in said:  # a daemon of another config, a bad answer: read the index
        why = f"the daemon could not answer: {said['error']}"
    else:
        why = "no daemon is running"
    if reading:
        reader.join(max(deadline - time.monotonic(), 0.0))
    if "result" in done:
        return done["result"], "index", why
    if "error" in done:
        why = f"{why}; the index could not be read: {done['error']}"
    elif reading:
        why = f"{why}; the index did not answer in time"
    else:
        why = f"{why}; {_BUSY}"
    folder = config.workspace(params.get("workspace")).path
    return _say_pending(_core_text(folder, method, params), lock), "text", why


def _finish_lock(config: Any, workspace: str | None) -> FinishLock | None:
    """The workspace's finish lock (None: no such workspace); ``config``: a ``Config``, or
    the thin client's ``Target``."""
    names = [ws.name for ws in config.workspaces if workspace in (None, ws.name)]
    return FinishLock(config.state_dir, names[0]) if names else None


def _say_pending(said: dict, lock: FinishLock | None) -> dict:
    """MEMORY.md as written says so too while what is current is being found."""
    if lock is not None and lock.in_flight() is not None:
        said["current"] = "pending"
    return said


def _ready_to_leave() -> None:
    """Import, before the index's reader starts importing the search, what answering at the
    deadline takes: this thread then never waits on an import the reader holds."""
    import memd.agent.coretext
    import memd.store.private  # noqa: F401  (hooks.log)


def _core_text(folder: Path | None, method: str, params: dict) -> dict:
    """MEMORY.md as written, within the budget: at once, with nothing more to load."""
    from memd.agent.coretext import core_name, core_text

    if method != "memory_context" or folder is None:
        return {"text": "", "lines": 0, "tokens": 0}  # a prompt needs a search
    return core_text(folder, core_name(folder), params.get("budget") or _default_budget(method))


def _ask_into(asked: dict, config: Any, method: str, params: dict, deadline: float) -> None:
    try:
        asked["result"] = _from_daemon(config, method, params, deadline)
    except Exception as exc:
        asked["error"] = exc


def _from_daemon(config: Any, method: str, params: dict, deadline: float) -> dict | None:
    """The daemon's answer, or None when none runs; raises ``DaemonUnavailable`` when it
    does not answer by ``deadline``."""
    client = connect(config, timeout=max(deadline - time.monotonic(), 0.05))
    if client is None:
        if config.socket.exists() and time.monotonic() >= deadline:
            raise DaemonUnavailable("the daemon did not answer in time")
        return None
    with client:
        client.set_timeout(max(deadline - time.monotonic(), 0.05))
        return client.call(method, params)


def _read_into(done: dict, config: Any, method: str, params: dict, lock: FinishLock | None,
               until: float) -> None:  # fmt: skip
    try:
        flight = lock.wait(until - time.monotonic()) if lock is not None else None
        done["result"] = _read(config, method, params)
        if flight is not None:  # never an old fact silently: the answer says so
            done["result"]["current"] = "pending"
    except Exception as exc:
        done["error"] = f"{type(exc).__name__}: {exc}"


def _read(config: Any, method: str, params: dict) -> dict:
    """Context or recall in this process, through the index on disk read-only."""
    from memd.agent.context import context, recall
    from memd.agent.view import DiskView
    from memd.search.request import parse_now

    name = params.get("workspace")
    config.workspace(name).check_folder()
    view = DiskView(config, name)
    try:
        budget = params.get("budget") or _default_budget(method)
        if method == "memory_context":
            today = parse_now(params.get("now"), config.flush.now).date()
            said = context(view, params.get("cwd"), params.get("source"), budget, today)
        else:
            said = recall(view, params.get("prompt", ""), budget, params.get("now"))
        return said.as_dict()
    finally:
        view.close()


def _memory_budget(params: dict, method: str) -> int:
    """The tokens the memory may take: the line naming the route comes after it."""
    return max((params.get("budget") or _default_budget(method)) - _MARKER_TOKENS, 50)


def _default_budget(method: str) -> int:
    from memd.agent import CONTEXT_BUDGET, RECALL_BUDGET

    return CONTEXT_BUDGET if method == "memory_context" else RECALL_BUDGET


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
                                  "budget": args.budget, "now": args.now}  # fmt: skip
    if command == "recall":
        prompt = " ".join(args.prompt) if args.prompt else hook.get("prompt", "")
        return "memory_recall", {"prompt": prompt, "budget": args.budget, "now": args.now}
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


def _log(
    state_dir: Any,
    command: str,
    exc: BaseException | None,
    seconds: float,
    route: str | None = None,
    why: str | None = None,
) -> None:
    """One JSON line in the state folder's hooks.log (a failure, or the route an answer
    took); never raises."""
    if state_dir is None:
        return
    try:
        from memd.store.private import private_file, private_folder

        private_folder(state_dir)
        path = state_dir / "hooks.log"
        private_file(path)
        line: dict[str, Any] = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                                "command": command}  # fmt: skip
        if exc is not None:
            line["error"] = f"{type(exc).__name__}: {exc}"
        if route is not None:
            line["route"] = route
        if why:
            line["why"] = why
        line["seconds"] = round(seconds, 3)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except Exception:  # a full disk: the hook still returns 0
        pass
