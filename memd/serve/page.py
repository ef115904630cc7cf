"""The daemon's page (``ui: {enabled: true}``): ``memd.ui`` served beside the socket, over
the daemon's own dispatch, so the page answers as a client on the socket would."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from memd.errors import MemdError
from memd.log import get_logger

if TYPE_CHECKING:
    from memd.config import Config
    from memd.memory import Memory

log = get_logger()


async def serve_page(
    config: Config,
    dispatch: Callable[[str, Any], Awaitable[dict]],
    open_memory: Callable[[str | None], Memory],
) -> None:
    """Serve the page until the daemon stops (cancelled); nothing when ``ui.enabled`` is
    off. ``dispatch`` and ``open_memory`` are the daemon's. A page that cannot start is
    logged: the daemon serves on without it."""
    if not config.ui.enabled:
        return
    from memd.ui.app import Backend
    from memd.ui.server import serve, url_file

    workspace = config.workspace(None).name

    async def who() -> str:
        return f"pid {os.getpid()}"

    backend = Backend(dispatch, lambda: open_memory(workspace), who, workspace)
    try:
        await serve(backend, config.ui.port, lambda url: None, url_file(config, workspace),
                    own_signals=False)  # fmt: skip
    except MemdError as exc:
        log.error("ui_failed", error=str(exc))
