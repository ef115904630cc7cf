"""Vectors for the chunks that have none, outside the daemon: all of them (``memd index``),
or a few before a one-shot search, so it ranks as the daemon would."""

from __future__ import annotations

from collections.abc import Callable

from memd.embed.providers import answers_within
from memd.errors import BackendUnavailable
from memd.index.index import Index
from memd.index.reconcile import Progress

Step = Callable[[int], int]  # embed up to n chunks, say how many were saved


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
