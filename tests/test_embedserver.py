"""The test endpoint itself: a client that hangs up before the answer leaves no traceback
in the test output (issue 33: BrokenPipeError printed after the suite's summary)."""

import json
import socket
import time


def test_a_client_that_hangs_up_early_prints_nothing(embed_server, capfd):
    embed_server.delay = 0.3
    host, port = embed_server.url.split("//")[1].split("/")[0].split(":")
    body = json.dumps({"model": "m", "input": ["a note"] * 50}).encode()
    for _ in range(3):
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(
                b"POST /v1/embeddings HTTP/1.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            # Closed before the answer: writing it meets a reset (a broken pipe).
    deadline = time.monotonic() + 5
    while embed_server.requests < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.6)  # the delayed answers are written (and fail) by now
    assert embed_server.requests == 3
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
