import pytest

from memd.globs import GlobSet, compile_glob


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
