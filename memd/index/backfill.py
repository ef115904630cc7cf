"""Vectors for the chunks that have none, outside the daemon: all of them (``memd index``),
or a few before a one-shot search, so it ranks as the daemon would; and what a search
answered during a large back-fill says of its meaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memd.embed.providers import answers_within
from memd.errors import BackendUnavailable
from memd.index.index import Index
from memd.index.reconcile import Progress

if TYPE_CHECKING:
    from memd.index.interim import InterimTier

Step = Callable[[int], int]  # embed up to n chunks, say how many were saved
# A back-fill this large takes minutes to hours with the local model: the interim tier is
# made for it (memd.serve.interimplan), and a search answered meanwhile says so.
LARGE = 500


def meaning_not_ready(mode: str, pending: int, interim: InterimTier | None) -> str | None:
    """What a search answered in ``mode`` says while ``pending`` chunks wait for the full
    model, if that is a large back-fill: an answer that says ``hybrid`` must not pass for
    one by meaning when most notes cannot be found so (the interim tier's vectors, made
    from each chunk's words, find few questions asked in other words: docs/benchmarks.md)."""
    if mode == "keyword" or pending < LARGE:
        return None
    made = min(interim.done, pending) if interim is not None else 0
    tier = f", {made} of them with interim vectors from their words" if made else ""
    return (
        f"meaning not ready: {pending} chunks are not embedded yet{tier}; until they are, "
        "they are found mostly by their words (memd status shows the progress)"
    )


def embed_all(db: Index, step: Step, progress: Progress | None = None, batch: int = 64) -> int:
    """Embed every chunk that has no vector yet; how many were."""
    if not db.embedder.enabled:
        return 0
    db.learn_dimensions()  # vectors of a model that changed size count as missing
    pending = db.vector_counts()[1]
    done = 0
    size = min(batch, 8)  # a small first batch, so the time per chunk is known early
    while saved := step(size):
        done += saved
        size = batch
        if progress:
            progress(done, pending)
    return done


def embed_missing(db: Index, step: Step, budget: float, most: int = 200) -> int:
    """Load the local model and embed the chunks with no vector if at most ``most``; an
    endpoint that does not answer within ``budget`` seconds is left alone."""
    embedder = db.embedder
    if not embedder.enabled:
        return 0
    done, local = 0, embedder.provider == "local"
    try:
        if local:  # unbounded here: the query's own embedding has a time bound
            embedder.embed(["memd"], "query")
        db.learn_dimensions()
        pending = db.vector_counts()[1]
        # An endpoint may be dead or hung; the in-process model may only be slow.
        if 0 < pending <= most and (local or answers_within(embedder, budget)):
            while saved := step(8):
                done += saved
    except BackendUnavailable:
        pass  # the search says so itself: it answers by keyword, with a warning
    return done
