"""A real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings (and chat) protocol.

Vectors are deterministic: each word maps to a concept (synonyms share one), and a text's
vector is its normalised bag of concepts hashed into ``dims`` dimensions. So a paraphrase
("which datastore did we select") lands near its note ("we picked Postgres for storage")
with no word in common. Failures can be injected for the next requests.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

CONCEPTS = {
    "choose": "pick picked picking chose choose chosen choice decide decided decision select "
    "selected selection settle settled",
    "database": "database databases datastore postgres postgresql mysql db storage sql",
    "api": "api apis endpoint endpoints rest graphql http interface",
    "food": "lunch ramen food meal dinner restaurant",
    "release": "deploy deployed deployment release released ship shipped rollout",
    "bloods": "blood bloods phlebotomy venepuncture",
}
_WORD = {w: concept for concept, words in CONCEPTS.items() for w in words.split()}
_STOP = set("a an the we did do which what who for of to in on at is are was were our it".split())


def concept_vector(text: str, dims: int) -> list[float]:
    vec = np.zeros(dims)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in _STOP:
            continue
        concept = _WORD.get(word, word)
        h = int.from_bytes(hashlib.sha256(concept.encode()).digest()[:8], "little")
        vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
    norm = np.linalg.norm(vec)
    if norm == 0:
        vec[0] = 1.0
        norm = 1.0
    return (vec / norm).tolist()


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (memd's timeout, a stopped daemon) is no error worth a
    traceback in the test output; anything else still prints one."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class EmbeddingServer:
    """Serves POST /v1/embeddings; counts what it embeds; fails on request."""

    def __init__(self, dims: int = 64) -> None:
        self.dims = dims
        self.texts: list[str] = []
        self.requests = 0
        self.models: list[str] = []
        self.failures: list[tuple[int, dict]] = []  # (status, headers) for the next requests
        self.delay = 0.0
        self.wrong_dims = False
        self.poison: float | None = None  # put into every vector (NaN, inf) when set
        self.chat_reply = ""
        self.chat_messages: list[list[dict]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests += 1
                    failure = server.failures.pop(0) if server.failures else None
                    delay = server.delay
                if delay:
                    time.sleep(delay)
                if failure:
                    status, headers = failure
                    self._send(
                        status, {"error": {"message": "injected", "type": "server"}}, headers
                    )
                    return
                if self.path.endswith("/chat/completions"):
                    with server.lock:
                        server.chat_messages.append(body["messages"])
                    message = {"role": "assistant", "content": server.chat_reply}
                    self._send(
                        200,
                        {
                            "id": "c1",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model"),
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        },
                    )
                    return
                if not self.path.endswith("/embeddings"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                dims = body.get("dimensions") or server.dims
                if server.wrong_dims:
                    dims += 3
                with server.lock:
                    server.texts.extend(inputs)
                    server.models.append(body.get("model"))
                data = [
                    {"object": "embedding", "index": i, "embedding": concept_vector(t, dims)}
                    for i, t in enumerate(inputs)
                ]
                if server.poison is not None:
                    for row in data:
                        row["embedding"][0] = server.poison
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})  # fmt: skip

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
