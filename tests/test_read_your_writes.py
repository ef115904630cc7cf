"""Read your writes while other clients read: an append, then at once a ``wait_fresh``
search for it, on a real daemon over its socket, with other connections searching all the
while (their answers drain the kernel's file events too, and used to hide them)."""

import threading
import time

from memd.client import Client

ROUNDS = 500
READERS = 3


def test_wait_fresh_finds_every_append_while_others_search(serve, ws):
    for n in range(20):
        ws.write(f"memory/topic{n}.md", f"# Topic {n}\nplain words about topic {n}\n")
    d = serve()
    d.wait_for(lambda: not d.call("memory_search", query="plain")["index"]["stale"], what="start")
    stop = threading.Event()
    answered = [0] * READERS

    def read(slot: int) -> None:
        with Client(d.socket, timeout=30) as c:
            while not stop.is_set():
                c.call("memory_search", {"query": f"topic {slot} plain", "min_score": 0})
                answered[slot] += 1
                stop.wait(0.005)  # busy enough to drain events, idle enough to keep this quick

    readers = [threading.Thread(target=read, args=(n,)) for n in range(READERS)]
    for reader in readers:
        reader.start()
    misses, slowest = [], 0.0
    try:
        with Client(d.socket, timeout=30) as c:
            for n in range(ROUNDS):
                token, name = f"okapi{n}z", f"memory/topic{n % 7}.md"
                with open(ws.root / name, "a") as f:
                    f.write(f"- seen {token}\n")
                line = (ws.root / name).read_text().count("\n")
                started = time.monotonic()
                answer = c.call("memory_search", {"query": token, "min_score": 0, "wait_fresh": 2})
                slowest = max(slowest, time.monotonic() - started)
                # A snippet is the start of its chunk: the token's line must be inside one.
                found = any(
                    r["path"] == name and r["start_line"] <= line <= r["end_line"]
                    for r in answer["results"]
                )
                if not found or answer["index"]["stale"] or "warning" in answer:
                    misses.append((n, found, answer["index"], answer.get("warning")))
    finally:
        stop.set()
        for reader in readers:
            reader.join(10)
    assert min(answered) > 0, "the other readers never got an answer"
    assert misses == [], f"{len(misses)} of {ROUNDS} missed; first: {misses[:3]}"
    assert slowest < 2, f"a wait_fresh search took {slowest:.2f} s"
