"""Notes taken apart are kept beside the index between runs: read back as they were made,
and only from a file this user alone may write and that holds what ``save_kept`` wrote."""

from __future__ import annotations

import os

from memd.review.taken import load_kept, save_kept, take_apart
from memd.sources.entries import FileEntry

TEXT = "# 2026-03-09\n\n- The deploy target is now production.\n- Standup moved to 09:30.\n"


def entry(path: str = "memory/2026-03-09.md") -> FileEntry:
    return FileEntry(path, f"/w/{path}", f"/w/{path}", "daily", "2026-03-09", len(TEXT), 7)


def test_what_is_kept_reads_back_as_it_was_taken_apart(tmp_path):
    taken = {"memory/2026-03-09.md": take_apart(entry(), TEXT)}
    assert taken["memory/2026-03-09.md"].said  # something to keep
    save_kept(tmp_path / "kept", taken)
    assert load_kept(tmp_path / "kept") == taken
    assert oct((tmp_path / "kept").stat().st_mode & 0o777) == "0o600"


def test_a_file_others_may_write_or_that_is_not_what_was_kept_is_not_read(tmp_path):
    path = tmp_path / "kept"
    save_kept(path, {"memory/2026-03-09.md": take_apart(entry(), TEXT)})
    os.chmod(path, 0o666)
    assert load_kept(path) == {}
    os.chmod(path, 0o600)
    path.write_bytes(b"\x00not marshal")
    assert load_kept(path) == {}
    assert load_kept(tmp_path / "missing") == {}
