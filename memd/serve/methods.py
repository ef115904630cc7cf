"""The request methods of SPEC section 4: parameter checking and dispatch to ``Memory``.

The socket server, the CLI (without a daemon) and MCP all call ``call`` with a method
name and a params mapping, so every shell validates and answers the same way.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memd import __version__
from memd.configfile import nearest
from memd.errors import ConfigError, InvalidParams, UnknownMethod
from memd.memory import Memory
from memd.search.bounds import HEAVY_QUERY_CHARS, MAX_WAIT_FRESH
from memd.search.request import SearchRequest

if TYPE_CHECKING:
    from memd.write.writer import Entry

OpenMemory = Callable[[str | None], Memory]


class _Params:
    """Typed access to a params mapping that remembers which keys were read."""

    def __init__(self, params: Any) -> None:
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise InvalidParams("params", "must be an object of named parameters")
        self.raw = params
        self.used: set[str] = set()

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        self.used.add(name)
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, bool) and kind is not bool:
            raise InvalidParams(name, f"must be {_kind_name(kind)}, got a boolean")
        if not isinstance(value, kind):
            raise InvalidParams(name, f"must be {_kind_name(kind)}, got {type(value).__name__}")
        if isinstance(value, str):
            _check_text(name, value)
        return value

    def required_str(self, name: str) -> str:
        value = self.get(name, str)
        if value is None or not value.strip():
            raise InvalidParams(name, "is required and must be a non-empty string")
        return value

    def int_in(self, name: str, default: int, low: int, high: int) -> int:
        value = self.get(name, int, default)
        if not low <= value <= high:
            raise InvalidParams(name, f"must be between {low} and {high}, got {value}")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        value = self.get(name, (list, str), [])
        items = [value] if isinstance(value, str) else value
        if not all(isinstance(v, str) for v in items):
            raise InvalidParams(name, "must be a list of strings")
        for item in items:
            _check_text(name, item)
        return tuple(items)

    def date(self, name: str) -> str | None:
        value = self.get(name, str)
        if value is None:
            return None
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            raise InvalidParams(name, f"must be a date as YYYY-MM-DD, got {value!r}") from None

    def finish(self) -> None:
        """Refuse parameters nobody read: a typo should not be silently ignored."""
        for name in self.raw:
            if name not in self.used:
                close = nearest(str(name), sorted(self.used))
                hint = f"; did you mean '{close}'?" if close else ""
                raise InvalidParams(str(name), f"is not a parameter of this method{hint}")


def _check_text(name: str, value: str) -> None:
    """Refuse text UTF-8 cannot hold (a lone surrogate such as ``\\ud800`` from JSON)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidParams(
            name, f"holds a lone surrogate (\\u{ord(value[exc.start]):04x}) at {exc.start}"
        ) from None


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "a list",
        bool: "a boolean",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def search_request(p: _Params) -> SearchRequest:
    """A ``SearchRequest`` from ``memory_search`` params; ``Searcher.resolve`` fills in
    the config's defaults and checks the values."""
    return SearchRequest(
        query=p.get("query", str, ""),
        max_results=p.get("max_results", int),
        min_score=p.get("min_score", (int, float)),
        mode=p.get("mode", str, "auto"),
        paths=_globs(p.strings("paths")),
        tags=p.strings("tags"),
        since=p.get("since", str),
        until=p.get("until", str),
        now=p.get("now", str),
        sources=p.strings("sources"),
        scope=p.get("scope", str, "local"),
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


def _open(open_memory: OpenMemory, p: _Params) -> Memory:
    try:
        return open_memory(p.get("workspace", str))
    except ConfigError as exc:  # an unknown workspace name
        raise InvalidParams("workspace", str(exc)) from None


def _memory_search(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
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


def _memory_get(open_memory: OpenMemory, p: _Params) -> dict:
    host = p.get("host", str)
    # Another host's note: ``workspace`` names that host's workspace, not one of ours.
    memory = open_memory(None) if host is not None else _open(open_memory, p)
    theirs = p.get("workspace", str) if host is not None else None
    path = p.required_str("path")
    start = p.int_in("from", 1, 1, 2**31)
    lines = p.int_in("lines", 120, 1, 2**31)
    p.finish()
    return memory.get(path, start, lines, host, theirs).as_dict()


def _status(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
    p.finish()
    return memory.status().as_dict()


def _reindex(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
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
        _check_text(f"{name}.text", text)
        if title is not None and (not isinstance(title, str) or "\n" in title or len(title) > 200):
            raise InvalidParams(f"{name}.title", "must be one line of at most 200 characters")
        if title is not None:
            check_one_line(f"{name}.title", title)
            _check_text(f"{name}.title", title)
        target = item.get("target", "daily")
        if target not in ("daily", "core"):
            raise InvalidParams(f"{name}.target", f"must be daily or core, got {target!r}")
        entries.append(Entry(text=text, title=title, target=target))
    return entries


def _key(p: _Params) -> str:
    key = p.required_str("key").strip()
    if "\n" in key or "**" in key or len(key) > 200:
        raise InvalidParams("key", "must be one line of at most 200 characters, without '**'")
    from memd.write.writer import check_one_line

    check_one_line("key", key)
    return key


def _memory_flush(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
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


def _memory_store(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
    key = _key(p)
    content = " ".join(p.required_str("content").split())  # one line per key
    category = p.get("category", str, "core")
    p.finish()
    return memory.store(key, content, category).as_dict()


def _memory_forget(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
    key = _key(p)
    category = p.get("category", str)
    p.finish()
    return memory.forget(key, category).as_dict()


def _memory_list(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
    category = p.get("category", str)
    p.finish()
    return memory.list(category).as_dict()


def _memory_flush_prompt(open_memory: OpenMemory, p: _Params) -> dict:
    memory = _open(open_memory, p)
    date = p.date("date")
    p.finish()
    return memory.flush_prompt(date).as_dict()


def _health(open_memory: OpenMemory, p: _Params) -> dict:
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
    }


# Methods that write. The daemon prepares them on threads of their own, so writes queued for
# the writer thread never hold the threads that searches run on.
WRITES = frozenset({"reindex", "memory_flush", "memory_store", "memory_forget"})

METHODS: dict[str, Callable[[OpenMemory, _Params], dict]] = {
    "memory_search": _memory_search,
    "memory_get": _memory_get,
    "memory_flush": _memory_flush,
    "memory_store": _memory_store,
    "memory_forget": _memory_forget,
    "memory_list": _memory_list,
    "memory_flush_prompt": _memory_flush_prompt,
    "status": _status,
    "reindex": _reindex,
    "health": _health,
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
    return handler(open_memory, _Params(params))
