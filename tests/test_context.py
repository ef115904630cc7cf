"""What reaches the model unasked (issue 30): `memd context` shows each statement as
written and in reading order, a day's near-identical lines once with their count; `memd
recall` within a time window keeps to the question. A real Memory on a temp workspace."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from memd.agent.context import _line, context, recall
from memd.review.statements import Statement

TEAM = (
    "# Memory\n\n## Team\n"
    "- **Priya Raman**: backend lead, owns the invoicing service and the ledger schema.\n"
    "- **Tom Becker:** runs the on-call rotation and the incident reviews.\n"
)


def _days_ago(n: int) -> str:
    return (dt.date.today() - dt.timedelta(days=n)).isoformat()


def _last_week(weekday: int) -> str:
    """A day of last week (0: its Monday), as "last week" is read today."""
    today = dt.date.today()
    return (today - dt.timedelta(days=today.weekday() + 7 - weekday)).isoformat()


def test_context_keeps_what_a_line_is_about(memory, ws):
    ws.write("MEMORY.md", TEAM)
    text = context(memory).text
    assert (
        "- **Priya Raman**: backend lead, owns the invoicing service and the ledger schema. "
        "(MEMORY.md#L4)"
    ) in text
    # As written: the colon inside the bold stays there.
    assert "- **Tom Becker:** runs the on-call rotation and the incident reviews." in text
    assert "- backend lead" not in text


def test_near_identical_lines_of_a_day_are_one_line_with_their_count(memory, ws):
    day, before = _days_ago(0), _days_ago(1)
    ws.write(f"memory/{before}.md", f"# {before}\n\n- Paired with Sam on the billing export.\n")
    repeats = "".join(
        f"- note about otter33: checked the retry queue, {n} items left\n" for n in range(20)
    )
    ws.write(
        f"memory/{day}.md",
        f"# {day}\n\n- Moved the staging cluster to the new region.\n{repeats}",
    )
    text = context(memory).text
    said = [line for line in text.splitlines() if "otter33" in line]
    assert said == [
        f"- [{day}] note about otter33: checked the retry queue, 19 items left "
        f"(×20, latest memory/{day}.md#L23)"
    ]
    # The room the repeats took is left to the other lines, the day before's too.
    assert "Moved the staging cluster to the new region." in text
    assert f"[{before}] Paired with Sam on the billing export." in text
    # Lines that differ in more than their numbers stay apart.
    assert "Deployed" not in text
    ws.write(
        f"memory/{before}.md",
        f"# {before}\n\n- Deployed 2.4.1 to staging today.\n"
        "- Deployed 2.4.2 to production today.\n",
    )
    text = context(memory).text
    assert "Deployed 2.4.1 to staging" in text and "Deployed 2.4.2 to production" in text


def test_context_lists_a_day_in_reading_order(memory, ws):
    day, before = _days_ago(0), _days_ago(1)
    ws.write(f"memory/{before}.md", f"# {before}\n\n- Paired with Sam on the billing export.\n")
    ws.write(
        f"memory/{day}.md",
        f"# {day}\n\n"
        "- Started the migration plan for the ledger\n"
        "  schema, to be reviewed by Priya Raman\n"
        "  ahead of the Friday release train.\n"
        "- Moved the staging cluster to the new region.\n",
    )
    text = context(memory).text
    order = [
        "Started the migration plan",
        "reviewed by Priya Raman",
        "Friday release train",
        "Moved the staging cluster",
        "Paired with Sam",  # the day before comes after the newest day
    ]
    places = [text.index(piece) for piece in order]
    assert places == sorted(places)
    assert re.search(rf"Started the migration plan[^\n]*\(memory/{day}\.md#L3\b", text)


def test_a_statement_of_several_lines_is_cited_by_its_range():
    @dataclasses.dataclass(frozen=True)
    class Unit(Statement):  # a Statement as a whole Markdown unit (with its last line)
        end_line: int = 0

    one = Statement("memory/2026-11-26.md", 3, "2026-11-26", "", "Started the migration plan.")
    assert _line(one) == "Started the migration plan. (memory/2026-11-26.md#L3)"
    whole = Unit(
        "memory/2026-11-26.md", 3, "2026-11-26", "", "Started the plan, reviewed by Priya.",
        speaker="Sam", end_line=5,
    )  # fmt: skip
    assert (
        _line(whole) == "**Sam**: Started the plan, reviewed by Priya. (memory/2026-11-26.md#L3-L5)"
    )


def test_recall_within_a_time_window_keeps_to_the_question(memory, ws):
    days = [_last_week(n) for n in range(5)]
    notes = [
        "- Rolled back the prod deploy of 3.2.0: the migration locked the orders table.",
        "- Lunch with the design team about the new onboarding screens.\n"
        "- Got the new laptops for the interns back from IT.",
        "- Why the invoices service needs a new index: slow monthly reports.",
        "- Prod database backups now run every six hours.",
        "- The deploy checklist moved to the wiki; Sam reviews it on Mondays.",
    ]
    for day, note in zip(days, notes, strict=True):
        ws.write(f"memory/{day}.md", f"# {day}\n\n{note}\n")
    memory.index()
    prompt = "why did the prod deploy get rolled back last week?"
    said = recall(memory, prompt)
    assert said.lines == 1, said.text
    assert "Rolled back the prod deploy of 3.2.0" in said.text
    assert f"(memory/{days[0]}.md#L1-L3)" in said.text
    # memory_search: the window's other notes are not made strong by their dates; those
    # sharing a word still come after it, as weak matches.
    found = memory.search(prompt, max_results=5).results
    assert found[0].path == f"memory/{days[0]}.md" and found[0].match == "strong"
    assert len(found) > 1 and all(r.match == "weak" for r in found[1:])


def test_recall_without_a_window_is_unchanged_and_shows_whole_items(memory, ws):
    items = "".join(
        f"- Step {n} of the Postgres 16 upgrade: copy the replica, check the row counts "
        f"of every table, then switch the readers over one by one.\n"
        for n in range(1, 9)
    )
    ws.write("memory/upgrade.md", f"# Postgres upgrade\n\n{items}")
    memory.index()
    said = recall(memory, "how do we upgrade Postgres?")
    assert said.lines == 1
    assert "…" not in said.text  # a snippet cut short ends at its last whole item
    assert "Step 1 of the Postgres 16 upgrade" in said.text
    assert re.search(r"one by one\. \(memory/upgrade\.md#L\d+-L\d+\)", said.text)


def test_what_has_begun_is_under_way_not_coming_up(memory, ws):
    """On 9 March, "from March" has begun: not coming up; "Thu 12.3." and "am 3. April"
    are, each with its day."""
    ws.write("MEMORY.md", "# Memory\n\n- The owner likes short answers.\n")
    ws.write("memory/2026-03-08.md", "# 2026-03-08\n\n- The Kita fee is €185 from March.\n"
             "- Thu 12.3. pick up the passport at the Bürgeramt.\n"
             "- Oma kommt am 3. April zu Besuch.\n")  # fmt: skip
    memory.index()
    text = context(memory, today=dt.date(2026, 3, 9)).text
    coming = text.split("Coming up:\n", 1)[1].split("\n\n", 1)[0]
    assert "[2026-03-12] Thu 12.3. pick up the passport at the Bürgeramt." in coming
    assert "[2026-04-03] Oma kommt am 3. April zu Besuch." in coming
    assert "Kita" not in coming
