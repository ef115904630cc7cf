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


# A dated note's prose paragraph (over 300 characters) is never read as a fact; the item
# that introduces a nested one still scopes it when it is that long.
LONG = " ".join(["The quarterly planning notes ran long and covered many things"] * 6)
DATED = (
    f"# 2026-03-10\n\n{LONG}.\n\n- {LONG}, and for Northwind:\n  - Limit: 1200 requests/min\n"
    "- The deploy target is now production.\n\nStandup moved to 09:30.\n"
)


def test_a_dated_note_is_taken_apart_as_if_every_statement_were_read():
    """Leaving a dated note's long paragraphs out early changes nothing that is kept."""
    from memd.review.statements import statements
    from memd.review.updates import read

    e = FileEntry("memory/2026-03-10.md", "/w/m", "/w/m", "daily", "2026-03-10", 1, 7)
    every = statements(e.path, DATED, e.date)
    assert len(every) == 5 and sum(len(s.text) > 300 for s in every) == 2
    nested = next(s for s in every if s.text.startswith("Limit"))
    assert nested.lead and nested.lead.endswith("for Northwind:") and len(nested.lead) > 300
    taken = take_apart(e, DATED)
    assert taken.said == read(every)
    assert sorted(taken.digests) == [s.line for s, _ in taken.said]


def test_an_index_that_finds_what_is_current_leaves_the_collector_as_it_was(ws, config):
    """The cyclic collector, paused while statements are gathered, is as it was after."""
    import gc

    from memd.memory import Memory

    ws.write("MEMORY.md", "# Memory\n\n- Logs are kept for 30 days.\n")
    ws.write("memory/2026-03-05.md", "# 2026-03-05\n\n- Log retention: 14 days.\n")
    with Memory(config) as m:
        assert gc.isenabled()
        m.index(current=True)
        assert gc.isenabled()
        assert [u.newer.text for u in m.currency.updates] == ["Log retention: 14 days."]
        gc.disable()
        try:
            ws.write("memory/2026-03-06.md", "# 2026-03-06\n\n- Log retention: 7 days.\n")
            m.index(current=True)
            assert not gc.isenabled()
        finally:
            gc.enable()


def test_a_few_notes_edited_since_are_read_again_rather_than_all_kept_anew(ws, config):
    """After one edit among many notes, what was kept stays as it was (writing it all costs
    more than reading the one note again); the next run still finds what the edit says."""
    from memd.memory import Memory

    ws.write("MEMORY.md", "# Memory\n\n- Logs are kept for 30 days.\n")
    for day in range(1, 29):
        ws.write(f"memory/2026-02-{day:02}.md", f"# 2026-02-{day:02}\n\n- Walked {day} km.\n")
    with Memory(config) as m:
        m.index(current=True)
        kept = m.currency._kept
        before = kept.stat()
        assert m.currency.updates == []
    ws.write("memory/2026-03-05.md", "# 2026-03-05\n\n- Log retention: 14 days.\n")
    with Memory(config) as m:
        m.index(current=True)
        assert [u.newer.text for u in m.currency.updates] == ["Log retention: 14 days."]
    assert kept.stat().st_ino == before.st_ino and kept.stat().st_mtime_ns == before.st_mtime_ns
    with Memory(config) as m:  # as a new process: the new note read again, from its file
        assert m.currency.refresh()
        assert [u.newer.text for u in m.currency.updates] == ["Log retention: 14 days."]
    for day in range(1, 5):  # more than 1 note in 20 now differs: all kept anew
        ws.write(f"memory/2026-02-{day:02}.md", f"# 2026-02-{day:02}\n\n- Swam {day} km.\n")
    with Memory(config) as m:
        m.index(current=True)
    assert kept.stat().st_mtime_ns != before.st_mtime_ns
