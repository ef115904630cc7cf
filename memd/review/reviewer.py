"""One workspace's reviews: run one, keep the latest report, dismiss and apply proposals.

The report lives in the state folder (``review-<workspace>.json``, 0600) with the ids
dismissed for good and those applied, so a restart changes nothing a person decided.
Applying runs a fresh review and finds the id in it: an id is a hash of the cited lines'
text, so finding it proves those lines still say what the proposal rests on. Every write
goes through the journal: an append to MEMORY.md, or a store or forget of memd's own key.
What later notes superseded is kept by ``memd.review.currency`` as notes change, not here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import memd.embed.numpy_lazy as np
from memd.config import Config
from memd.embed.providers import Embedder
from memd.errors import InvalidParams, MemdError
from memd.index.workers import spawned_pool
from memd.log import get_logger
from memd.records import FlushPrompt, Proposal, ReviewAnswer, ReviewApplied
from memd.review.promote import Embed, known_in_meaning
from memd.review.review import KINDS, SHOWN, Note, review
from memd.review.statements import statements
from memd.sources.layout import Workspace
from memd.store.private import load_json, save_json

if TYPE_CHECKING:
    from memd.write.journal import Journal

log = get_logger()

ISOLATE_FROM_CHARS = 2_000_000  # notes this large are reviewed in a process of their own


class Reviewer:
    """Reviews of one workspace, their report, and what a person did with them."""

    def __init__(
        self,
        workspace: Workspace,
        journal: Callable[[], Journal],
        config: Config,
        embedder: Embedder,
        isolated: bool = False,
        cached: Cached | None = None,
    ) -> None:
        self.workspace, self._journal = workspace, journal  # made on first write
        self._path = config.state_dir / f"review-{workspace.name}.json"
        self._embed: Embed | None = None
        # Statements are compared with each other: e5's "query" side (``cached``'s default).
        if embedder.enabled and cached is not None:
            self._embed = lambda texts: self._embed_kept(texts, cached)
        elif embedder.enabled:
            self._embed = lambda texts: embedder.embed(texts, "query")
        self._band = embedder.cosine_band
        self._today = lambda: config.flush.now().date().isoformat()
        self._lock = threading.Lock()  # the report file: one reader-writer at a time
        # In the daemon a review runs in a process of its own: pure Python for seconds, it
        # would hold the interpreter lock searches and flushes wait for.
        self._isolated = isolated
        self._pools: set = set()  # the process a review runs in, while it runs
        self._waiting: tuple[tuple | None, dict | None] | None = None  # (file stamp, counts)

    def run(self, since: str | None = None, kinds: Sequence[str] = KINDS) -> ReviewAnswer:
        """Review the workspace now; a whole review (no filter) becomes the kept report."""
        for kind in kinds:
            if kind not in KINDS:
                raise InvalidParams("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
        if since is not None and not _is_date(since):
            raise InvalidParams("since", f"must be a date as YYYY-MM-DD, got {since!r}")
        started = time.monotonic()
        notes = self._notes()
        proposals = self._propose(notes, since, tuple(kinds))
        warning = None
        if self._embed is not None and "promote" in kinds:
            try:
                proposals = self._drop_known(proposals, notes, self._embed)
            except MemdError as exc:  # a dead embedder costs the check by meaning only
                warning = "; ".join(w for w in (warning, "proposals not checked against "
                                                f"MEMORY.md by meaning: {exc}") if w)  # fmt: skip
        with self._lock:
            state = self._load()
            closed = set(state["dismissed"]) | set(state["applied"])
            waiting = [p for p in proposals if p.id not in closed]
            shown, more = waiting[:SHOWN], max(len(waiting) - SHOWN, 0)
            now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            answer = ReviewAnswer(shown, len(shown), now, len(notes),
                                  len(proposals) - len(waiting),
                                  round(time.monotonic() - started, 2), warning, more)  # fmt: skip
            if since is None and tuple(kinds) == KINDS:
                state["report"] = answer.as_dict()
                self._save(state)
        log.info("review_done", workspace=self.workspace.name, proposals=len(waiting),
                 seconds=answer.seconds)  # fmt: skip
        return answer

    def latest(self) -> dict | None:
        """The kept report (as ``ReviewAnswer.as_dict()``) without what was closed since."""
        with self._lock:
            state = self._load()
        report = state.get("report")
        if report is None:
            return None
        closed = set(state["dismissed"]) | set(state["applied"])
        report["proposals"] = [p for p in report["proposals"] if p["id"] not in closed]
        report["count"] = len(report["proposals"])
        return report

    def waiting(self) -> dict | None:
        """How many proposals of the kept report wait, and when it was made (None: no
        review yet). Read again only when the report file changed: in the daemon every
        answer's activity asks."""
        try:
            st = self._path.stat()
            stamp: tuple | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if self._waiting is None or self._waiting[0] != stamp:
            report = self.latest()
            kept = report and {"waiting": report["count"], "reviewed_at": report["reviewed_at"]}
            self._waiting = (stamp, kept)
        return dict(self._waiting[1]) if self._waiting[1] else None

    def mention(self, prompt: FlushPrompt) -> FlushPrompt:
        """``prompt`` with a word on the proposals waiting, so a heartbeat can act on them."""
        waiting = (self.waiting() or {}).get("waiting", 0)
        if not waiting:
            return prompt
        word = "proposal waits" if waiting == 1 else "proposals wait"
        user = (f"{prompt.user}\n\n{waiting} memory review {word} (memory_review): "
                "promotions to MEMORY.md and conflicting notes to settle.")  # fmt: skip
        return dataclasses.replace(prompt, user=user, review_waiting=waiting)

    def dismiss(self, ids: Sequence[str]) -> ReviewApplied:
        """Hide proposals for good (until a cited line changes, which makes a new id)."""
        with self._lock:
            state = self._load()
            state["dismissed"] = sorted(set(state["dismissed"]) | set(ids))
            self._save(state)
        return ReviewApplied([], list(ids))

    def apply(self, ids: Sequence[str]) -> ReviewApplied:
        """Carry out proposals by id; each answer says what was written, or why not."""
        if not ids:
            raise InvalidParams("ids", "give at least one proposal id")
        fresh = {p.id: p for p in self._propose(self._notes(), None, KINDS)}
        done = []
        for pid in dict.fromkeys(ids):
            with self._lock:
                before = self._load()["applied"].get(pid)
            if before is not None:
                done.append({**before, "id": pid, "duplicate": True})
                continue
            proposal = fresh.get(pid)
            if proposal is None:
                done.append({"id": pid, "error": "no such proposal now (a cited line changed, "
                             "or it was never made): run memd review again"})  # fmt: skip
                continue
            try:
                result = self._apply(proposal)
            except MemdError as exc:
                done.append({"id": pid, "error": str(exc)})
                continue
            with self._lock:
                state = self._load()
                state["applied"][pid] = result
                self._save(state)
            done.append({**result, "id": pid, "duplicate": False})
        return ReviewApplied(done, [])

    def _apply(self, p: Proposal) -> dict:
        at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        if p.action == "append":
            written, _ = self._journal().promote(p.text, f"Promoted {self._today()}")
            return {"action": "append", **written.as_dict(), "at": at}
        category = self.workspace.category_of(p.citations[0].split("#")[0])
        if p.action == "store" and p.key is not None:
            stored = self._journal().store(p.key, p.text, category)
            where = {"path": stored.path, "start_line": stored.start_line,
                     "end_line": stored.end_line}  # fmt: skip
            return {"action": "store", "key": p.key, **where, "at": at}
        if p.action == "forget" and p.key is not None:
            gone = self._journal().forget(p.key, self.workspace.category_of(_key_path(p)))
            return {"action": "forget", "key": p.key, "paths": gone.paths, "at": at}
        raise InvalidParams("ids", f"proposal {p.id} is for you to act on: {p.reason}")

    def _propose(self, notes: list[Note], since: str | None, kinds: tuple) -> list[Proposal]:
        """Every proposal, best first."""
        # A few megabytes of notes take a fraction of a second: not worth a process.
        if not self._isolated or sum(len(n.text) for n in notes) < ISOLATE_FROM_CHARS:
            return review(notes, since, kinds)
        with spawned_pool():
            pool = multiprocessing.get_context("spawn").Pool(1)  # never fork a threaded daemon
            self._pools.add(pool)
            pending = None
            try:
                pending = pool.apply_async(review, (notes, since, kinds))
                while True:
                    try:
                        return pending.get(timeout=0.2)
                    except multiprocessing.TimeoutError:
                        if pool not in self._pools:  # closed meanwhile: memd is stopping
                            raise ReviewCancelled(
                                "the review was cancelled: memd is stopping"
                            ) from None
            finally:
                self._pools.discard(pool)
                pool.terminate()
                del pool, pending

    def close(self) -> None:
        """Stop a review running in a process of its own (the daemon is stopping)."""
        for pool in list(self._pools):
            self._pools.discard(pool)
            pool.terminate()

    def _drop_known(self, proposals: list[Proposal], notes: list[Note], embed: Embed) -> list:
        """Promotions MEMORY.md already makes in other words, left out."""
        core = [s.text for n in notes if n.core for s in statements(n.path, n.text, None)]
        promos = [p for p in proposals if p.kind == "promote"]
        texts = [p.text.rsplit(" (", 1)[0] for p in promos]  # without the provenance
        known = {promos[n].id for n in known_in_meaning(texts, core, embed, self._band)}
        return [p for p in proposals if p.id not in known]

    def _embed_kept(self, texts: Sequence[str], cached: Cached) -> np.ndarray:
        """Vectors through the index's embedding cache, kept there for the next review (with
        the local model a review took 16.5 s of CPU after a restart, now 3 s: review_bench)."""
        vectors, entries = cached(texts)
        try:
            self._journal().remember_vectors(entries)
        except MemdError as exc:  # costs the next review's time, not this one's answer
            log.warning("review_vectors_unsaved", workspace=self.workspace.name, error=str(exc))
        return vectors

    def _notes(self) -> list[Note]:
        notes = []
        for entry in self.workspace.scan():
            if entry.source == "extra":
                continue
            try:
                text = Path(entry.abspath).read_text(encoding="utf-8", errors="replace")
            except OSError:  # gone since the scan: the next review has it right
                continue
            notes.append(Note(entry.path, text, entry.date, entry.source == "core"))
        return notes

    def _load(self) -> dict:
        state = load_json(self._path)  # none yet, or unreadable: afresh (no note is lost)
        return {"dismissed": [], "applied": {}, **(state if isinstance(state, dict) else {})}

    def _save(self, state: dict) -> None:
        try:
            save_json(self._path, state)
        except OSError as exc:
            log.warning("review_unsaved", path=str(self._path), error=exc.strerror)


# Texts to (vectors, the (cache key, vector) pairs to keep): ``memd.index.Index.embed_cached``.
Cached = Callable[[Sequence[str]], "tuple[np.ndarray, list[tuple[bytes, bytes]]]"]


class ReviewCancelled(MemdError):
    """A review stopped because memd is stopping."""


def _key_path(p: Proposal) -> str:
    """The file of a duplicate's extra key line (cited last)."""
    return p.citations[-1].split("#")[0]


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10
