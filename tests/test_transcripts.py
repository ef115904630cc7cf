import json
from pathlib import Path

import pytest

from memd.sources.transcripts import read_transcript

DATA = Path(__file__).parent / "data" / "sessions"


def sample(fmt: str) -> Path:
    return next((DATA / fmt).rglob("*.jsonl"))


def numbered(path: Path):
    return list(enumerate(path.read_text(encoding="utf-8").split("\n")[:-1], start=1))


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in numbered(path) if needle in line)


def test_claude_code_turns_point_at_their_lines():
    path = sample("claude-code")
    t = read_transcript(numbered(path), "claude-code")
    assert t.session_id == "6f1d2c3a-8b4e-4c1f-9a2b-3c4d5e6f7a8b"
    assert t.started.isoformat() == "2026-01-20T09:12:03.120000+00:00"
    first = t.turns[0]
    assert (first.role, first.line) == ("user", line_of(path, "move the order service"))
    decision = next(x for x in t.turns if "order_status" in x.text)
    assert decision.role == "assistant" and decision.line == line_of(path, "order_status")
    assert not any("read the schema first" in x.text for x in t.turns)  # thinking stays out
    tools = [x.text for x in t.turns if x.role == "tool"]
    assert tools[0].startswith("called Read:") and "schema.sql" in tools[0]
    assert tools[1].startswith("Read returned: CREATE TABLE orders")
    assert (t.skipped, t.broken) == (1, 1)  # a line type memd does not know, a broken line


def test_codex_rollout_leaves_out_injected_context_and_duplicate_events():
    path = sample("codex")
    t = read_transcript(numbered(path), "codex")
    assert t.session_id == "0194a2b3-7c8d-7e9f-a0b1-c2d3e4f5a6b7"
    texts = [x.text for x in t.turns]
    assert not any("environment_context" in x for x in texts)
    assert sum("nightly backup job fails" in x for x in texts) == 1  # not again from event_msg
    call = next(x for x in t.turns if x.text.startswith("called shell"))
    assert "journalctl -u backup" in call.text
    output = next(x for x in t.turns if x.text.startswith("shell returned:"))
    assert "No space left on device" in output.text and "exit_code" not in output.text
    assert t.turns[-1].line == line_of(path, "30 days now")
    assert t.skipped == 1


def test_codex_older_rollouts_without_the_envelope():
    lines = [
        {"id": "abc", "timestamp": "2025-06-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "hello"}]},
    ]  # fmt: skip
    t = read_transcript(enumerate(map(json.dumps, lines), start=1), "codex")
    assert t.session_id == "abc" and [x.text for x in t.turns] == ["hi", "hello"]


def test_openclaw_session():
    path = sample("openclaw")
    t = read_transcript(numbered(path), "openclaw")
    assert t.session_id == "2b7e9f10-4c2d-4e8a-9f1b-7d6c5b4a3e21"
    roles = [(x.role, x.text.split(":")[0]) for x in t.turns]
    assert ("tool", "called browser") in roles and ("tool", "browser returned") in roles
    booked = next(x for x in t.turns if x.text.startswith("Booked"))
    assert booked.line == line_of(path, "Booked: Osteria")


def test_generic_jsonl_with_epoch_times_and_a_session_name():
    path = sample("jsonl")
    t = read_transcript(numbered(path), "jsonl")
    assert t.session_id == "support-17"
    assert [x.role for x in t.turns] == ["user", "assistant", "tool"]  # system left out
    assert t.turns[1].at.isoformat() == "2026-01-23T08:00:10+00:00"  # epoch seconds
    assert t.skipped == 1  # {"event": "heartbeat"} has no role


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "openclaw"])
def test_tools_can_be_left_out(fmt):
    t = read_transcript(numbered(sample(fmt)), fmt, tools=False)
    assert t.turns and all(x.role != "tool" for x in t.turns)


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "openclaw", "jsonl"])
def test_unknown_shapes_are_counted_never_raised(fmt):
    junk = ['{"type": "user", "message": "not an object"}', "[1, 2]", '{"type": 5}', "{",
            '{"type": "message", "message": {"role": "assistant", "content": [3]}}',
            '{"type": "response_item", "payload": {"type": "message", "role": "user"}}',
            '{"role": "user", "content": {"odd": true}}', ""]  # fmt: skip
    t = read_transcript(enumerate(junk, start=1), fmt)
    assert t.turns == [] and t.broken == 1 and t.skipped >= 2


def test_one_reply_written_over_several_lines_is_one_turn():
    lines = [
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": "part one"}]}},
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": "part two"}]}},
    ]  # fmt: skip
    t = read_transcript(enumerate(map(json.dumps, lines), start=7), "claude-code")
    (turn,) = t.turns
    assert (turn.line, turn.end_line, turn.text) == (7, 8, "part one\npart two")
