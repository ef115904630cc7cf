"""What is current, against a real daemon: a later note that changes what MEMORY.md says is
found as the notes are indexed (no review), the session start never states the old value
as current, and a line memd first saw after it started has that time across restarts."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from memd.review.statements import Statement, statements
from memd.review.updates import eligible, find_updates

CORE = (
    "# Memory\n\n## Robot\n- Detector model: YOLOv8-s.\n- The gripper is the Robotiq 2F-85.\n"
    "- Logs are kept for 30 days.\n- Mara works Mondays and Tuesdays.\n"
    "- Priya owns billing.\n"
)
LATER = {
    "memory/2026-03-02.md": "# 2026-03-02\n\n- Switched the detector model to RT-DETR.\n",
    "memory/2026-03-05.md": "# 2026-03-05\n\n- Log retention: 14 days.\n"
    "- Priya moved the billing cron to 02:00.\n",
    "memory/2026-03-09.md": "# 2026-03-09\n\n- Mara works Wednesdays and Thursdays now.\n",
}


@pytest.fixture
def notes(ws):
    ws.write("MEMORY.md", CORE)
    for rel, text in LATER.items():
        ws.write(rel, text)
    return ws


def test_the_session_start_never_states_a_replaced_fact_as_current(notes, serve):
    d = serve("review: {enabled: false}\n")

    def context():
        text = d.call("memory_context", cwd=str(notes.root))["text"]
        return "→ now" in text and text

    text = d.wait_for(context, timeout=30, what="the updates found")
    lines = {line for line in text.splitlines() if "(MEMORY.md#L" in line}
    detector = next(line for line in lines if "YOLOv8" in line)
    assert "→ now: Switched the detector model to RT-DETR. (memory/2026-03-02.md#L3)" in detector
    retention = next(line for line in lines if "30 days" in line)
    assert "→ now: Log retention: 14 days. (memory/2026-03-05.md#L3, likely)" in retention
    mara = next(line for line in lines if "Mara" in line)
    assert "memory/2026-03-09.md#L3" in mara
    # An addition is not an update: Priya still owns billing.
    assert "→" not in next(line for line in lines if "Priya owns billing" in line)


def test_a_line_added_while_memd_watched_can_be_updated_by_a_later_note(ws, serve):
    ws.write("MEMORY.md", "# Memory\n\n- Dana prefers tea.\n")
    d = serve("review: {enabled: false}\n")
    d.wait_for(lambda: d.search("Dana tea"), timeout=30, what="indexed")
    # Added now: memd has seen it from today on, so a note of a later day can update it ...
    with (ws.root / "MEMORY.md").open("a") as f:
        f.write("- The deploy target is staging.\n")
    later = (dt.date.today() + dt.timedelta(days=1)).isoformat()
    d.wait_for(lambda: d.search("deploy target staging"), timeout=30, what="the new line")
    d.stop()
    # ... across a restart too: the time it was first seen is kept in the index.
    ws.write(f"memory/{later}.md", f"# {later}\n\n- The deploy target is production now.\n")
    d = serve("review: {enabled: false}\n")

    def marked():
        found = [r for r in d.search("deploy target") if r["path"] == "MEMORY.md"]
        return found and "superseded_by" in found[0] and found[0]

    old = d.wait_for(marked, timeout=30, what="the MEMORY.md line marked")
    assert old["superseded_by"] == f"memory/{later}.md#L3" and old["superseded"] == "stated"


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Nightly backups go to Backblaze B2.", "Moved the nightly backups off Backblaze onto "
         "Wasabi, for the egress pricing."),
        ("Oven proofing time is 45 minutes.", "Upped the oven proofing time from 45 to 60 "
         "minutes."),
        ("Deliveries come on Mondays.", "Deliveries are Tuesdays now (was Mondays)."),
        ("Logs are kept 30 days.", "Changed log retention to 14 days."),
        ("Receipts go out through Postmark.", "We use Mailgun for receipts now."),
        ("We use Mailgun for receipts now.", "Receipts go out through Postmark again."),
        ("The standup is at 9:30.", "Standup ~~9:30~~ 10:00"),
        ("Rotation interval: 30 days.", "rotation interval 30 → 14 days"),
        ("Lunch deliveries cost £12 a week.", "Lunch deliveries — £14 a week within 3 miles."),
    ],
)  # fmt: skip
def test_updates_worded_in_ways_no_list_foresaw(older, newer):
    a = Statement("memory/2026-03-01.md", 3, "2026-03-01", "", older)
    b = Statement("memory/2026-03-08.md", 3, "2026-03-08", "", newer)
    filler = [
        Statement(f"memory/2026-02-{n:02d}.md", 3, f"2026-02-{n:02d}", "", text)
        for n, text in enumerate(
            ["Lunch with the team at the new place.", "Read a paper on caching.",
             "Called the bank about the card.", "Walked the dog for an hour."], start=10)
    ]  # fmt: skip
    [u] = find_updates([*filler, a, b], lambda s: s.date or "")
    assert (u.older, u.newer) == (a, b)


@pytest.mark.parametrize(
    "line",
    [
        "user: can you move the standup to 10?",
        "**Assistant:** Sure, the standup is at 10 now.",
        "## Standup is at 10",
        "The standup moves to:",
        "- [ ] move the standup to 10",
        "Should the standup be at 10?",
        "is the standup at 10? ask Sam tomorrow",
        '"Can we move the standup to 10?" → Sam checks',
    ],
)
def test_session_turns_headings_intros_tasks_and_questions_are_no_facts(line):
    said = statements("memory/2026-03-08.md", f"# 2026-03-08\n\n{line}\n", "2026-03-08")
    assert not [s for s in said if eligible(s)]


@pytest.mark.parametrize(
    ("older", "newer", "stated"),
    [
        ("Quotes over £150 need approval.", "Quotes over £100 need approval.", False),
        (
            "The German translations are reviewed by Katrin.",
            "Jan took over reviewing the German translations from Katrin.",
            True,
        ),
    ],
)
def test_over_says_a_change_only_when_something_is_handed_over(older, newer, stated):
    a = Statement("memory/2026-03-01.md", 3, "2026-03-01", "", older)
    b = Statement("memory/2026-03-08.md", 3, "2026-03-08", "", newer)
    [u] = find_updates([a, b], lambda s: s.date or "")
    assert u.likely is not stated  # "likely": found by subject and value, no change said


def test_meaning_confirms_a_stated_update_and_ties_nothing_by_itself(ws, serve, embed_server):
    """Words find an update, meaning confirms it: the stated change whose older line is
    also the nearest in meaning is ``confirmed``. Two lines that share only a word stay
    apart, near in meaning or not."""
    deploy = "- The deploy target is staging.\n- The deploy target for docs is Netlify.\n"
    ws.write("MEMORY.md", f"# Memory\n\n{deploy}")
    ws.write("memory/2026-03-01.md", "# 2026-03-01\n\n- Blood tests are in room 3.\n")
    ws.write("memory/2026-03-02.md", "# 2026-03-02\n\n- Phlebotomy is in room 6.\n"
             "- The deploy target is now production.\n")  # fmt: skip
    embeddings = (f"embeddings: {{provider: openai, model: concepts-1, base_url: "
                  f"{embed_server.url}, cosine_band: [0.2, 0.6], debounce_ms: 0}}\n")  # fmt: skip
    d = serve(f"review: {{enabled: false}}\n{embeddings}")

    def confirmed():
        got = d.search("deploy target")
        old = [r for r in got if r["path"] == "MEMORY.md" and "staging" in r["snippet"]]
        return old and old[0].get("superseded") == "confirmed" and old[0]

    old = d.wait_for(confirmed, timeout=60, what="the stated update confirmed by meaning")
    assert old["superseded_by"] == "memory/2026-03-02.md#L4"
    # One word in common ("room") is no subject, and meaning does not make it one.
    found = [r for r in d.search("blood tests room") if r["path"] == "memory/2026-03-01.md"]
    assert found and "superseded_by" not in found[0]


_FOUND_UPDATES = """
import json, pathlib, sys
from memd.review.statements import statements
from memd.review.updates import find_updates
root, every = pathlib.Path(sys.argv[1]), []
for f in sorted(root.rglob("*.md")):
    rel = f.relative_to(root).as_posix()
    every += statements(rel, f.read_text(), f.stem if rel.startswith("memory/") else None)
found = find_updates(every, lambda s: s.date or "")
print(json.dumps(sorted((u.older.path, u.older.line, u.newer.path, u.newer.line) for u in found)))
"""


def test_the_updates_found_do_not_depend_on_the_processs_hash_seed():
    """What is current is the same in every process: which kind of value changed was read
    in set order, so two daemons (or a restart) found different updates in one workspace."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "bench/fixtures/agent-workspaces/research"
    runs = {
        subprocess.run(
            [sys.executable, "-c", _FOUND_UPDATES, str(root)],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True, text=True, check=True,
        ).stdout
        for seed in (0, 1, 2)
    }  # fmt: skip
    assert len(runs) == 1, runs
    assert json.loads(runs.pop())  # the workspace has updates to find


def test_an_index_paired_by_other_finder_code_is_paired_anew(memory, ws, monkeypatch):
    """What a whole refresh saved holds only for the code that found it: after an upgrade
    that finds updates otherwise, the index is not taken as already paired."""
    from memd.review import currency

    ws.write("MEMORY.md", "# Memory\n\n- The deploy target is staging.\n")
    ws.write("memory/2026-03-09.md", "# 2026-03-09\n\n- The deploy target is now production.\n")
    memory.index(current=True)
    assert not memory.currency.waiting()
    monkeypatch.setattr(currency, "_finder", lambda: "the finder of another memd")
    assert memory.currency.waiting()
