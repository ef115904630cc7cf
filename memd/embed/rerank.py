"""An optional second opinion on the best candidates: a reranking endpoint.

One seam, ``Reranker.rerank(query, documents) -> scores``. ``http`` speaks the common
``POST {base_url}/rerank`` protocol of llama.cpp's server, Jina, Cohere and vLLM:
``{"model", "query", "documents", "top_n"}`` in, ``{"results": [{"index",
"relevance_score"}]}`` out. Scores outside [0, 1] (raw logits) are squashed with the
logistic function so that they read like every other memd score.
"""

from __future__ import annotations

import json
import math

from memd.config import Rerank, shown_url
from memd.errors import BackendUnavailable


class Reranker:
    """No reranking: the fusion order stands."""

    enabled = False
    timeout_s = 0.0

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """A relevance in [0, 1] for each document, in the documents' order."""
        raise NotImplementedError


class HttpReranker(Reranker):
    """A ``/rerank`` endpoint."""

    enabled = True

    def __init__(self, config: Rerank) -> None:
        assert config.base_url is not None
        self.url = config.base_url.rstrip("/") + "/rerank"
        self.shown = shown_url(self.url)  # for messages: no password written in the URL
        self.model = config.model
        self.api_key = config.api_key
        self.timeout_s = config.timeout_s

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        import urllib.error  # only when reranking is configured: keep start-up light
        import urllib.request

        body: dict = {"query": query, "documents": documents, "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, json.dumps(body).encode(), headers)
        try:
            # The caller waits ``timeout_s``; the socket's own limit only frees this thread.
            with urllib.request.urlopen(request, timeout=2 * self.timeout_s + 1) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            failed = f"rerank endpoint {self.shown} failed: HTTP {exc.code}"
            raise BackendUnavailable(failed) from exc
        except (OSError, ValueError) as exc:
            raise BackendUnavailable(f"rerank endpoint {self.shown} failed: {exc}") from exc
        return _scores(answer, len(documents), self.shown)


def _scores(answer: object, n: int, url: str) -> list[float]:
    try:
        rows = answer["results"]  # type: ignore[index]
        raw = {int(r["index"]): float(r.get("relevance_score", r.get("score"))) for r in rows}
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendUnavailable(f"rerank endpoint {url} answered in an unknown shape") from exc
    if set(raw) != set(range(n)) or not all(math.isfinite(v) for v in raw.values()):
        raise BackendUnavailable(f"rerank endpoint {url} did not score every document")
    squash = any(not 0.0 <= v <= 1.0 for v in raw.values())
    return [1 / (1 + math.exp(-raw[i])) if squash else raw[i] for i in range(n)]


def make_reranker(config: Rerank) -> Reranker:
    """The reranker ``config`` asks for."""
    return HttpReranker(config) if config.provider == "http" else Reranker()
