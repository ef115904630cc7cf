"""Publishing one workspace's index to the team's store, local first.

The local index stays the truth; the team store is a copy that may lag. A pass compares
the two and replaces, whole, every file whose content changed or whose vectors arrived
since the last pass, and removes what is gone, so a pass cut short (the database away,
killed mid-way) is simply run again: nothing is lost and nothing is published twice.
What differs between the two is the outbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from memd.config import HIDDEN_TEXT
from memd.errors import FileRefused
from memd.sources.chunker import Chunk
from memd.sources.layout import is_session_path
from memd.sources.passages import passages
from memd.store.base import Store
from memd.store.rows import chunk_rows

# The last local vector row a pass has published, as "<local index id>:<row id>": a local
# index made anew (deleted, rebuilt) numbers its rows from 1 again, so its vectors are all new.
_VECTORS_SEEN = "published_vector_id"
_PAGE = 2000


@dataclass
class PublishReport:
    """What one publish pass did (``outbox``: files that differed when it began; ``held``:
    path -> content hash of what the team store holds for this scope after it)."""

    outbox: int = 0
    published: int = 0
    # path -> (content hash, why): files the team store would not take (a NUL byte, too
    # large, its host's share full); the rest were published all the same.
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: int = 0
    vectors: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)
    held: dict[str, str] = field(default_factory=dict)


def publish(
    local: Store,
    remote: Store,
    vector_key: str,
    cache_key: Callable[[str], bytes],
    cache_size: int = 100_000,
    transcripts: bool = False,
    progress: Callable[[], None] | None = None,
    hide: Collection[str] = HIDDEN_TEXT,
    refused: Mapping[str, tuple[str, str]] | None = None,
) -> PublishReport:
    """Bring ``remote`` (this host's scope of the team store) in line with ``local``.

    Raises ``StoreError`` when either store fails; the next pass takes up from there. A
    file the team store will not take is skipped and named in ``report.refused`` (and,
    given back as ``refused``, not sent again until its content changes).
    ``cache_key`` names a passage's vector as the local cache does; ``hide`` is the
    workspace's ``Chunking.hide``."""
    refused = refused or {}
    started = time.monotonic()
    report = PublishReport()
    mine = {p: r for p, r in local.files().items() if transcripts or not is_session_path(p)}
    theirs = remote.files()
    changed = {p for p, row in mine.items() if p not in theirs or theirs[p].hash != row.hash}
    index_id = local.get_meta("index_id", "") or ""
    was_id, _, was_last = (remote.get_meta(_VECTORS_SEEN, "") or "").rpartition(":")
    seen = last = int(was_last) if was_id == index_id and was_last.isdigit() else 0
    while page := local.vectors_after(vector_key, last, _PAGE):  # vectors embedded since
        last = page[-1][0]
        embedded = local.chunks_by_id(sorted({row[1] for row in page}))
        changed |= {hit.path for hit in embedded.values() if hit.path in mine}
    gone = sorted(set(theirs) - set(mine))
    report.outbox = len(changed) + len(gone)
    for path in sorted(changed):
        if path in refused and refused[path][0] == mine[path].hash:
            report.refused[path] = refused[path]  # as it was refused: not sent again
            continue
        meta = local.file_meta(path)
        if meta is None:  # removed from the index while this pass ran: the next one sees it
            report.skipped.append(path)
            continue
        chunks = local.file_chunks(mine[path].id)
        vectors = local.chunk_vectors(vector_key, [chunk_id for chunk_id, _ in chunks])
        now = local.files_at([path]).get(path)
        if now is None or (now.id, now.hash) != (mine[path].id, meta.hash):  # changed: next pass
            report.skipped.append(path)
            continue
        try:
            with remote.transaction():
                rows_out = chunk_rows(meta, [c for _, c in chunks], hide=hide)
                file_id = remote.replace_file(meta, rows_out)
                ids = [chunk_id for chunk_id, _ in remote.file_chunks(file_id)]
                rows = []
                for new_id, (old_id, chunk) in zip(ids, chunks, strict=True):
                    held = vectors.get(old_id, [])
                    parts = [part for part, _, _ in held]
                    keys = _keys(cache_key, chunk, meta.date, path, parts, hide)
                    for (part, blob, terms), key in zip(held, keys, strict=True):
                        rows.append((new_id, part, key, blob, terms))
                if rows:
                    remote.save_vectors(vector_key, rows, cache_size)
        except FileRefused as exc:  # this file's fault, not the database's: the rest go on
            report.refused[path] = (meta.hash, exc.reason)
            continue
        report.published += 1
        report.vectors += len(rows)
        if progress is not None:
            progress()
    if gone:
        with remote.transaction():
            remote.delete_files([theirs[path].id for path in gone])
        report.removed = len(gone)
    if last != seen or (was_id, was_last) != (index_id, str(last)):
        with remote.transaction():
            remote.set_meta(_VECTORS_SEEN, f"{index_id}:{last}")
    report.held = {p: row.hash for p, row in mine.items() if p not in report.skipped}
    report.seconds = time.monotonic() - started
    return report


def _keys(
    cache_key: Callable[[str], bytes],
    chunk: Chunk,
    date: str | None,
    path: str,
    parts: list[int],
    hide: Collection[str],
) -> list[bytes]:
    """The cache keys of a chunk's passages ``parts``: what the local embedder named them
    (the passages cut once for them all)."""
    if not parts:
        return []
    texts = passages(chunk.heading, chunk.text, date, path, hide)
    return [cache_key(texts[n] if n < len(texts) else f"{path}#{n}") for n in parts]
