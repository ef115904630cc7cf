"""Path globs as people write them in .gitignore: ``*``, ``?``, ``[abc]`` and ``**``.

A pattern without a ``/`` matches a file or folder name at any depth (``*.draft.md``);
one with a ``/`` matches from the root (``memory/private/**``); a trailing ``/``
matches everything under that folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile one glob into a regex matched against a ``/``-separated relative path."""
    pat = pattern.strip()
    anchored = "/" in pat.rstrip("/")
    pat = pat.lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    out: list[str] = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == len(pat):
            out.append("(?:/.*)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pat.find("]", i + 2)) != -1:
            body = pat[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    # A pattern naming a folder also covers everything inside it.
    return re.compile("".join(out) + "(?:/.*)?")


class GlobSet:
    """A set of globs; ``match`` is true when any of them matches the path."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p for p in patterns if p.strip())
        self._regexes = [compile_glob(p) for p in self.patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, path: str) -> bool:
        return any(r.fullmatch(path) for r in self._regexes)
