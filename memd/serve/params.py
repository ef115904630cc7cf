"""Typed, checked access to a request's params: every method reads its params this way, and
refuses any it did not read."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from memd.errors import ConfigError, InvalidParams
from memd.memory import Memory


class Params:
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
            check_text(name, value)
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
            check_text(name, item)
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
                from memd.configfile import nearest  # only a misspelt name loads YAML

                close = nearest(str(name), sorted(self.used))
                hint = f"; did you mean '{close}'?" if close else ""
                raise InvalidParams(str(name), f"is not a parameter of this method{hint}")


def check_text(name: str, value: str) -> None:
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


OpenMemory = Callable[[str | None], "Memory"]


def open_workspace(open_memory: OpenMemory, p: Params) -> Memory:
    """The memory of the request's ``workspace`` (the first when unset)."""
    try:
        return open_memory(p.get("workspace", str))
    except ConfigError as exc:  # an unknown workspace name
        raise InvalidParams("workspace", str(exc)) from None
