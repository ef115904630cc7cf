"""Texts asked for at once, embedded in one call to an engine that runs one call at a time.

Searches arriving together each want their question embedded. One at a time, each waits
for every question ahead of it (four readers on a busy machine: a question's p95 went from
0.13 s alone to 0.55 s, most of it waiting, bench/query_embed_bench.py); embedded together,
a question waits for the call running now and then for one call, whatever the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Asked:
    texts: list[str]
    kind: str
    vectors: Any = None
    error: BaseException | None = None
    done: bool = False


class Together:
    """Runs ``embed(texts, kind)`` holding ``engine`` for every caller waiting, one call
    per kind of text."""

    def __init__(self, embed: Callable[[list[str], str], Any], engine: threading.Lock) -> None:
        self.embed = embed
        self._engine = engine  # held by each call: one at a time
        self._lock = threading.Lock()  # guards _waiting
        self._waiting: list[_Asked] = []

    def __call__(self, texts: list[str], kind: str) -> Any:
        """The vectors of ``texts``; raises what the call that embedded them raised."""
        asked = _Asked(list(texts), kind)
        with self._lock:
            self._waiting.append(asked)
        with self._engine:
            if not asked.done:  # no call took it yet: this one takes every waiting text
                with self._lock:
                    batch = [a for a in self._waiting if a.kind == kind]
                    self._waiting = [a for a in self._waiting if a.kind != kind]
                self._run(batch, kind)
        if asked.error is not None:
            raise asked.error
        return asked.vectors

    def _run(self, batch: list[_Asked], kind: str) -> None:
        try:
            vectors = self.embed([t for a in batch for t in a.texts], kind)
        except BaseException as exc:  # each caller raises it in its own thread
            for a in batch:
                a.error, a.done = exc, True
            return
        start = 0
        for a in batch:
            a.vectors, a.done = vectors[start : start + len(a.texts)], True
            start += len(a.texts)
