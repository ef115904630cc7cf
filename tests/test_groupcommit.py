"""Flushes that queue up while the writer is busy are written and indexed as one batch."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from memd.errors import WriteError
from memd.memory import Memory
from memd.write.writer import Entry


@pytest.fixture
def queued(config, ws):
    """A Memory whose writes go through one writer thread, and a way to hold that thread
    while flushes queue up behind it."""
    ws.write("MEMORY.md", "# Memory\n")
    writer = ThreadPoolExecutor(max_workers=1)
    memory = Memory(config, commit=lambda fn: writer.submit(fn).result())
    memory.index()

    def run(calls: list) -> list:
        gate, holding = threading.Event(), threading.Event()

        def hold() -> None:
            holding.set()
            gate.wait()

        writer.submit(hold)
        # The writer is busy before any flush starts: counted in the queue below, a hold
        # not yet taken up let the last flush miss the batch on a loaded machine.
        assert holding.wait(30)
        results: list = [None] * len(calls)

        def one(n: int) -> None:
            try:
                results[n] = calls[n]()
            except Exception as exc:
                results[n] = exc

        threads = [threading.Thread(target=one, args=(n,)) for n in range(len(calls))]
        for t in threads:
            t.start()
        try:  # every flush waits for the writer
            deadline = time.monotonic() + 10
            while writer._work_queue.qsize() < len(calls) and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            gate.set()
        for t in threads:
            t.join(10)
        return results

    yield memory, run
    writer.shutdown()
    memory.close()


def generation(memory) -> int:
    return int(memory.db.store.get_meta("generation", "0"))


def test_eight_queued_flushes_are_one_index_pass(queued, ws):
    memory, run = queued
    before = generation(memory)
    answers = run(
        [
            (
                lambda n=n: memory.flush(
                    [Entry(f"Entry {n} of eight.", title=f"t{n}")], date="2026-05-05"
                )
            )
            for n in range(8)
        ]
    )
    assert generation(memory) == before + 1  # one index pass for all eight
    lines = (ws.root / "memory" / "2026-05-05.md").read_text().split("\n")
    for n, answer in enumerate(answers):
        (w,) = answer.written
        assert (
            lines[w.start_line - 1].endswith(f"— t{n}")
            and lines[w.end_line - 1] == f"Entry {n} of eight."
        )
        assert memory.search(f"Entry {n} of eight", min_score=0).results


def test_one_failing_flush_does_not_fail_its_batch(queued, ws):
    memory, run = queued
    (ws.root / "memory").mkdir(exist_ok=True)
    (ws.root / "memory" / "2026-05-06.md").mkdir()  # that day's note cannot be written
    good = lambda: memory.flush([Entry("Fine.")], date="2026-05-07")  # noqa: E731
    bad = lambda: memory.flush([Entry("Doomed.")], date="2026-05-06")  # noqa: E731
    results = run([good, bad, good])
    assert isinstance(results[1], WriteError)
    # The same text twice: once in the file (which of the two came first is the threads').
    first, second = sorted((results[0], results[2]), key=lambda answer: not answer.written)
    assert first.written and not first.skipped and second.skipped and not second.written


def test_one_flush_id_twice_in_a_batch_is_written_once(queued, ws):
    memory, run = queued
    flush = lambda: memory.flush([Entry("Only once, please.")], flush_id="same", date="2026-05-08")  # noqa: E731
    first, second = run([flush, flush])
    assert first.written and not first.duplicate
    assert second.duplicate and second.written == first.written
    assert (ws.root / "memory" / "2026-05-08.md").read_text().count("\n\nOnly once, please.\n") == 1
