"""Background work that lasts: a minute's summary never ends the task that logs it, and a
task that raises is logged and started again."""

from __future__ import annotations

import asyncio

import memd.log
import memd.serve.supervise as supervise_module
from memd.log import Tally
from memd.serve.supervise import Supervised, supervise


class Said:
    """A logger that keeps what it was told (whether or not structlog is configured in
    this process by another test)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict]] = []

    def __getattr__(self, level: str):
        return lambda event, **fields: self.events.append((level, event, fields))


def test_a_summary_counts_a_field_named_like_its_own_window(monkeypatch):
    # The publisher adds ``seconds=`` to its tally; the minute's summary once passed its own
    # ``seconds`` beside the sums and raised TypeError, ending publishing a minute in.
    said = Said()
    monkeypatch.setattr(memd.log, "get_logger", lambda: said)
    tally = Tally("published", every_s=0.0)
    tally.add(workspace="main", files=3, seconds=0.25)
    tally.add(workspace="main", files=2, seconds=0.5)
    summaries = [fields for _, event, fields in said.events if event == "published_summary"]
    assert len(summaries) == 2
    assert summaries[-1]["files"] == 2 and summaries[-1]["seconds"] == 0.5
    assert "window_s" in summaries[-1]


def test_a_task_that_raises_is_logged_and_started_again(monkeypatch):
    said = Said()
    monkeypatch.setattr(supervise_module, "log", said)
    monkeypatch.setattr(supervise_module, "_PAUSE_MIN_S", 0.01)  # a second or more: no need
    runs: list[int] = []

    async def scenario() -> Supervised:
        stop = asyncio.Event()
        record = Supervised("flaky")

        async def flaky() -> None:
            runs.append(len(runs))
            if len(runs) < 3:
                raise TypeError("boom")
            stop.set()

        await asyncio.wait_for(supervise("flaky", flaky, stop, record), timeout=60)
        return record

    record = asyncio.run(scenario())
    assert len(runs) == 3
    assert record.crashes == 2 and record.last_error == "TypeError: boom"
    assert not record.restarting
    crashed = [fields for level, event, fields in said.events if event == "task_crashed"]
    assert len(crashed) == 2 and crashed[0]["error"] == "TypeError: boom"
    assert "Traceback" in crashed[0]["traceback"]
