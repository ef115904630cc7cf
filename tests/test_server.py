import asyncio
import contextlib
import json
import socket
import threading
import time

import pytest

from memd.errors import InvalidParams, NotFound
from memd.serve.server import respond
from tests.test_docs import PAGES, code_block


def run(line, dispatch=None):
    async def echo(method, params):
        if method == "boom":
            raise RuntimeError("kaput")
        if method == "bad":
            raise InvalidParams("query", "is required")
        if method == "missing":
            raise NotFound("no file x.md")
        return {"method": method, "params": params}

    return asyncio.run(respond(line, dispatch or echo))


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{not json", -32700),
        (b"\xff\xfe", -32700),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "health"}]', -32600),
        (b'"just a string"', -32600),
        (b'{"id": 1, "method": "health"}', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "health"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600),
        (b'{"jsonrpc": "2.0", "id": [1], "method": "health"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "bad"}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "missing"}', -32001),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "boom"}', -32603),
    ],
)
def test_errors_have_their_codes(line, code):
    answer = run(line)
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code


def test_invalid_params_carry_the_parameter():
    err = run(b'{"jsonrpc": "2.0", "id": 7, "method": "bad"}')["error"]
    assert err["data"] == {"param": "query", "problem": "is required"}
    assert "'query'" in err["message"]


def test_success_echoes_the_id():
    answer = run(b'{"jsonrpc": "2.0", "id": "a1", "method": "x", "params": {"q": 1}}')
    assert answer == {"jsonrpc": "2.0", "id": "a1", "result": {"method": "x", "params": {"q": 1}}}


def test_notifications_get_no_answer():
    assert run(b'{"jsonrpc": "2.0", "method": "x"}') is None


class Conn:
    """A raw socket connection speaking newline-delimited JSON."""

    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_line(self) -> dict | None:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None, id=1):
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(json.dumps(msg).encode() + b"\n")
        return self.recv_line()

    def close(self):
        self.sock.close()


@pytest.fixture
def daemon(serve, ws):
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\n## API\nWe chose REST over GraphQL.\n")
    d = serve("server: {idle_timeout_s: 1}\n")
    d.wait_for(lambda: d.search("graphql"), what="start-up index")
    return d


def test_a_pretty_printed_request_is_told_to_come_on_one_line(daemon):
    """The docs' memory_flush request as printed spans lines: each line is a parse error
    that says why; the same request on one line (``jq -c``) is answered."""
    pretty = code_block("json", '"id": 7, "method": "memory_flush"')
    lines = [line for line in pretty.splitlines() if line.strip()]
    assert len(lines) > 1
    c = Conn(daemon.socket)
    c.send(pretty.encode())
    for _ in lines:
        error = c.recv_line()["error"]
        assert error["code"] == -32700 and "one JSON object per line" in error["message"]
    c.send(json.dumps(json.loads(pretty)).encode() + b"\n")
    answer = c.recv_line()
    assert answer["id"] == 7 and len(answer["result"]["written"]) == 2
    assert any("jq -c . request.json | socat" in page.read_text() for page in PAGES)


def test_bad_requests_do_not_end_the_connection(daemon):
    c = Conn(daemon.socket)
    c.send(b"{oops\n")
    assert c.recv_line()["error"]["code"] == -32700
    c.send(b'[{"jsonrpc": "2.0", "id": 1, "method": "health"}]\n')
    assert c.recv_line()["error"]["code"] == -32600
    assert c.request("no_such_method")["error"]["code"] == -32601
    err = c.request("memory_search", {"query": "x", "max_results": "ten"})["error"]
    assert err["code"] == -32602 and err["data"]["param"] == "max_results"
    assert c.request("memory_get", {"path": "../etc/passwd"})["error"]["code"] == -32002
    assert c.request("memory_get", {"path": "memory/none.md"})["error"]["code"] == -32001
    assert c.request("health")["result"]["ok"] is True
    c.close()


def test_pipelined_requests_are_answered_in_order(daemon):
    c = Conn(daemon.socket)
    batch = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "memory_search",
                    "params": {"query": "graphql", "min_score": 0}}).encode() + b"\n"
        for i in range(20)
    )  # fmt: skip
    c.send(batch)
    ids = [c.recv_line()["id"] for _ in range(20)]
    assert ids == list(range(20))
    c.close()


def test_a_2_mib_line_is_refused_and_others_are_served(daemon):
    c = Conn(daemon.socket)
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "memory_search", "params": {"query": "'
    big += b"a" * (2 * 1024 * 1024) + b'"}}\n'

    def send():  # the server stops reading at 1 MiB, so this write may fail part-way
        with contextlib.suppress(OSError):
            c.send(big)

    sender = threading.Thread(target=send)
    sender.start()
    answer = c.recv_line()
    sender.join(10)
    assert answer["error"]["code"] == -32600 and "1 MiB" in answer["error"]["message"]
    assert c.request("health", id=2)["result"]["ok"]  # the same connection goes on
    c.close()
    assert daemon.call("health")["ok"]


def test_a_line_just_under_1_mib_is_accepted(daemon):
    c = Conn(daemon.socket)
    query = "graphql " + "x" * (1024 * 1024 - 200)
    answer = c.request("memory_search", {"query": query, "min_score": 0})
    assert "result" in answer
    c.close()


def test_silent_client_is_dropped_after_the_idle_timeout(daemon):
    c = Conn(daemon.socket)
    started = time.monotonic()
    assert c.sock.recv(10) == b""  # closed by the server
    assert time.monotonic() - started < 5
    c.close()
    assert daemon.call("health")["ok"]


def test_client_that_disconnects_mid_request(daemon):
    for _ in range(5):
        c = Conn(daemon.socket)
        c.send(b'{"jsonrpc": "2.0", "id": 1, "method": "memory_sea')
        c.close()
        c = Conn(daemon.socket)
        c.send(b'{"jsonrpc": "2.0", "id": 1, "method": "health"}\n')
        c.close()  # gone before the answer
    assert daemon.call("health")["ok"]


def test_fifty_clients_at_once(daemon):
    errors: list[BaseException] = []
    results: list[int] = []

    def client(n):
        try:
            c = Conn(daemon.socket, timeout=30)
            for i in range(5):
                answer = c.request("memory_search", {"query": "graphql", "min_score": 0}, id=i)
                results.append(len(answer["result"]["results"]))
            c.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert results == [1] * 250


def test_every_error_class_survives_the_round_trip():
    """The client raises the class the daemon raised, for every class in the code table."""
    from memd.client import CODES, error_for, exception_from

    for cls in CODES:
        exc = cls("param", "problem") if cls is InvalidParams else cls("it failed")
        back = exception_from(error_for(1, exc)["error"])
        assert type(back) is cls and str(back) == str(exc)
    assert len(set(CODES.values())) == len(CODES)


def test_json_nested_100k_deep_gets_a_parse_error():
    answer = run(b"[" * 100_000 + b"]" * 100_000)
    assert answer["error"]["code"] == -32700 and "nested" in answer["error"]["message"]


def test_an_answer_with_a_lone_surrogate_is_still_one_json_line():
    from memd.serve.server import encode

    line = encode({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x \ud800"}})
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    assert json.loads(line)["error"]["message"] == "x \ud800"
    line = encode({"jsonrpc": "2.0", "id": 2, "result": {"score": float("nan")}})
    assert json.loads(line)["error"]["code"] == -32603  # NaN is not JSON: an error, not junk


def test_hostile_lines_each_get_an_answer_on_the_same_connection(daemon):
    c = Conn(daemon.socket)
    c.send(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    assert c.recv_line()["error"]["code"] == -32700
    c.send(b'{"jsonrpc": "2.0", "id": 2, "method": "\\ud800"}\n')
    answer = c.recv_line()
    assert answer["id"] == 2 and answer["error"]["code"] == -32601
    assert "\ud800" in answer["error"]["message"]
    c.send(b'{"jsonrpc": "2.0", "id": 3, "method": "health", "params": {"\\udfff": 1}}\n')
    assert c.recv_line()["error"]["code"] == -32602
    c.send(b'{"jsonrpc": "2.0", "id": 4, "method": "memory_search", '
           b'"params": {"query": "graphql \\ud800"}}\n')  # fmt: skip
    err = c.recv_line()["error"]
    assert err["code"] == -32602 and err["data"]["param"] == "query"
    assert c.request("health", id=5)["result"]["ok"] is True
    c.close()


def test_a_hostile_glob_does_not_freeze_the_daemon(daemon, ws):
    """A backtracking matcher spent minutes on this glob while health waited behind it."""
    name = "memory/" + "a" * 48 + ".md"  # the old regex took minutes on this path
    ws.write(name, "# Long\ngraphql too\n")
    daemon.wait_for(lambda: len(daemon.search("graphql")) == 2, what="long name indexed")
    c = Conn(daemon.socket, timeout=5)
    hostile = ["**?**?**?**?**?**?**?**!", "*a*a*a*a*a*a*a*a*a*a*b"]
    started = time.monotonic()
    answer = c.request("memory_search", {"query": "graphql", "paths": hostile})
    assert answer["result"]["results"] == []
    assert c.request("health", id=2)["result"]["ok"]
    assert time.monotonic() - started < 2
    err = c.request("memory_search", {"query": "graphql", "paths": ["*" * 513]}, id=3)["error"]
    assert err["code"] == -32602 and "512" in err["message"]
    c.close()


def test_huge_queries_do_not_starve_a_plain_search(daemon):
    """Eight ~0.5 MB queries at once used to hold every thread for most of a minute."""
    query = " ".join(f"w{i}" for i in range(60_000))
    answers: list[dict] = []

    def heavy():
        c = Conn(daemon.socket, timeout=60)
        answers.append(c.request("memory_search", {"query": query, "min_score": 0}))
        c.close()

    threads = [threading.Thread(target=heavy) for _ in range(8)]
    for t in threads:
        t.start()
    c = Conn(daemon.socket, timeout=30)
    slowest = 0.0
    for i in range(5):
        started = time.monotonic()
        answer = c.request("memory_search", {"query": "graphql", "min_score": 0}, id=i)
        slowest = max(slowest, time.monotonic() - started)
        assert len(answer["result"]["results"]) == 1
    c.close()
    for t in threads:
        t.join(60)
    assert slowest < 1.0
    assert len(answers) == 8
    assert all("query cut to its first 64" in a["result"]["warning"] for a in answers)
