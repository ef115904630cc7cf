"""``memd ui``: the address of a page that shows memory, and the page itself when no
daemon serves one.

A daemon serving this config with ``ui: {enabled: true}`` already serves the page: its
address is printed and the command ends. Otherwise the page is served here until Ctrl-C;
what it asks (search, a note, status, the review's buttons) goes to the daemon when one
runs, so one process writes, or to this process's own view of the index when none does
(the page says so). The timeline and the updates are read from the index either way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from memd.store.private import load_json
from memd.ui.server import need_web, serve, url_file

if TYPE_CHECKING:
    from memd.config import Config
    from memd.memory import Memory


def ui(args: argparse.Namespace, config: Config) -> int:
    """Print the page's address; serve it here unless a daemon does."""
    need_web()
    from memd.serve.router import Router

    workspace = config.workspace(getattr(args, "workspace", None)).name
    config.workspace(workspace).check_folder()
    router = Router(config, timeout=60.0)
    client = router.connect(timeout=5)
    if client is not None:
        pid = client.health.get("pid")
        client.close()
        kept = load_json(url_file(config, workspace))
        if isinstance(kept, dict) and kept.get("pid") == pid and kept.get("url"):
            print(kept["url"])
            print(f"served by the daemon (pid {pid}); it stops with the daemon", file=sys.stderr)
            return 0
    memory: list[Memory] = []

    def opened() -> Memory:
        if not memory:  # read-only beside a daemon: this process never repairs its index
            from memd.memory import Memory

            memory.append(Memory(config, workspace, concurrent_reads=True))
        return memory[0]

    def answer(method: str, params: dict[str, Any]) -> dict:
        params = {k: v for k, v in params.items() if v is not None}
        client = router.connect()
        if client is not None:
            with client:
                return client.call(method, params)
        from memd.serve.methods import call

        return call(lambda name: opened(), method, params)

    async def call(method: str, params: dict[str, Any]) -> dict:
        return await asyncio.to_thread(answer, method, params)

    async def daemon() -> str | None:
        client = await asyncio.to_thread(router.connect, 5)
        if client is None:
            return None
        client.close()
        return f"pid {client.health.get('pid')}"

    def announce(url: str) -> None:
        print(url, flush=True)
        print("serving the page here until Ctrl-C; the address opens it once", file=sys.stderr,
              flush=True)  # fmt: skip

    def renewed(url: str) -> None:
        print(f"the address was used; for another browser: {url}", file=sys.stderr, flush=True)

    from memd.ui.app import Backend

    port = args.port if args.port is not None else config.ui.port
    try:
        asyncio.run(
            serve(Backend(call, opened, daemon, workspace), port, announce, renewed=renewed)
        )
    except KeyboardInterrupt:
        pass
    finally:
        if memory:
            memory[0].close()
        router.close()
    return 0
