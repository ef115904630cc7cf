"""The roots of a workspace: its own folder, and the extra folders and files it indexes,
each shown in results under a prefix of its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memd.config import ExtraPath
from memd.sources.globs import GlobSet


@dataclass(frozen=True)
class Root:
    """A folder or file that memd indexes, shown under ``prefix`` in result paths."""

    prefix: str  # "" for the workspace folder itself
    path: Path
    is_file: bool = False
    include: GlobSet | None = None  # only these files, when given
    exclude: GlobSet | None = None

    @property
    def is_workspace(self) -> bool:
        return self.prefix == ""


def extra_roots(extras: tuple[ExtraPath | Path, ...], taken: set[str]) -> list[Root]:
    """Give each extra root a unique prefix that cannot be mistaken for workspace files
    (nor for any name in ``taken``)."""
    taken = set(taken)
    roots = []
    for extra in extras:
        if isinstance(extra, Path):
            extra = ExtraPath(extra)
        p = extra.path
        base = p.name or "root"
        prefix, n = base, 2
        while prefix in taken:
            stem, dot, ext = base.partition(".") if p.is_file() else (base, "", "")
            prefix = f"{stem}-{n}{dot}{ext}"
            n += 1
        taken.add(prefix)
        include = GlobSet(extra.include) if extra.include else None
        exclude = GlobSet(extra.exclude) if extra.exclude else None
        roots.append(Root(prefix, p, p.is_file(), include, exclude))
    return roots
