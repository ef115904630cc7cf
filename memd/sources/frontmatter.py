"""YAML front matter as Obsidian reads it: tags, aliases and a date; a block that is not a
YAML mapping is still front matter (Obsidian hides it), skipped with a warning."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_FM_MAX_LINES = 200
# Only the front matter is left out: the note's text is indexed all the same.
_DROPPED = "its tags, aliases and date are not read (the note's text is indexed)"


@dataclass(frozen=True)
class FrontMatter:
    """What memd reads of a note's front matter."""

    end: int = 0  # first body line
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    date: str | None = None


def front_matter(lines: list[str], warnings: list[str]) -> FrontMatter:
    """The fields of the front matter; front matter that is not a YAML mapping is still
    front matter (Obsidian hides it too), so it is skipped with a warning."""
    if not lines or lines[0].rstrip() != "---":
        return FrontMatter()
    for end in range(1, min(len(lines), _FM_MAX_LINES)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return FrontMatter()
    import yaml  # here: a search, or a pass over notes without front matter, needs none

    try:
        data = yaml.load(
            "\n".join(lines[1:end]), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except yaml.YAMLError as exc:
        warnings.append(f"front matter is not valid YAML ({_first_line(exc)}); {_DROPPED}")
        return FrontMatter(end + 1)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        warnings.append(f"front matter is not a mapping; {_DROPPED}")
        return FrontMatter(end + 1)
    tags = _names(data.get("tags") or data.get("tag"), r"[,\s]+")
    aliases = _names(data.get("aliases") or data.get("alias"), r",")
    when = next((d for key in ("date", "created") if (d := _iso_date(data.get(key)))), None)
    return FrontMatter(end + 1, tags, aliases, when)


_ISO_DAY = re.compile(r"\s*(\d{4})-(\d{2})-(\d{2})(?:[T ]|\s*$)")


def _iso_date(value: object) -> str | None:
    """``YYYY-MM-DD`` of a front matter date (a YAML date, a timestamp, or text that starts
    with one), else None."""
    if isinstance(value, dt.date):  # a datetime is a date too
        return dt.date(value.year, value.month, value.day).isoformat()
    m = _ISO_DAY.match(value) if isinstance(value, str) else None
    if m is None:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat()
    except ValueError:
        return None


def _names(value: object, separators: str) -> tuple[str, ...]:
    """Obsidian accepts a list or a separated string; tags with or without '#'. Empty
    items (``- `` with nothing after it, YAML null) and nested mappings are no names."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else re.split(separators, str(value))
    out = []
    for item in items:
        if item is None or isinstance(item, (dict, list)):
            continue
        name = str(item).strip().lstrip("#").strip()
        if name and name not in out:
            out.append(name)
    return tuple(out)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
