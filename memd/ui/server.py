"""Serving the page: a socket on 127.0.0.1 only, uvicorn on it, and the address to open.

``memd ui`` runs it in the foreground (Ctrl-C stops it); the daemon, with ``ui: {enabled:
true}``, runs it as one of its tasks until it stops. Either writes the address, token
included, to ``ui-<workspace>.json`` in the state folder (0600), so ``memd ui`` can print
the address of the page a running daemon serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memd.errors import DaemonError, MemdError
from memd.log import get_logger
from memd.store.private import load_json, save_json
from memd.ui.app import SAMPLE_S, Backend, make_app
from memd.ui.guard import Guard

if TYPE_CHECKING:
    from memd.config import Config

log = get_logger()

HOST = "127.0.0.1"  # never another interface: the page is for this machine's user


def need_web() -> None:
    """Raise a clear error when Starlette or uvicorn is missing (the ``mcp`` extra)."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MemdError(
            f"the page needs Starlette and uvicorn ({exc.name} is missing): they come with "
            "the mcp extra; in memd's checkout: pip install -e '.[mcp]'"
        ) from exc


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 at ``port`` (0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise DaemonError(
            f"cannot serve the page on {HOST}:{port}: {exc.strerror}; "
            "set ui.port to another port, or 0 for any free one"
        ) from exc
    sock.listen(64)
    return sock


def url_file(config: Config, workspace: str) -> Path:
    """Where the address of the page a daemon serves is kept while it runs."""
    return config.state_dir / f"ui-{workspace}.json"


@contextlib.contextmanager
def _announced(path: Path | None, url: str) -> Iterator[None]:
    if path is None:
        yield
        return
    save_json(path, {"url": url, "pid": os.getpid()})
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if (load_json(path) or {}).get("pid") == os.getpid():  # not a later page's
                path.unlink()


async def serve(
    backend: Backend,
    port: int,
    announce: Callable[[str], None],
    url_path: Path | None = None,
    own_signals: bool = True,
    renewed: Callable[[str], None] | None = None,
) -> None:
    """Serve the page until cancelled (or, with ``own_signals``, until Ctrl-C);
    ``announce`` gets the address to open once the socket listens, ``renewed`` the next
    one each time one is used; ``url_path`` keeps the current one."""
    need_web()
    import uvicorn

    sock = bind(port)

    def new_address(url: str) -> None:
        if url_path is not None:
            save_json(url_path, {"url": url, "pid": os.getpid()})
        if renewed is not None:
            renewed(url)

    guard = Guard(port=sock.getsockname()[1], on_new=new_address)
    config = uvicorn.Config(make_app(backend, guard), log_level="warning", access_log=False,
                            lifespan="off", server_header=False, date_header=False)  # fmt: skip
    server = uvicorn.Server(config) if own_signals else _quiet(uvicorn.Server)(config)
    with _announced(url_path, guard.url()):
        announce(guard.url())
        log.info("ui_serving", port=guard.port, workspace=backend.workspace)
        sampling = asyncio.create_task(_sample(backend))
        try:
            await server.serve(sockets=[sock])
        except asyncio.CancelledError:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.shutdown([sock]), 2.0)
            raise
        finally:
            sampling.cancel()
            sock.close()


async def _sample(backend: Backend) -> None:
    """Status every step while the page runs: the embedding chart's last hour."""
    while True:
        try:
            await backend.sample()
        except MemdError as exc:  # a daemon restarting: the next step tries again
            log.debug("ui_sample_failed", error=str(exc))
        await asyncio.sleep(SAMPLE_S)


def _quiet(base: type) -> type:
    """uvicorn's server inside the daemon, which owns SIGTERM and SIGINT itself."""

    class Quiet(base):  # type: ignore[misc, valid-type]
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Quiet
