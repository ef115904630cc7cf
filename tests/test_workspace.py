import os

import pytest

from memd.config import WorkspaceConfig
from memd.errors import NotFound, PathRefused, WorkspaceMissing
from memd.sources.layout import Workspace, daily_date


def paths(ws: Workspace) -> dict[str, tuple[str, str | None]]:
    return {e.path: (e.source, e.date) for e in ws.scan()}


def test_which_files_belong_and_their_source(ws):
    """MEMORY.md is core, dated files are daily, other memory/ notes are memory."""
    ws.write("MEMORY.md", "# core\n")
    ws.write("memory/2026-01-20.md", "# day\n")
    ws.write("memory/2026-01-21-standup.md", "# session note\n")
    ws.write("memory/projects/atlas.md", "# custom\n")
    ws.write("memory/2026-13-40.md", "# not a real date\n")
    ws.write("README.md", "# not memory\n")
    ws.write("notes/x.md", "# outside memory/\n")
    ws.write("memory/todo.txt", "not markdown\n")
    found = paths(Workspace(WorkspaceConfig("w", ws.root)))
    assert found == {
        "MEMORY.md": ("core", None),
        "memory/2026-01-20.md": ("daily", "2026-01-20"),
        "memory/2026-01-21-standup.md": ("daily", "2026-01-21"),
        "memory/projects/atlas.md": ("memory", None),
        "memory/2026-13-40.md": ("memory", None),
    }


def test_ignored_folders_and_files(ws):
    """Hidden folders and files, .obsidian, .trash, .git and node_modules are skipped."""
    for rel in (
        "memory/.obsidian/a.md",
        "memory/.trash/b.md",
        "memory/.git/c.md",
        "memory/node_modules/d.md",
        "memory/.hidden.md",
        "memory/sub/.draft/e.md",
    ):
        ws.write(rel, "# ignored\n")
    ws.write("memory/kept.md", "# kept\n")
    assert list(paths(Workspace(WorkspaceConfig("w", ws.root)))) == ["memory/kept.md"]


def test_exclude_globs(ws):
    ws.write("memory/private/secret.md", "x\n")
    ws.write("memory/a.draft.md", "x\n")
    ws.write("memory/a.md", "x\n")
    cfg = WorkspaceConfig("w", ws.root, exclude=("memory/private/**", "*.draft.md"))
    assert list(paths(Workspace(cfg))) == ["memory/a.md"]


def test_extra_paths_folder_and_file(ws, tmp_path):
    """Extra roots are shown under their folder name; a single file under its name."""
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "tomatoes.md").write_text("# Tomatoes\n")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "w.md").write_text("x\n")
    single = tmp_path / "elsewhere" / "ideas.md"
    single.parent.mkdir()
    single.write_text("# Ideas\n")
    ws.write("MEMORY.md", "x\n")
    cfg = WorkspaceConfig("w", ws.root, extra_paths=(vault, single))
    assert paths(Workspace(cfg)) == {
        "MEMORY.md": ("core", None),
        "vault/Notes/tomatoes.md": ("extra", None),
        "ideas.md": ("extra", None),
    }


def test_extra_file_that_is_not_markdown_is_skipped(ws, tmp_path):
    txt = tmp_path / "notes.txt"
    txt.write_text("x\n")
    ws.write("MEMORY.md", "x\n")
    assert list(paths(Workspace(WorkspaceConfig("w", ws.root, extra_paths=(txt,))))) == [
        "MEMORY.md"
    ]


def test_extra_root_names_never_collide(ws, tmp_path):
    """Two extra folders with one name, or one named 'memory', get distinct prefixes."""
    a, b, m = tmp_path / "a" / "vault", tmp_path / "b" / "vault", tmp_path / "c" / "memory"
    for root in (a, b, m):
        root.mkdir(parents=True)
        (root / "n.md").write_text("x\n")
    ws.write("memory/n.md", "x\n")
    found = paths(Workspace(WorkspaceConfig("w", ws.root, extra_paths=(a, b, m))))
    assert set(found) == {"memory/n.md", "vault/n.md", "vault-2/n.md", "memory-2/n.md"}


def test_symlink_loop_and_duplicates_are_read_once(ws, tmp_path):
    """A folder symlink loop ends; a note reached twice through links is listed once."""
    ws.write("memory/a.md", "x\n")
    os.symlink(ws.root / "memory", ws.root / "memory" / "loop")
    os.symlink(ws.root / "memory" / "a.md", ws.root / "memory" / "again.md")
    outside = tmp_path / "shared-notes"
    outside.mkdir()
    (outside / "s.md").write_text("x\n")
    os.symlink(outside, ws.root / "memory" / "shared")
    os.symlink(tmp_path / "missing.md", ws.root / "memory" / "dangling.md")
    found = paths(Workspace(WorkspaceConfig("w", ws.root)))
    assert set(found) == {"memory/a.md", "memory/shared/s.md"}


def test_missing_workspace_is_a_clear_error(tmp_path):
    with pytest.raises(WorkspaceMissing, match="does not exist"):
        Workspace(WorkspaceConfig("w", tmp_path / "nowhere")).scan()


def test_daily_date():
    assert daily_date("2026-01-20.md") == "2026-01-20"
    assert daily_date("2026-01-20-retro.md") == "2026-01-20"
    assert daily_date("2026-02-30.md") is None
    assert daily_date("notes.md") is None
    assert daily_date("2026-01-20.txt") is None


@pytest.mark.parametrize(
    "bad",
    [
        "../etc/passwd.md",
        "/etc/passwd",
        "memory/../MEMORY.md",
        "memory//a.md",
        "./MEMORY.md",
        "~/x.md",
        "",
        "memory\\a.md",
        "a\x00.md",
    ],
)
def test_resolve_refuses_escapes(ws, bad):
    """Reads never take '..', absolute, home-relative or malformed paths."""
    ws.write("MEMORY.md", "x\n")
    with pytest.raises(PathRefused):
        Workspace(WorkspaceConfig("w", ws.root)).resolve(bad)


def test_resolve_refuses_files_memd_does_not_index(ws):
    ws.write("README.md", "x\n")
    ws.write("memory/.hidden.md", "x\n")
    ws.write("memory/a.txt", "x\n")
    w = Workspace(WorkspaceConfig("w", ws.root, exclude=("memory/secret.md",)))
    ws.write("memory/secret.md", "x\n")
    for rel in ("README.md", "memory/.hidden.md", "memory/a.txt", "memory/secret.md"):
        with pytest.raises(PathRefused):
            w.resolve(rel)


def test_resolve_existing_and_missing(ws, tmp_path):
    ws.write("memory/a.md", "x\n")
    w = Workspace(WorkspaceConfig("w", ws.root))
    full, inside = w.resolve("memory/a.md")
    assert full == str(ws.root / "memory" / "a.md") and inside
    with pytest.raises(NotFound):
        w.resolve("memory/b.md")
    # A symlink leading out of the workspace is reported as outside.
    secret = tmp_path / "secret.md"
    secret.write_text("x\n")
    os.symlink(secret, ws.root / "memory" / "link.md")
    assert w.resolve("memory/link.md") == (str(ws.root / "memory" / "link.md"), False)


def test_include_and_exclude_globs_per_root(ws, tmp_path):
    from memd.config import ExtraPath

    vault = tmp_path / "vault"
    for rel in ("Notes/a.md", "Notes/Private/secret.md", "Journal/j.md"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("x\n")
    ws.write("memory/m.md", "x\n")
    extra = ExtraPath(vault, include=("Notes/**",), exclude=("Notes/Private/**",))
    found = paths(Workspace(WorkspaceConfig("w", ws.root, extra_paths=(extra,))))
    assert set(found) == {"memory/m.md", "vault/Notes/a.md"}
    w = Workspace(WorkspaceConfig("w", ws.root, extra_paths=(extra,)))
    with pytest.raises(PathRefused):
        w.resolve("vault/Journal/j.md")
    with pytest.raises(PathRefused):
        w.resolve("vault/Notes/Private/secret.md")


def test_links_to_system_folders_and_ancestors_are_not_followed(ws, tmp_path):
    """A link to '/' once indexed 9,992 files, /proc included; a link to the workspace or
    above it, or into /proc, /sys or /dev, is not followed."""
    ws.write("memory/a.md", "x\n")
    (tmp_path / "beside").mkdir()
    (tmp_path / "beside" / "b.md").write_text("x\n")
    os.symlink("/", ws.root / "memory" / "root")
    os.symlink(tmp_path, ws.root / "memory" / "up")  # holds the workspace
    os.symlink(ws.root, ws.root / "memory" / "self")
    os.symlink("/proc/self", ws.root / "memory" / "proc")
    os.symlink("/proc/self/environ", ws.root / "memory" / "env.md")
    os.symlink("/dev/null", ws.root / "memory" / "null.md")
    assert list(paths(Workspace(WorkspaceConfig("w", ws.root)))) == ["memory/a.md"]


def test_a_memory_folder_linked_to_an_ancestor_is_not_walked(ws, tmp_path):
    ws.write("MEMORY.md", "x\n")
    (tmp_path / "other.md").write_text("x\n")
    os.symlink(tmp_path, ws.root / "memory")
    assert list(paths(Workspace(WorkspaceConfig("w", ws.root)))) == ["MEMORY.md"]
