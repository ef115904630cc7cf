"""memd's logging: structlog events, set up by entry points (JSON lines when not on a
terminal, readable otherwise).

Only entry points call ``configure_logging``; library modules call ``get_logger()``. Until
a program configures structlog, memd's events go to the standard library's ``memd``
logger instead, so a program that imports memd as a library never sees them on stdout.
structlog itself is imported only by ``configure_logging``: a one-shot command that only
prints warnings (``configure_plain``) does not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}


class _Logger:
    """Emits to structlog once a program configured it, else to ``logging.getLogger("memd")``."""

    def __getattr__(self, level: str) -> Callable[..., None]:
        def emit(event: str, **fields: Any) -> None:
            structlog = sys.modules.get("structlog")  # not imported: nobody configured it
            if structlog is not None and structlog.is_configured():
                getattr(structlog.get_logger(), level)(event, **fields)
                return
            stdlib = logging.getLogger("memd")
            number = _LEVELS.get(level, logging.INFO)
            if stdlib.isEnabledFor(number):
                shown = " ".join(f"{k}={v!r}" for k, v in fields.items())
                stdlib.log(number, "%s %s", event, shown, exc_info=level == "exception")

        return emit


class Tally:
    """Steady work's log: each event at debug, and at info one line a minute with the
    sums of its counts (written with the first event after the minute is up)."""

    def __init__(self, event: str, every_s: float = 60.0) -> None:
        self.event, self.every_s = event, every_s
        self._lock = threading.Lock()
        self._sums: dict[str, int] = {}
        self._since = time.monotonic()

    def add(self, **counts: Any) -> None:
        log = get_logger()
        log.debug(self.event, **counts)
        with self._lock:
            for key, value in counts.items():
                if isinstance(value, int | float):
                    self._sums[key] = self._sums.get(key, 0) + value
            self._sums["events"] = self._sums.get("events", 0) + 1
            seconds = time.monotonic() - self._since
            if seconds < self.every_s:
                return
            sums, self._sums, self._since = self._sums, {}, time.monotonic()
        # The window's length goes in beside the sums, never as a keyword next to them: a
        # count named like it (a publish's own ``seconds``) raised TypeError and ended
        # the publisher a minute after start.
        log.info(f"{self.event}_summary", **{**sums, "window_s": round(seconds)})


def get_logger() -> Any:
    """The logger memd's modules use (``log.info("event", key=value)``)."""
    return _Logger()


def configure_plain(level: str = "warning", stream: TextIO | None = None) -> None:
    """``memd: warning: event key='value'`` lines on ``stream`` (stderr) for a one-shot
    command, through the standard library only."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_PlainFormatter("memd: %(levelname)s: %(message)s"))
    logger = logging.getLogger("memd")
    logger.handlers[:] = [handler]
    logger.setLevel(_LEVELS[level])
    logger.propagate = False


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.levelname = record.levelname.lower()
        return super().format(record)


def configure_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Send memd's events to ``stream`` (stderr) at ``level`` in ``fmt`` (auto/json/console)."""
    import structlog

    safe = _safe_logger(structlog)
    stream = stream or sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    as_json = fmt == "json" or (fmt == "auto" and not tty)
    renderer = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=tty)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=lambda *args: safe(stream),
        cache_logger_on_first_use=False,
    )


def _safe_logger(structlog: Any) -> type:
    class _SafeLogger(structlog.PrintLogger):
        """A log line that cannot be written (full disk, closed pipe) is dropped: losing a
        log line must never stop indexing or serving."""

        def msg(self, message: str) -> None:
            with contextlib.suppress(OSError, ValueError):
                super().msg(message)

        log = debug = info = warn = warning = msg
        fatal = failure = err = error = critical = exception = msg

    return _SafeLogger
