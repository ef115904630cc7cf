"""The optional rerank stage, against a real HTTP server speaking the /rerank protocol."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memd.memory import Memory


class RerankServer:
    """POST /v1/rerank: scores each document by how many query words it holds (raw counts,
    so memd must squash them); can be slow or fail on request."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.status = 200
        self.bodies: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                time.sleep(server.delay)
                words = set(body["query"].lower().split())
                results = [
                    {"index": i, "relevance_score": float(len(words & set(d.lower().split())))}
                    for i, d in enumerate(body["documents"])
                ]
                data = json.dumps({"results": results[::-1]}).encode()
                try:
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except BrokenPipeError:  # memd stopped waiting: the slow case
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def reranker():
    server = RerankServer()
    yield server
    server.close()


@pytest.fixture
def reranked(ws, make_config, reranker):
    ws.write("memory/a.md", "# Backups\nbackup backup backup nightly job on db-2.\n")
    ws.write("memory/b.md", "# Retention\nthe backup retention policy is thirty days.\n")
    with Memory(
        make_config(
            rerank={"provider": "http", "base_url": reranker.url, "timeout_s": 0.5},
            search={"decay": False},
        )
    ) as m:
        m.index()
        yield m


def test_the_reranker_reorders_the_best_candidates(reranked, reranker):
    assert reranked.searcher.reranker.enabled
    answer = reranked.search("backup retention policy", min_score=0)
    assert answer.warning is None
    assert [r.path for r in answer.results] == ["memory/b.md", "memory/a.md"]
    assert reranker.bodies[-1]["query"] == "backup retention policy"
    assert all(0 <= r.score <= 1 for r in answer.results)  # raw counts were squashed
    assert answer.results[0].score > answer.results[1].score


def test_a_slow_or_failing_reranker_falls_back_to_fusion_order(reranked, reranker):
    plain = [r.path for r in reranked.search("backup", min_score=0).results]
    reranker.delay = 1.5
    started = time.monotonic()
    slow = reranked.search("backup", min_score=0)
    assert time.monotonic() - started < 1.2
    assert "reranking took over 0.5 s" in slow.warning
    reranker.delay = 0.0
    reranker.status = 500
    failed = reranked.search("backup", min_score=0)
    assert "reranking failed" in failed.warning and "HTTP 500" in failed.warning
    assert [r.path for r in failed.results] == [r.path for r in slow.results]
    assert len(plain) == 2
