"""Review that reads like a person (issue 30), against a real daemon: a hard-wrapped item is
one statement, proposed and applied whole; a decision reversed in other words is a
conflict citing both; tasks are never facts; what reaches the model keeps whole items."""

import json
import textwrap

WRAPPED = """# 2026-11-05

## Queue
- Decided to always use RabbitMQ for the invoice event queue instead of Kafka, because the
  team already runs it for notifications and migrations run there too.
- TODO: write the ADR for the queue choice
- [x] move the billing cron to Nomad
"""
REVERSED = """# 2026-11-20

## Queue
- Switched the invoice event queue from RabbitMQ to AWS SQS to drop the broker upkeep.
- TODO: set up Unleash in staging
"""
WHOLE = (
    "Decided to always use RabbitMQ for the invoice event queue instead of Kafka, because the team "
    "already runs it for notifications and migrations run there too."
)


def test_a_wrapped_item_is_proposed_and_applied_whole(serve, ws):
    ws.write("memory/2026-11-05.md", WRAPPED)
    ws.write("MEMORY.md", "# Memory\n")
    d = serve()
    d.wait_for(lambda: d.search("rabbitmq"), what="indexed")
    [promote] = [p for p in d.call("memory_review")["proposals"] if p["kind"] == "promote"]
    assert promote["text"] == f"{WHOLE} (memory/2026-11-05.md#L4-L5)"
    assert promote["citations"] == ["memory/2026-11-05.md#L4-L5"]
    d.call("memory_review_apply", ids=[promote["id"]])
    assert f"- {WHOLE} (memory/2026-11-05.md#L4-L5)" in (ws.root / "MEMORY.md").read_text()
    # What reaches the model at a session's start: the whole item, the done task left out.
    # The promoted copy in MEMORY.md and the note it came from say one thing: shown once.
    text = d.call("memory_context", cwd=str(ws.root))["text"]
    assert text.count(WHOLE) == 1 and f"{WHOLE} (MEMORY.md#L" in text
    assert "Nomad" not in text


def test_the_same_notes_unwrapped_give_the_same_proposals(serve, ws):
    ws.write("memory/2026-11-05.md", WRAPPED.replace("because the\n  team", "because the team"))
    d = serve()
    d.wait_for(lambda: d.search("rabbitmq"), what="indexed")
    [promote] = [p for p in d.call("memory_review")["proposals"] if p["kind"] == "promote"]
    assert promote["text"] == f"{WHOLE} (memory/2026-11-05.md#L4)"


def test_a_reversal_in_other_words_is_a_conflict_and_tasks_never_are(serve, ws):
    decision = "".join(WRAPPED.splitlines(keepends=True)[3:5])  # the wrapped item
    ws.write("MEMORY.md", "# Memory\n\n" + decision)
    ws.write("memory/2026-11-05.md", WRAPPED)
    ws.write("memory/2026-11-20.md", REVERSED)
    d = serve()
    d.wait_for(lambda: d.search("sqs"), what="indexed")
    proposals = d.call("memory_review")["proposals"]
    conflicts = [p for p in proposals if p["kind"] == "conflict"]
    # MEMORY.md holds what changed: that is the one a person corrects (the daily note is
    # history, marked in search).
    assert [p["citations"] for p in conflicts] == [
        ["MEMORY.md#L3-L4", "memory/2026-11-20.md#L4"]
    ], json.dumps(proposals, indent=1)
    assert "'RabbitMQ'" in conflicts[0]["reason"] and "'AWS SQS'" in conflicts[0]["reason"]
    # The superseded decision is never proposed for promotion.
    promoted = " ".join(p["text"] for p in proposals if p["kind"] == "promote")
    assert "Decided to always use RabbitMQ" not in promoted
    assert "TODO" not in json.dumps(conflicts)
    old = d.wait_for(
        lambda: [r for r in d.search("rabbitmq queue") if "superseded_by" in r],
        what="the daily note marked",
    )
    assert {r["superseded_by"] for r in old} == {"memory/2026-11-20.md#L4"}


def test_open_tasks_are_said_as_tasks(serve, ws):
    ws.write("memory/2026-11-20.md", textwrap.dedent(REVERSED) + "- [ ] renew the TLS cert\n")
    d = serve()
    d.wait_for(lambda: d.search("sqs"), what="indexed")
    text = d.call("memory_context", cwd=str(ws.root))["text"]
    assert "open task: renew the TLS cert" in text


def test_what_reaches_the_model_through_the_daemon_keeps_subjects_and_topic(serve, ws):
    """memory_context keeps the bold name of a team list; memory_recall with "last week"
    gives the note about the question, not every note of that week."""
    import datetime as dt

    today = dt.date.today()
    monday = today - dt.timedelta(days=today.weekday() + 7)  # last week's Monday
    ws.write(
        "MEMORY.md",
        "# Memory\n\n## Team\n"
        "- **Priya Raman**: backend lead, owns the invoicing service and the ledger schema.\n",
    )
    notes = [
        "- Rolled back the prod deploy of 3.2.0: the migration locked the orders table.",
        "- Got the new laptops for the interns back from IT.",
        "- Prod database backups now run every six hours.",
        "- The deploy checklist moved to the wiki; Sam reviews it on Mondays.",
    ]
    for n, note in enumerate(notes):
        day = monday + dt.timedelta(days=n)
        ws.write(f"memory/{day}.md", f"# {day}\n\n{note}\n")
    repeats = "".join(
        f"- note about otter33: checked the retry queue, {n} items left\n" for n in range(20)
    )
    ws.write(f"memory/{today}.md", f"# {today}\n\n{repeats}- Shipped the billing export.\n")
    d = serve()
    d.wait_for(lambda: d.search("laptops"), what="indexed")
    text = d.call("memory_context", cwd=str(ws.root))["text"]
    assert "**Priya Raman**: backend lead" in text
    assert text.count("otter33") == 1 and "(×20, latest" in text  # one line, its count
    assert "Shipped the billing export" in text
    said = d.call("memory_recall", prompt="why did the prod deploy get rolled back last week?")
    assert said["lines"] == 1 and "Rolled back the prod deploy of 3.2.0" in said["text"], said


def test_the_judge_turns_down_another_attribute_under_a_shared_label():
    """Label lines about one class name different attributes ("Year 9 art", "Year 9
    maths"): the rules take the shared label and a changed value for an update; the
    judge, weighing how many lines share that label and how little else they share,
    turns the newest down."""
    from memd.review.statements import Statement
    from memd.review.updates import find_updates

    older = ["Year 9: 31 students.", "Year 9 trip: Whitby, 4 May.", "Year 9 maths: Mondays.",
             "Year 9 form tutor: Mr Okoro."]  # fmt: skip
    notes = [Statement(f"memory/2026-01-0{n + 2}.md", 3, f"2026-01-0{n + 2}", "", text)
             for n, text in enumerate(older)]  # fmt: skip
    art = Statement("memory/2026-02-02.md", 3, "2026-02-02", "", "Year 9 art: Tuesday afternoons.")
    found = find_updates([*notes, art], lambda s: s.date or "")
    assert [u for u in found if u.newer == art] == []


def test_a_plain_session_turn_after_a_list_item_is_a_turn_of_its_own():
    """A dump's "user:" line right under a list item is no continuation of the item (as
    Markdown's lazy continuation would have it): it is a turn, and no fact."""
    from memd.review.statements import statements
    from memd.review.updates import eligible

    text = ("# 2026-02-17\n\n1. rerun the sweep with the new model\n"
            "2. ask the supervisor about the GPU pool\n"
            "user: 1 and 2 for now, and draft an email for the pool\n")  # fmt: skip
    found = statements("memory/2026-02-17.md", text, "2026-02-17")
    assert [(s.line, s.end_line, s.speaker) for s in found] == [
        (3, None, None), (4, None, None), (5, None, "user")]  # fmt: skip
    assert [eligible(s) for s in found] == [True, True, False]


def test_an_item_nested_under_an_introducing_line_is_about_what_that_line_names():
    """ "Limit: 1200/min" under "the Northwind contract gets its own limit:" is Northwind's
    limit: it replaces nothing about the global limit, and the global change beside it is
    found. (Read as a statement alone, the nested limit was taken for the global one's
    update.)"""
    from memd.review.statements import statements
    from memd.review.updates import find_updates

    core = "# Memory\n\n- Limit: 280 requests/min per API key (gateway, global)\n"
    day = ("# 2026-02-03\n\n- global limit is now 400 requests/min per key (not 280!)\n"
           "- the Northwind contract gets its own limit:\n"
           "  - Limit: 1200 requests/min (their key only, contract addendum)\n")  # fmt: skip
    every = [*statements("MEMORY.md", core, None), *statements("memory/2026-02-03.md", day,
                                                                 "2026-02-03")]  # fmt: skip
    nested = next(s for s in every if "1200" in s.text)
    assert nested.lead == "the Northwind contract gets its own limit:"
    found = find_updates(every, lambda s: s.date or "")
    assert [(u.older.line, u.newer.line) for u in found] == [(3, 3)]


def test_a_line_a_later_one_disputes_is_not_promoted(serve, ws):
    """A later line on the same subject with another value, too unsure for an update (an
    opinion, no change said), still takes the older line off the promotions: it may not
    hold. Without the later line the older one is proposed."""
    decision = "Rule: hive inspections every 7 days in May, never in the rain."
    ws.write("memory/2026-03-01.md", f"# 2026-03-01\n\n- {decision}\n")
    d = serve()
    d.wait_for(lambda: d.search("hive"), what="indexed")

    def promoted() -> list[str]:
        return [p["text"] for p in d.call("memory_review")["proposals"] if p["kind"] == "promote"]

    assert promoted() == [f"{decision} (memory/2026-03-01.md#L3)"]
    ws.write("memory/2026-03-20.md",
             "# 2026-03-20\n\n- Hive inspections every 10 days is enough, says Ron.\n")  # fmt: skip
    d.wait_for(lambda: d.search("ron"), what="the later note indexed")
    assert decision not in " ".join(promoted())
    # Not an update: nothing marks the older line replaced.
    assert not [r for r in d.search("hive inspections rain") if "superseded_by" in r]


def test_a_promotion_reads_form_not_words():
    """A cadence counts beside a value ("7 daily", "every 10 days", "montags"), not as a
    word: a meeting named "Weekly" is no rule. A named speaker's line next to another's is a
    turn of a conversation; a bold subject alone is not."""
    from memd.review.lasting import dialogue, features
    from memd.review.statements import Statement, statements

    def read(text: str) -> dict[str, float]:
        return features(Statement("memory/2026-05-04.md", 3, "2026-05-04", "", text))

    assert "cadence" in read("Backups: 7 daily, 4 weekly, 6 monthly")
    assert "cadence" in read("Hive inspections every 10 days in summer.")
    assert "day_plural" in read("Hausbesuche nur dienstags, Pauschale 45 €.")
    assert "cadence" not in read("Ben wants to raise it at the next Weekly.")
    assert "negation" in read("No bonfires on the site, ever.")
    assert "negation" not in read("Contribution list: 3 bullets, not 5.")  # a correction
    text = ("# 2026-05-04\n\n**Ana:** can we move the stand-up?\n**Ben:** fine by me.\n\n"
            "## Team\n\n- **Kit:** home navy, away red.\n")  # fmt: skip
    said = statements("memory/2026-05-04.md", text, "2026-05-04")
    assert dialogue(said) == {("memory/2026-05-04.md", 3), ("memory/2026-05-04.md", 4)}
