"""The request methods of SPEC section 4: parameter checking and dispatch to ``Memory``.

The socket server, the CLI (without a daemon) and MCP all call ``call`` with a method
name and a params mapping, so every shell validates and answers the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memd import __version__
from memd.embed.providers import vector_space
from memd.errors import InvalidParams, UnknownMethod
from memd.search.bounds import HEAVY_QUERY_CHARS, MAX_WAIT_FRESH
from memd.search.request import SearchRequest
from memd.serve.agentmethods import AGENT_METHODS
from memd.serve.params import OpenMemory, Params, check_text, open_workspace

if TYPE_CHECKING:
    from memd.write.writer import Entry


def search_request(p: Params) -> SearchRequest:
    """A ``SearchRequest`` from ``memory_search`` params; ``Searcher.resolve`` fills in
    the config's defaults and checks the values."""
    return SearchRequest(
        query=p.get("query", str, ""),
        max_results=p.get("max_results", int),
        min_score=p.get("min_score", (int, float)),
        min_results=p.get("min_results", int),
        mode=p.get("mode", str, "auto"),
        paths=_globs(p.strings("paths")),
        tags=p.strings("tags"),
        since=p.get("since", str),
        until=p.get("until", str),
        now=p.get("now", str),
        sources=p.strings("sources"),
        scope=p.get("scope", str, "local"),
        all_chunks=p.get("all_chunks", bool, False),
    )


MAX_GLOBS = 64
MAX_GLOB_CHARS = 512


def _globs(patterns: tuple[str, ...]) -> tuple[str, ...]:
    if len(patterns) > MAX_GLOBS:
        raise InvalidParams("paths", f"at most {MAX_GLOBS} globs, got {len(patterns)}")
    for pattern in patterns:
        if len(pattern) > MAX_GLOB_CHARS:
            raise InvalidParams(
                "paths", f"a glob may have at most {MAX_GLOB_CHARS} characters, got {len(pattern)}"
            )
    return patterns


def _memory_search(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    request = search_request(p)
    wait = wait_fresh(p.raw.get("wait_fresh"))
    p.used.add("wait_fresh")
    p.finish()
    return memory.search(request, wait_fresh=wait).as_dict()


def wait_fresh(value: Any) -> float:
    """The ``wait_fresh`` parameter of ``memory_search``: seconds, 0 to 10."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParams("wait_fresh", f"must be a number of seconds, got {value!r}")
    if not 0 <= value <= MAX_WAIT_FRESH:
        raise InvalidParams("wait_fresh", f"must be between 0 and {MAX_WAIT_FRESH:g} seconds")
    return float(value)


def _memory_get(open_memory: OpenMemory, p: Params) -> dict:
    host = p.get("host", str)
    # Another host's note: ``workspace`` names that host's workspace, not one of ours.
    memory = open_memory(None) if host is not None else open_workspace(open_memory, p)
    theirs = p.get("workspace", str) if host is not None else None
    path = p.required_str("path")
    start = p.int_in("from", 1, 1, 2**31)
    lines = p.int_in("lines", 120, 1, 2**31)
    p.finish()
    return memory.get(path, start, lines, host, theirs).as_dict()


def _status(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    p.finish()
    return memory.status().as_dict()


def _reindex(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    full = p.get("full", bool, False)
    p.finish()
    return memory.index(full=full).as_dict()


def _entries(value: Any) -> list[Entry]:
    from memd.write.writer import Entry, check_one_line  # the write side loads only for writes

    if not isinstance(value, list) or not value:
        raise InvalidParams("entries", "must be a non-empty list of {text, title?, target?}")
    if len(value) > 100:
        raise InvalidParams("entries", "at most 100 entries per flush")
    entries = []
    for n, item in enumerate(value):
        name = f"entries[{n}]"
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise InvalidParams(name, "must be an object with text, title and target")
        unknown = set(item) - {"text", "title", "target"}
        if unknown:
            raise InvalidParams(f"{name}.{sorted(unknown)[0]}", "is not a field of an entry")
        text, title = item.get("text"), item.get("title")
        if not isinstance(text, str) or not text.strip():
            raise InvalidParams(f"{name}.text", "is required and must be non-empty text")
        check_text(f"{name}.text", text)
        if title is not None and (not isinstance(title, str) or "\n" in title or len(title) > 200):
            raise InvalidParams(f"{name}.title", "must be one line of at most 200 characters")
        if title is not None:
            check_one_line(f"{name}.title", title)
            check_text(f"{name}.title", title)
        target = item.get("target", "daily")
        if target not in ("daily", "core"):
            raise InvalidParams(f"{name}.target", f"must be daily or core, got {target!r}")
        entries.append(Entry(text=text, title=title, target=target))
    return entries


def _key(p: Params) -> str:
    key = p.required_str("key").strip()
    if "\n" in key or "**" in key or len(key) > 200:
        raise InvalidParams("key", "must be one line of at most 200 characters, without '**'")
    from memd.write.writer import check_one_line

    check_one_line("key", key)
    return key


def _memory_flush(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    transcript = p.get("transcript", (str, list))
    if transcript is not None:
        from memd.write.extract import transcript_text

        if memory.config.flush.llm is None:
            raise InvalidParams(
                "transcript", "extracting notes from a transcript needs flush.llm in the config"
            )
        if isinstance(transcript, list) and not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in transcript
        ):
            raise InvalidParams("transcript", "must be text or a list of {role, content}")
        if not transcript_text(transcript).strip():
            raise InvalidParams("transcript", "is empty")
    raw_entries = p.get("entries", list)
    entries = _entries(raw_entries) if raw_entries is not None or transcript is None else []
    flush_id = p.get("flush_id", str)
    if flush_id is not None and not 0 < len(flush_id) <= 200:
        raise InvalidParams("flush_id", "must be 1 to 200 characters")
    date = p.date("date")
    p.finish()
    return memory.flush(entries, flush_id=flush_id, date=date, transcript=transcript).as_dict()


def _memory_store(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    key = _key(p)
    content = " ".join(p.required_str("content").split())  # one line per key
    category = p.get("category", str, "core")
    p.finish()
    return memory.store(key, content, category).as_dict()


def _memory_forget(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    key = _key(p)
    category = p.get("category", str)
    p.finish()
    return memory.forget(key, category).as_dict()


def _memory_list(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    category = p.get("category", str)
    p.finish()
    return memory.list(category).as_dict()


def _memory_flush_prompt(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    date = p.date("date")
    p.finish()
    return memory.flush_prompt(date).as_dict()


def _memory_review(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    since = p.date("since")
    kind = p.get("kind", (str, list))
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and not all(isinstance(k, str) for k in kinds):
        raise InvalidParams("kind", "must be a kind or a list of kinds")
    p.finish()
    from memd.review.review import KINDS

    return memory.reviewer.run(since, tuple(kinds or KINDS)).as_dict()


def _memory_review_apply(open_memory: OpenMemory, p: Params) -> dict:
    memory = open_workspace(open_memory, p)
    ids, dismiss = p.get("ids", list) or [], p.get("dismiss", list) or []
    if not all(isinstance(i, str) and i for i in [*ids, *dismiss]):
        raise InvalidParams("ids", "proposal ids are non-empty strings")
    if not ids and not dismiss:
        raise InvalidParams("ids", "give ids to apply, or dismiss to hide")
    p.finish()
    applied = memory.reviewer.apply(ids).applied if ids else []
    dismissed = memory.reviewer.dismiss(dismiss).dismissed if dismiss else []
    return {"applied": applied, "dismissed": dismissed}


def _health(open_memory: OpenMemory, p: Params) -> dict:
    p.finish()
    # Who answers: a client checks that this daemon serves the config it was given.
    config = open_memory(None).config
    return {
        "ok": True,
        "version": __version__,
        "pid": os.getpid(),
        "config": str(config.source) if config.source else None,
        "state_dir": str(config.state_dir),
        "socket": str(config.socket),
        "workspaces": {ws.name: str(ws.path) for ws in config.workspaces},
        "vectors": vector_space(config.embeddings),
    }


# Methods that write. The daemon prepares them on threads of their own, so writes queued for
# the writer thread never hold the threads that searches run on.
WRITES = frozenset(
    {"reindex", "memory_flush", "memory_store", "memory_forget", "memory_review",
     "memory_review_apply", "memory_flush_hook"}
)  # fmt: skip

METHODS: dict[str, Callable[[OpenMemory, Params], dict]] = {
    "memory_search": _memory_search,
    "memory_get": _memory_get,
    "memory_flush": _memory_flush,
    "memory_store": _memory_store,
    "memory_forget": _memory_forget,
    "memory_list": _memory_list,
    "memory_flush_prompt": _memory_flush_prompt,
    "memory_review": _memory_review,
    "memory_review_apply": _memory_review_apply,
    "status": _status,
    "reindex": _reindex,
    "health": _health,
    **AGENT_METHODS,
}


def is_heavy(method: str, params: Any) -> bool:
    """A request that may take long (a search with a long query): the daemon runs these in
    a lane of their own."""
    if method != "memory_search" or not isinstance(params, Mapping):
        return False
    query = params.get("query")
    return isinstance(query, str) and len(query) > HEAVY_QUERY_CHARS


def call(open_memory: OpenMemory, method: str, params: Any = None) -> dict:
    """Run one method with its params; raises ``MemdError`` subclasses on bad input."""
    handler = METHODS.get(method)
    if handler is None:
        raise UnknownMethod(f"unknown method '{method}' (known: {', '.join(METHODS)})")
    return handler(open_memory, Params(params))
