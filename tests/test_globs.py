import time

import pytest

from memd.sources.globs import GlobSet, compile_glob


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.md", "memory/2026-01-01.md", True),  # no slash: a name at any depth
        ("*.draft.md", "notes/x.draft.md", True),
        ("*.draft.md", "notes/x.md", False),
        ("memory/*.md", "memory/a.md", True),
        ("memory/*.md", "memory/sub/a.md", False),  # '*' stops at '/'
        ("memory/**/*.md", "memory/sub/deep/a.md", True),
        ("memory/**/*.md", "memory/a.md", True),  # '**/' may be empty
        ("memory/**", "memory/a/b.md", True),
        ("private/", "private/a.md", True),  # trailing slash: the folder's contents
        ("private", "x/private/a.md", True),  # a folder name at any depth
        ("/private", "x/private/a.md", False),  # leading slash anchors to the root
        ("memory/202?-*.md", "memory/2026-01-01.md", True),
        ("memory/[!0-9]*.md", "memory/2026.md", False),
        ("memory/[!0-9]*.md", "memory/notes.md", True),
        ("a+b (1).md", "a+b (1).md", True),  # regex characters are literal
    ],
)
def test_glob_semantics(pattern, path, matches):
    """Globs follow .gitignore habits: '*' within a folder, '**' across folders."""
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


def test_globset_any_and_empty():
    assert not GlobSet([])
    assert not GlobSet(["  "])
    globs = GlobSet(["*.tmp.md", "drafts/**"])
    assert globs.match("drafts/a.md")
    assert globs.match("x/y.tmp.md")
    assert not globs.match("notes/a.md")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("memory/**/x/**/*.md", "memory/a/x/b/c.md", True),
        ("memory/**/x/**/*.md", "memory/a/y/b/c.md", False),
        ("**/2026-*.md", "memory/2026-01-01.md", True),
        ("memory/**.md", "memory/a.md", True),  # '**' inside a segment is '*'
        ("memory/**.md", "memory/sub/a.md", False),
        ("*a*b", "xaaab", True),
        ("*a*b", "xaaa", False),
        ("*??", "ab", True),
        ("*???", "ab", False),
        ("[z-a].md", "[z-a].md", True),  # a bad range is plain text
        ("[]x].md", "].md", True),
    ],
)
def test_more_glob_semantics(pattern, path, matches):
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize(
    "pattern",
    [
        "**?**?**?**?**?**?**?**!",
        "*a*a*a*a*a*a*a*a*a*a*a*a*b",
        "**/" * 30 + "*a*a*a*a*a*a*a*a*b",
        "?*" * 200 + "!",
    ],
)
def test_hostile_globs_match_in_linear_time(pattern):
    """A backtracking matcher takes minutes on these; memd must take milliseconds."""
    paths = ["a" * 200, "memory/" + "a" * 200 + ".md", "/".join(["aaaa"] * 60)]
    started = time.perf_counter()
    for _ in range(20):
        for path in paths:
            assert not compile_glob(pattern).fullmatch(path)
    assert time.perf_counter() - started < 0.5
