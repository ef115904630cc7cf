"""Agent session transcripts (JSON Lines) read as turns that point at their lines.

Each format maps one JSON object (one line) to the turns it holds: who spoke, the text,
and when. A line memd does not know the shape of is skipped and counted, never an error;
a line that is not JSON likewise (a writer may be half-way through it). Formats:

- ``claude-code``: ``~/.claude/projects/<project>/<session>.jsonl``; lines of ``type``
  ``user`` / ``assistant`` with a ``message`` whose ``content`` is text or blocks (``text``,
  ``tool_use``, ``tool_result``, ``thinking``), ``sessionId`` and ``timestamp``.
- ``codex``: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``; ``session_meta`` then
  ``response_item`` lines whose ``payload`` is a ``message`` (``input_text`` /
  ``output_text``), ``function_call`` or ``function_call_output`` (also the older form
  without the ``payload`` envelope).
- ``openclaw``: ``~/.openclaw/agents/<agent>/sessions/<id>.jsonl``; a ``session`` header,
  then ``message`` lines with roles ``user``, ``assistant`` (``text``, ``toolCall``,
  ``thinking`` blocks) and ``toolResult``.
- ``jsonl``: memd's generic form, one object a line:
  ``{"role": "user", "content": "text", "timestamp": "2026-01-20T09:30:00Z"}``;
  ``content`` may also be a list of ``{"type": "text", "text": ...}``, ``timestamp`` epoch
  seconds or milliseconds, and ``session`` names the session (else the file name does).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("claude-code", "codex", "openclaw", "jsonl")
TOOL_CHARS = 120  # a tool call or its output is summarised in about this many characters


@dataclass(frozen=True)
class Turn:
    """What one speaker said, on lines ``line``..``end_line`` (1-based) of the file."""

    role: str  # user | assistant | tool
    text: str
    line: int
    end_line: int
    at: dt.datetime | None = None


@dataclass
class Transcript:
    """The turns read from some lines of a transcript, and what could not be read."""

    turns: list[Turn] = field(default_factory=list)
    session_id: str | None = None
    started: dt.datetime | None = None
    skipped: int = 0  # lines of a shape memd does not know
    broken: int = 0  # lines that are not JSON


# A format turns one parsed line into its turns (role, text), or None for a shape it does
# not know; it may also report the session's id and the line's time through ``meta``.
_Reader = Callable[[dict, "_Meta", bool], list[tuple[str, str]] | None]


@dataclass
class _Meta:
    session_id: str | None = None
    at: dt.datetime | None = None
    calls: dict[str, str] = field(default_factory=dict)  # tool call id -> tool name


def read_transcript(lines: Iterable[tuple[int, str]], fmt: str, tools: bool = True) -> Transcript:
    """Turns of the numbered ``lines`` of a transcript in format ``fmt``; ``tools`` False
    leaves tool calls and their output out (else each is summarised in one short line)."""
    reader = _READERS[fmt]
    out = Transcript()
    calls: dict[str, str] = {}  # shared by the lines: an output names its call's tool
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            out.broken += 1
            continue
        if not isinstance(obj, dict):
            out.skipped += 1
            continue
        meta = _Meta(calls=calls)
        try:
            said = reader(obj, meta, tools)
        except (AttributeError, KeyError, TypeError, ValueError):
            said = None  # a known type with fields of an unexpected shape
        if said is None:
            out.skipped += 1
            continue
        if meta.session_id and out.session_id is None:
            out.session_id = meta.session_id
        if meta.at and out.started is None:
            out.started = meta.at
        for role, text in said:
            text = text.strip()
            if not text:
                continue
            last = out.turns[-1] if out.turns else None
            if last and last.role == role != "tool" and last.end_line >= number - 1:
                # One reply written as several lines (claude-code writes a line a block).
                out.turns[-1] = Turn(role, f"{last.text}\n{text}", last.line, number, last.at)
            else:
                out.turns.append(Turn(role, text, number, number, meta.at))
    return out


def _time(value: Any) -> dt.datetime | None:
    """An ISO time or epoch seconds/milliseconds, as an aware datetime (UTC if no zone)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        moment = dt.datetime.fromisoformat(str(value))
    except (ValueError, OverflowError, OSError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _short(value: Any) -> str:
    """A tool's input or output in one short line."""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    value = " ".join(value.split())
    return value if len(value) <= TOOL_CHARS else value[: TOOL_CHARS - 1] + "…"


def _texts(content: Any, kinds: tuple[str, ...] = ("text",)) -> list[str]:
    """The text of a message's content: a string, or the text of its blocks."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds
            and isinstance(b.get("text"), str)]  # fmt: skip


def _tool_call(name: Any, arguments: Any) -> tuple[str, str]:
    return "tool", f"called {name}: {_short(arguments)}"


def _tool_output(name: Any, output: Any) -> tuple[str, str]:
    if isinstance(output, list):
        output = " ".join(_texts(output)) or output
    return "tool", f"{name or 'tool'} returned: {_short(output)}"


# -- claude-code ---------------------------------------------------------------------------

_CLAUDE_QUIET = {"summary", "system", "file-history-snapshot", "queue-operation", "progress",
                 "custom-title", "tag"}  # fmt: skip


def _claude_code(obj: dict, meta: _Meta, tools: bool) -> list[tuple[str, str]] | None:
    kind = obj.get("type")
    meta.session_id = obj.get("sessionId")
    meta.at = _time(obj.get("timestamp"))
    if kind in _CLAUDE_QUIET:
        return []
    if kind not in ("user", "assistant"):
        return None
    message = obj["message"]
    if obj.get("isMeta") or not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        if content.startswith(("<command-", "<local-command-")):
            return []  # slash commands and their console output
        return [(kind, content)]
    said = []
    for block in content:
        btype = block.get("type")
        if btype == "text":
            said.append((kind, block.get("text", "")))
        elif btype == "tool_use" and tools:
            meta.calls[str(block.get("id"))] = str(block.get("name"))
            said.append(_tool_call(block.get("name"), block.get("input")))
        elif btype == "tool_result" and tools:
            name = meta.calls.get(str(block.get("tool_use_id")), "tool")
            said.append(_tool_output(name, block.get("content")))
    return said


# -- codex ---------------------------------------------------------------------------------

# Text codex injects as a user message: the environment and instructions, not the user.
_CODEX_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md",
                   "<permissions instructions>", "<user_shell_command>")  # fmt: skip
_CODEX_QUIET = {"event_msg", "turn_context", "compacted", "state"}


def _codex(obj: dict, meta: _Meta, tools: bool) -> list[tuple[str, str]] | None:
    meta.at = _time(obj.get("timestamp"))
    kind = obj.get("type")
    if kind == "session_meta":
        meta.session_id = obj["payload"].get("id")
        return []
    if kind == "response_item":
        return _codex_item(obj["payload"], tools, meta)
    if kind in _CODEX_QUIET or obj.get("record_type") == "state":
        return []
    if kind is None and "id" in obj and "timestamp" in obj:  # the older first line
        meta.session_id = obj["id"]
        return []
    return _codex_item(obj, tools, meta)  # the older lines: items without the envelope


def _codex_item(item: dict, tools: bool, meta: _Meta) -> list[tuple[str, str]] | None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant"):
            return []  # developer and system prompts
        texts = _texts(item.get("content"), ("input_text", "output_text", "text"))
        return [(role, t) for t in texts if not t.lstrip().startswith(_CODEX_INJECTED)]
    if kind in ("reasoning", "ghost_snapshot", "compaction", "compaction_summary"):
        return []
    if kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        if not tools:
            return []
        args = item.get("arguments", item.get("input", item.get("action")))
        name = item.get("name", kind.removesuffix("_call"))
        meta.calls[str(item.get("call_id"))] = str(name)
        return [_tool_call(name, args)]
    if kind in ("function_call_output", "custom_tool_call_output"):
        if not tools:
            return []
        output = item.get("output")
        if isinstance(output, str) and output.startswith("{"):
            with contextlib.suppress(ValueError, AttributeError):
                output = json.loads(output).get("output", output)
        return [_tool_output(meta.calls.get(str(item.get("call_id")), "tool"), output)]
    return None


# -- openclaw ------------------------------------------------------------------------------

_OPENCLAW_QUIET = {"model_change", "thinking_level_change", "compaction", "branch_summary",
                   "custom", "custom_message", "label", "session_info"}  # fmt: skip


def _openclaw(obj: dict, meta: _Meta, tools: bool) -> list[tuple[str, str]] | None:
    kind = obj.get("type")
    meta.at = _time(obj.get("timestamp"))
    if kind == "session":
        meta.session_id = obj.get("id")
        return []
    if kind in _OPENCLAW_QUIET:
        return []
    if kind != "message":
        return None
    message = obj["message"]
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        return [("user", t) for t in _texts(content)]
    if role == "assistant":
        said = []
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                said.append(("assistant", block))
            elif block.get("type") == "text":
                said.append(("assistant", block.get("text", "")))
            elif block.get("type") == "toolCall" and tools:
                said.append(_tool_call(block.get("name"), block.get("arguments")))
        return said
    if role == "toolResult":
        return [_tool_output(message.get("toolName"), content)] if tools else []
    if role == "bashExecution":
        if not tools:
            return []
        return [_tool_call("bash", message.get("command")),
                _tool_output("bash", message.get("output"))]  # fmt: skip
    return []  # custom, branch and compaction summaries: not what was said


# -- jsonl ---------------------------------------------------------------------------------


def _jsonl(obj: dict, meta: _Meta, tools: bool) -> list[tuple[str, str]] | None:
    role, content = obj.get("role"), obj.get("content")
    if not isinstance(role, str) or content is None:
        return None
    meta.at = _time(obj.get("timestamp", obj.get("time")))
    session = obj.get("session", obj.get("session_id"))
    meta.session_id = str(session) if session is not None else None
    if role == "tool":
        return [_tool_output(obj.get("name"), content)] if tools else []
    if role not in ("user", "assistant"):
        return []
    return [(role, t) for t in _texts(content)]


_READERS: dict[str, _Reader] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "openclaw": _openclaw,
    "jsonl": _jsonl,
}
