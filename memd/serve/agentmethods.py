"""The methods agent hosts' hooks call (``memd context``, ``memd recall``, ``memd flush
--hook``): a session's starting memory, recall for a prompt, and a flush from a hook."""

from __future__ import annotations

from memd.agent import CONTEXT_BUDGET, RECALL_BUDGET
from memd.errors import InvalidParams
from memd.serve.params import OpenMemory, Params, open_workspace

_SOURCES = ("startup", "resume", "clear", "compact")


def _budget(p: Params, default: int) -> int:
    budget = p.get("budget", int, default)
    if not 50 <= budget <= 20_000:
        raise InvalidParams("budget", f"must be 50 to 20000 tokens, got {budget}")
    return budget


def _memory_context(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    cwd = p.get("cwd", str)
    source = p.get("source", str)
    if source is not None and source not in _SOURCES:
        raise InvalidParams("source", f"must be one of {', '.join(_SOURCES)}, got {source!r}")
    budget = _budget(p, CONTEXT_BUDGET)
    now = p.get("now", str)
    p.finish()
    from memd.agent.context import context  # a search never loads what hooks need
    from memd.search.request import parse_now

    today = parse_now(now, memory.config.flush.now).date()
    return context(memory, cwd, source, budget, today).as_dict()


def _memory_recall(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    prompt = p.get("prompt", str, "")
    budget = _budget(p, RECALL_BUDGET)
    now = p.get("now", str)
    p.finish()
    from memd.agent.context import recall

    return recall(memory, prompt, budget, now).as_dict()


def _memory_flush_hook(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    hook = p.get("hook", dict)
    host = p.get("host", str, "Claude Code")
    p.finish()
    from memd.agent.hookflush import hook_flush

    answer = hook_flush(memory, hook or {}, host)
    return {"flushed": answer is not None, **(answer.as_dict() if answer else {})}


AGENT_METHODS = {
    "memory_context": _memory_context,
    "memory_recall": _memory_recall,
    "memory_flush_hook": _memory_flush_hook,
}
