"""A flush from an agent host's hook (Claude Code's ``PreCompact`` and ``SessionEnd``).

The hook names the session and its transcript. What is new in the transcript since this
session's last hook flush (its lines, counted in the state folder) is what the compaction
is about to lose. With ``flush.llm`` the model picks what is worth keeping from those
turns (secrets redacted first); without one, the entry keeps what can be kept without a
model: the last requests and the assistant's final answer to each, redacted and bounded,
under a line naming the session and the transcript lines. Turns with no text (tool calls
only) write nothing: a bare pointer helps no one. The flush id is the session and the line
range: a hook the host retries writes once.
"""

from __future__ import annotations

from pathlib import Path

from memd.errors import InvalidParams
from memd.memory import Memory
from memd.records import FlushAnswer
from memd.sources.redact import redact
from memd.sources.transcripts import read_transcript
from memd.store.private import load_json, save_json
from memd.write.writer import Entry

_MAX_TURNS_CHARS = 60_000  # what the model is given at most: the newest turns
_KEEP_EXCHANGES = 4  # without a model: the newest requests and answers kept
_CLIP_CHARS = 300  # ... each cut to this


def hook_payload(raw: object) -> dict:
    """The fields memd needs from a hook's JSON, checked."""
    if not isinstance(raw, dict):
        raise InvalidParams("hook", "must be the hook's JSON object")
    session = raw.get("session_id")
    if not isinstance(session, str) or not session.strip() or len(session) > 200:
        raise InvalidParams("session_id", "must be the host's session id")
    transcript = raw.get("transcript_path")
    if transcript is not None and not isinstance(transcript, str):
        raise InvalidParams("transcript_path", "must be a path")
    return {
        "session_id": session.strip(),
        "transcript_path": transcript,
        "event": str(raw.get("hook_event_name") or "PreCompact"),
        "why": str(raw.get("trigger") or raw.get("reason") or ""),
    }


def hook_flush(memory: Memory, payload: dict, host: str = "Claude Code") -> FlushAnswer | None:
    """Flush what is new in the session's transcript; None when nothing is."""
    hook = hook_payload(payload)
    session, path = hook["session_id"], hook["transcript_path"]
    offsets = memory.config.state_dir / "hook-offsets.json"
    seen = load_json(offsets)
    seen = seen if isinstance(seen, dict) else {}
    start = int(seen.get(session, 0))
    lines = _lines(path)
    end = len(lines) if lines is not None else start + 1
    if end <= start:
        return None
    flush_id = f"hook:{session}:{start + 1}-{end}"
    why = f", {hook['why']}" if hook["why"] else ""
    if memory.config.flush.llm is not None and lines is not None:
        turns = read_transcript(enumerate(lines[start:end], start=start + 1), "claude-code").turns
        messages = [{"role": t.role, "content": redact(t.text)} for t in turns if t.role != "tool"]
        while messages and sum(len(m["content"]) for m in messages) > _MAX_TURNS_CHARS:
            messages.pop(0)
        answer = (
            memory.flush([], flush_id=flush_id, transcript=messages or None) if messages else None
        )
    else:
        turns = (
            read_transcript(enumerate(lines[start:end], start=start + 1), "claude-code").turns
            if lines is not None
            else []
        )
        kept = _last_exchanges(turns)
        answer = None
        if kept:
            where = f"lines {start + 1}–{end} of `{path}`"
            text = "\n".join([f"{host} session `{session}` ({hook['event']}{why}), {where}; "
                              "its last requests and answers:", *kept])  # fmt: skip
            answer = memory.flush([Entry(text, f"{host} session")], flush_id=flush_id)
    seen[session] = end
    save_json(offsets, seen)
    return answer


def _last_exchanges(turns: list) -> list[str]:
    """The newest requests, each with the assistant's last words before the next one (its
    final answer), as bullet lines: redacted, one line each, bounded."""
    pairs: list[list[str | None]] = []
    for turn in turns:
        if turn.role == "user":
            pairs.append([turn.text, None])
        elif turn.role == "assistant":
            if not pairs:  # the session went on from before these lines
                pairs.append([None, None])
            pairs[-1][1] = turn.text
    out: list[str] = []
    for asked, answered in pairs[-_KEEP_EXCHANGES:]:
        if asked:
            out.append(f"- asked: {_clip(asked)}")
        if answered:
            out.append(f"- answered: {_clip(answered)}")
    return out


def _clip(text: str) -> str:
    one = " ".join(redact(text).split())
    return one if len(one) <= _CLIP_CHARS else one[: _CLIP_CHARS - 1].rstrip() + "…"


def _lines(path: str | None) -> list[str] | None:
    if not path:
        return None
    try:
        with Path(path).expanduser().open(encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return None
