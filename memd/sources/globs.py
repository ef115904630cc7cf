"""Path globs as people write them in .gitignore: ``*``, ``?``, ``[abc]`` and ``**``.

A pattern without a ``/`` matches a file or folder name at any depth (``*.draft.md``);
one with a ``/`` matches from the root (``memory/private/**``); a trailing ``/``
matches everything under that folder. ``**`` as a whole path segment matches any number
of folders; elsewhere in a segment it is ``*``, as in .gitignore.

Matching takes time linear in the path for any pattern: a path is matched segment by
segment (a ``**`` segment is a state that stays, not a regex that backtracks), and within
a segment every ``*`` but the last commits to its shortest match (an atomic group), which
is safe there because a later ``*`` can absorb whatever an earlier one left. A hostile
pattern such as ``**?**?**?**?**?**?**?**!`` costs what a plain one does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_ANY = None  # a '**' segment: zero or more whole path segments


class Glob:
    """One compiled glob; ``fullmatch(path)`` against a ``/``-separated relative path."""

    def __init__(self, pattern: str, segments: tuple[re.Pattern[str] | None, ...]) -> None:
        self.pattern = pattern
        self.segments = segments

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def fullmatch(self, path: str) -> bool:
        segments, end = self.segments, len(self.segments)
        states = self._closure({0})
        for part in path.split("/"):
            following = set()
            for i in states:
                if i == end:
                    continue
                segment = segments[i]
                if segment is _ANY:
                    following.add(i)
                elif segment.fullmatch(part):
                    following.add(i + 1)
            if not following:
                return False
            states = self._closure(following)
        return end in states

    def _closure(self, states: set[int]) -> set[int]:
        """Add the states reached by letting a ``**`` match no segment at all."""
        out = set(states)
        for i in states:
            while i < len(self.segments) and self.segments[i] is _ANY:
                i += 1
                out.add(i)
        return out


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> Glob:
    """Compile one glob to be matched against a ``/``-separated relative path."""
    pat = pattern.strip()
    anchored = "/" in pat.rstrip("/")
    pat = pat.lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    parts: list[str | None] = [] if anchored else [_ANY]
    for part in pat.split("/"):
        if part == "**":
            parts.append(_ANY)
        elif part:
            parts.append(part)
    parts.append(_ANY)  # a pattern naming a folder also covers everything inside it
    segments: list[re.Pattern[str] | None] = []
    for part in parts:
        if part is _ANY and segments and segments[-1] is _ANY:
            continue  # '**/**' is '**'
        segments.append(_ANY if part is _ANY else _segment(part))
    return Glob(pattern, tuple(segments))


@lru_cache(maxsize=1024)
def _segment(part: str) -> re.Pattern[str]:
    """A regex for one segment (the text it meets holds no ``/``).

    Runs of ``*`` and ``?`` become one ``.{n,}``; every such star but the last is an atomic
    lazy group up to the fixed text after it, so the regex never backtracks into it.
    """
    head, stars = _fixed_and_stars(part)
    out = [head]
    for n, (least, fixed) in enumerate(stars):
        if n < len(stars) - 1:
            out.append(f"(?>.{{{least},}}?{fixed})")
        else:
            out.append(f".{{{least},}}{fixed}")
    return re.compile("".join(out), re.DOTALL)


def _fixed_and_stars(part: str) -> tuple[str, list[tuple[int, str]]]:
    """(regex of the text before the first star, [(least chars of a star, regex of the
    fixed text after it)])."""
    head: list[str] = []
    stars: list[tuple[int, list[str]]] = []
    current = head
    i = 0
    while i < len(part):
        c = part[i]
        if c in "*?":
            j = i
            while j < len(part) and part[j] in "*?":
                j += 1
            run = part[i:j]
            least = run.count("?")
            if "*" in run:
                current = []
                stars.append((least, current))
            else:
                current.append(f".{{{least}}}")
            i = j
        elif c == "[" and (end := part.find("]", i + 2)) != -1:
            current.append(_char_class(part[i + 1 : end]))
            i = end + 1
        else:
            current.append(re.escape(c))
            i += 1
    return "".join(head), [(least, "".join(fixed)) for least, fixed in stars]


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars = [c if c == "-" and 0 < n < len(body) - 1 else re.escape(c) for n, c in enumerate(body)]
    regex = "[" + ("^" if negate else "") + "".join(chars) + "]"
    try:
        re.compile(regex)
    except re.error:  # a range such as z-a: the brackets are plain text
        return re.escape("[" + ("!" if negate else "") + body + "]")
    return regex


class GlobSet:
    """A set of globs; ``match`` is true when any of them matches the path."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p for p in patterns if p.strip())
        self._globs = [compile_glob(p) for p in self.patterns]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, path: str) -> bool:
        return any(g.fullmatch(path) for g in self._globs)
