"""Re-chunking only the end of a grown file gives exactly what a full re-chunk gives."""

from __future__ import annotations

import hashlib

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memd.index.regrow import line_offset, regrow, tail_of
from memd.sources.chunker import chunk_document, chunk_with_restart
from memd.sources.markdown import parse

FRAGMENTS = [
    "",
    "",
    "# Title",
    "## 09:30 — standup",
    "### Deep #tag-three",
    "Plain words about the deploy window and the #release tag.",
    "A much longer paragraph line " + "with many repeated words " * 12,
    "- a list item",
    "  continued item text #nested",
    "* **editor**: vim <!-- memd:key -->",
    "1. numbered",
    "```python",
    "# not a heading",
    "```",
    "~~~",
    "    indented code #notatag",
    "    ```",
    "- ```python",
    "Setext title",
    "===",
    "---",
    "> quoted #quote",
    "<!-- an html comment",
    "-->",
    "<div>",
    "| a | b |",
    "|---|---|",
    "[ref]: https://example.com",
    "trailing carriage\r",
    "héllo wörld ünïcode 日本語の文",
]

line = st.sampled_from(FRAGMENTS)
text = st.lists(line, max_size=40).map(lambda ls: "\n".join(ls))


def full(data: bytes, budget: int, overlap: int):
    doc = parse(data.decode("utf-8", "replace"))
    return doc, chunk_document(doc, budget, overlap)


def tail_for(data: bytes, budget: int, overlap: int):
    doc = parse(data.decode("utf-8"))
    chunks, restart = chunk_with_restart(doc, budget, overlap)
    return chunks, tail_of(data, hashlib.sha256(data).hexdigest(), doc, restart)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=text,
    appends=st.lists(st.tuples(text.filter(bool), st.booleans()), min_size=1, max_size=3),
    front=st.booleans(),
    newline=st.booleans(),
    budget=st.sampled_from([30, 60, 400]),
)
# A fence the tag scan sees open (in an HTML comment) before the restart line.
@example(
    head="",
    appends=[
        (
            "<!-- an html comment\n```python\n* **editor**: vim <!-- memd:key -->\n# Title\n"
            "  continued item text #nested\n",
            False,
        ),
        ("# Title", False),
    ],
    front=False,
    newline=False,
    budget=30,
)
def test_incremental_chunks_equal_a_full_rechunk(head, appends, front, newline, budget):
    overlap = budget // 4
    data = (("---\ntags: [fm]\n---\n" if front else "") + head + ("\n" if newline else "")).encode()
    chunks, tail = tail_for(data, budget, overlap)
    for more, ends_line in appends:
        grown = data + (more + ("\n" if ends_line else "")).encode()
        doc, expected = full(grown, budget, overlap)
        if tail is not None:
            got = regrow(grown, tail, budget, overlap)
            if got is not None:
                kept = [c for c in chunks if c.start_line < got.from_line]
                assert kept + got.chunks == expected
                assert got.tags == doc.tags
                assert got.lines == len(doc.lines)
                assert got.hash == hashlib.sha256(grown).hexdigest()
                chunks, tail, data = expected, got.tail, grown
                continue
        data = grown
        chunks, tail = tail_for(data, budget, overlap)


def test_a_flush_shaped_note_regrows_from_its_last_entry():
    note = "# 2026-01-20\n" + "".join(f"\n## 09:{n:02d} — e{n}\n\nEntry {n}.\n" for n in range(50))
    data = note.encode()
    _, tail = tail_for(data, 400, 80)
    assert tail is not None and tail.line == len(note.splitlines()) - 3  # '## 09:49 — e49'
    grown = data + b"\n## 10:00 - new\n\nA new entry #fresh.\n"
    got = regrow(grown, tail, 400, 80)
    assert got is not None and got.from_line == tail.line + 1
    assert [c.text for c in got.chunks] == [
        "## 09:49 — e49\n\nEntry 49.",
        "## 10:00 - new\n\nA new entry #fresh.",
    ]
    assert got.tags == ("fresh",)
    # Anything but a pure append: re-chunk the whole file.
    assert regrow(data.replace(b"Entry 3.", b"Entry 4."), tail, 400, 80) is None
    assert regrow(data, tail, 400, 80) is None


def test_line_offset():
    data = b"a\nbb\n\nccc\nd"
    for n, start in enumerate([0, 2, 5, 6, 10]):
        assert line_offset(data, n) == start
        assert data[start:].split(b"\n")[0] == data.split(b"\n")[n]
    assert line_offset(data, 1, 2) == 3  # from 'bb': line 1 is the empty line at 5


def _chunks(memory) -> list[tuple]:
    rows = memory.db.store.db.execute(
        "SELECT f.path, c.start_line, c.end_line, c.heading, c.text, c.tokens FROM chunks c "
        "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.start_line"
    )
    return list(rows)


def test_flushes_reindex_only_the_end_and_match_a_full_reindex(ws, memory):
    from memd.write.writer import Entry

    ws.write("MEMORY.md", "# Memory\n")
    memory.index()
    for n in range(30):
        memory.flush(
            [Entry(f"Entry {n} about the deploy window.", title=f"e{n}")], date="2026-02-02"
        )
    early_sql = (
        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path = 'memory/2026-02-02.md' AND c.start_line < 20 ORDER BY c.id"
    )
    early = memory.db.store.db.execute(early_sql).fetchall()
    memory.flush([Entry("A late entry with #newtag in it.", title="late")], date="2026-02-02")
    memory.store("editor", "vim", category="daily")  # today's note: a new file
    memory.flush([Entry("- **editor**: vim", title="quoted")], date="2026-02-02")
    # The early chunks were kept, not deleted and written again.
    assert early == memory.db.store.db.execute(early_sql).fetchall()
    incremental = _chunks(memory)
    assert memory.search("newtag", min_score=0).results  # a new tag is searchable at once
    memory.index(full=True)
    assert _chunks(memory) == incremental
    tags = memory.db.store.db.execute(
        "SELECT tags FROM files WHERE path LIKE 'memory/2026-02-02.md'"
    )
    assert [t for (t,) in tags] == ['["newtag"]']


def _tags(memory) -> dict[str, str]:
    return dict(memory.db.store.db.execute("SELECT path, tags FROM files"))


def test_appends_after_open_looking_code_index_as_a_full_reindex_would(ws, memory):
    """Notes the tail re-chunk cannot read from their last heading (a fence the tag scan
    sees open there, a drawing's hidden data) still end up indexed as a full pass has them."""
    # The line scan sees a fence open from '```' on; markdown-it sees it in a comment.
    ws.write("memory/2026-03-01.md", "<!-- a comment\n```\n-->\n# One\n\nx\n\n# Two\n\ny\n")
    ws.write(
        "memory/plan.excalidraw.md",
        "# Text Elements\nA box ^a1\n\n## Arrow ^a2\nto the right ^a3\n\n# Drawing\n"
        '```json\n{"type": "excalidraw", "secret": "zeppelin"}\n```\n',
    )
    memory.index()
    for rel, more in [("2026-03-01.md", "#loud\n"),
                      ("plan.excalidraw.md", "zeppelin data\n")]:  # fmt: skip
        with open(ws.root / "memory" / rel, "a") as f:
            f.write(more)
    memory.index()
    incremental = _chunks(memory), _tags(memory)
    assert not memory.search("zeppelin", min_score=0).results  # a drawing's data is no text
    memory.index(full=True)
    assert (_chunks(memory), _tags(memory)) == incremental


def test_a_pass_that_keeps_no_tails_makes_none_and_the_next_append_rechunks_whole(ws, memory):
    """``regrow=False`` (a command's one pass): no tail is worked out, and a later append
    then re-chunks the file whole, as a full pass would."""
    ws.write("memory/2026-02-03.md", "".join(f"# E{n}\n\nEntry {n} words.\n\n" for n in range(9)))
    memory.index(regrow=False)
    assert memory.db.tails == {}
    with open(ws.root / "memory" / "2026-02-03.md", "a") as f:
        f.write("# Late\n\nlate #newtag\n")
    assert memory.index().changed == 1
    assert set(memory.db.tails) == {"memory/2026-02-03.md"}  # the default keeps them
    incremental = _chunks(memory), _tags(memory)
    memory.index(full=True)
    assert (_chunks(memory), _tags(memory)) == incremental
