"""The interim tier of one workspace's vectors, while the full model back-fills them.

Made once a back-fill is large (``memd.embed.interim``): every chunk the full model has not
reached gets passage vectors from its words, newest notes first, held in memory only (they
are made again in minutes after a restart, and dropped when the back-fill ends). Its words
are bounded (``WordVectors.vocabulary``), so it finishes in minutes whatever the notes hold.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter
from collections.abc import Collection, Mapping

import memd.embed.numpy_lazy as np
from memd.embed.interim import INTERIM_BAND, WORD_BATCH, WordVectors, words
from memd.embed.providers import Embedder
from memd.errors import MemdError
from memd.log import get_logger
from memd.sources.markdown import links
from memd.sources.mtimes import written_together
from memd.sources.passages import passages
from memd.store.vectors import VectorIndex

log = get_logger()

_SLICE = 400  # chunks made searchable at a time
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()


class InterimTier:
    """Interim passage vectors of the chunks that had no full vector when it was made."""

    band = INTERIM_BAND

    def __init__(self, embedder: Embedder, hide: Collection[str], name: str = "") -> None:
        dims = embedder.dimensions or 0
        self.words = WordVectors(
            lambda batch, first: embedder.embed(batch, "passage", WORD_BATCH, first), dims
        )
        self.vectors = VectorIndex("interim")
        self._hide = hide
        self._name = name  # the workspace's, for the log
        self.done = 0  # chunks with interim vectors
        self.total = 0  # chunks it is making them for
        self._started: float | None = None  # monotonic time the first slice began

    def progress(self) -> dict:
        """``{done, total, per_s, eta_s}``: chunks made of all, the rate so far (chunks a
        second) and the seconds left at that rate (None until a slice is done)."""
        out: dict = {"done": self.done, "total": self.total, "per_s": None, "eta_s": None}
        if self._started is not None and self.done:
            took = time.monotonic() - self._started
            per_s = self.done / took if took > 0 else None
            if per_s:
                out["per_s"] = round(per_s, 1)
                out["eta_s"] = round((self.total - self.done) / per_s)
        return out

    def build(self, chunks: list[tuple], cancel: threading.Event) -> None:
        """Vectors for ``chunks`` (``Store.pending_chunks`` rows, in the order to make
        them: ``reading_order``), a slice at a time, each searchable as soon as it is made;
        stops early when ``cancel`` is set. Embeds (minutes for a large vault); when the
        model fails, what was made so far still serves."""
        try:
            self._build(chunks, cancel)
        except MemdError as exc:
            log.warning("interim_vectors_failed", workspace=self._name, error=str(exc))
            return
        ms = round((time.monotonic() - (self._started or 0.0)) * 1000)
        log.info("interim_vectors_made", workspace=self._name, chunks=self.done,
                 words=len(self.words.table), ms=ms)  # fmt: skip

    def _build(self, chunks: list[tuple], cancel: threading.Event) -> None:
        self.total = len(chunks)
        self._started = time.monotonic()
        # The words' idf over the whole back-fill, as FTS5's is over the index; passages
        # are cut a slice at a time (cutting 40k chunks at once took a minute and 300 MB).
        self.words.count(words(f"{heading}\n{body}") for _, heading, body, _, _ in chunks)
        vocabulary = self.words.vocabulary()
        for start in range(0, len(chunks), _SLICE):
            if cancel.is_set():
                return
            rows = [
                (chunk_id, n, words(text))
                for chunk_id, heading, body, date, path in chunks[start : start + _SLICE]
                for n, text in enumerate(passages(heading, body, date, path, self._hide))
            ]
            self.words.learn((bag for _, _, bag in rows), only=vocabulary)
            self.vectors.add(
                np.array([r[0] for r in rows], dtype=np.int64),
                np.array([r[1] for r in rows], dtype=np.int32),
                self.words.compose([r[2] for r in rows]),
            )
            self.done = min(start + _SLICE, len(chunks))

    def query(self, text: str) -> np.ndarray | None:
        """The question's interim vector, its words not in the workspace embedded now
        (they carry its meaning most: "hobbies" for notes that say "painting"); None when
        it has no word. May raise ``BackendUnavailable``."""
        bag = words(text)
        self.words.learn([bag], first=True)
        vector = self.words.compose([bag])[0]
        return vector if vector.any() else None


def reading_order(
    chunks: list[tuple], files: Mapping[str, tuple[str, str | None, float | None]]
) -> list[tuple]:
    """``chunks`` (``Store.pending_chunks`` rows) in the order people would want them
    searchable: MEMORY.md first, then the newest notes by their own date (a daily note's
    name, front matter) or their mtime, then the notes most others link to. ``files``:
    each path's ``(source, date, modified)``.

    Mtimes written together (a git checkout gives every note the same one) order nothing:
    those notes go by their date, then their inbound links, not by path."""
    bulk = written_together(m for _, _, m in files.values() if m is not None)
    inbound = _inbound_links(chunks, files)
    first_seen: dict[str, int] = {}
    for n, row in enumerate(chunks):
        first_seen.setdefault(row[4], n)

    def key(path: str) -> tuple:
        source, date, modified = files.get(path, ("memory", None, None))
        if date is not None:
            try:
                day: float | None = dt.date.fromisoformat(date).toordinal() + 1.0
            except ValueError:
                day = None
        else:
            usable = modified is not None and not (bulk and bulk[0] <= modified <= bulk[1])
            day = _EPOCH_DAY + modified / 86400 if usable else None
        group = 0 if source == "core" else 2 if source == "sessions" else 1
        return (group, day is None, -(day or 0.0), -inbound[path], first_seen[path])

    order = {path: key(path) for path in first_seen}
    return sorted(chunks, key=lambda row: order[row[4]])


def _inbound_links(chunks: list[tuple], files: Mapping[str, tuple]) -> Counter[str]:
    """How many other notes link to each path (by its name, as Obsidian's links do)."""
    by_name: dict[str, str] = {}
    for path in files:
        by_name.setdefault(path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower(), path)
    sources: dict[str, set[str]] = {}
    for _, _, body, _, path in chunks:
        for target, _ in links(body):
            name = target.split("#", 1)[0].strip().lower().removesuffix(".md")
            linked = by_name.get(name)
            if linked is not None and linked != path:
                sources.setdefault(linked, set()).add(path)
    return Counter({path: len(who) for path, who in sources.items()})
