"""Background work that lasts: a minute's summary never ends the task that logs it, and a
task that raises is logged and started again."""

from __future__ import annotations

import asyncio
import logging

from memd.log import Tally
from memd.serve.supervise import Supervised, supervise


def test_a_summary_counts_a_field_named_like_its_own_window(caplog):
    # The publisher adds ``seconds=`` to its tally; the minute's summary once passed its own
    # ``seconds`` beside the sums and raised TypeError, ending publishing a minute in.
    tally = Tally("published", every_s=0.0)
    with caplog.at_level(logging.INFO, logger="memd"):
        tally.add(workspace="main", files=3, seconds=0.25)
        tally.add(workspace="main", files=2, seconds=0.5)
    summaries = [r.getMessage() for r in caplog.records if "published_summary" in r.getMessage()]
    assert len(summaries) == 2
    assert "files=2" in summaries[-1] and "seconds=0.5" in summaries[-1]
    assert "window_s=" in summaries[-1]


def test_a_task_that_raises_is_logged_and_started_again(caplog, monkeypatch):
    import memd.serve.supervise as sup

    monkeypatch.setattr(sup, "_PAUSE_MIN_S", 0.01)  # a pause is a second or more; no need here
    runs: list[int] = []

    async def scenario() -> Supervised:
        stop = asyncio.Event()
        record = Supervised("flaky")

        async def flaky() -> None:
            runs.append(len(runs))
            if len(runs) < 3:
                raise TypeError("boom")
            stop.set()

        await asyncio.wait_for(supervise("flaky", flaky, stop, record), timeout=10)
        return record

    with caplog.at_level(logging.ERROR, logger="memd"):
        record = asyncio.run(scenario())
    assert len(runs) == 3
    assert record.crashes == 2 and record.last_error == "TypeError: boom"
    assert not record.restarting
    crashed = [r.getMessage() for r in caplog.records if "task_crashed" in r.getMessage()]
    assert len(crashed) == 2 and "boom" in crashed[0]
