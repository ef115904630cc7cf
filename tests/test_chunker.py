import re
from itertools import pairwise

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memd.sources.chunker import chunk_document, count_tokens
from memd.sources.markdown import parse


def chunks_of(text, budget=400, overlap=80):
    return chunk_document(parse(text), budget, overlap)


def test_small_sections_are_one_chunk_each_with_heading_paths():
    text = "# Day\n\nintro\n\n## API\nREST\n\n### Auth\ntokens\n\n## DB\nPostgres\n"
    got = [(c.start_line, c.end_line, c.heading) for c in chunks_of(text)]
    assert got == [
        (1, 3, "# Day"),
        (5, 6, "# Day > ## API"),
        (8, 9, "# Day > ## API > ### Auth"),
        (11, 12, "# Day > ## DB"),
    ]


def test_a_heading_alone_joins_the_text_under_it():
    """memd's own daily notes: '# date' then '## HH:MM — title' and the entry."""
    text = (
        "# 2026-01-20\n\n## 10:00 — Deploys\n\nMoved to Thursdays.\n\n## 11:00 — DB\n\nPostgres.\n"
    )
    got = [(c.start_line, c.end_line, c.heading) for c in chunks_of(text)]
    assert got == [
        (1, 5, "# 2026-01-20 > ## 10:00 — Deploys"),
        (7, 9, "# 2026-01-20 > ## 11:00 — DB"),
    ]


def test_a_heading_at_the_end_joins_the_chunk_before_it():
    assert [(c.start_line, c.end_line) for c in chunks_of("# A\ntext\n\n## Later\n")] == [(1, 4)]
    assert [(c.start_line, c.end_line) for c in chunks_of("# Memory\n")] == [(1, 1)]


def test_text_before_the_first_heading_has_an_empty_heading_path():
    assert [(c.start_line, c.heading) for c in chunks_of("hello\n\n# A\nx\n")] == [
        (1, ""),
        (3, "# A"),
    ]


def test_chunk_text_is_exactly_its_lines():
    text = "# A\n\nfirst para\n\n- item\n\n## B\n\nsecond\n"
    lines = text.split("\n")
    for c in chunks_of(text):
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_long_section_is_cut_between_blocks_with_overlap():
    paras = [f"Paragraph {i} " + "alpha beta gamma delta " * 8 for i in range(12)]
    text = "# Long\n\n" + "\n\n".join(paras) + "\n"
    chunks = chunks_of(text, budget=120, overlap=30)
    assert len(chunks) > 3
    assert all(c.tokens <= 120 and count_tokens(c.text) <= 120 for c in chunks)
    for prev, nxt in pairwise(chunks):
        # each chunk begins inside the one before: the overlap
        assert nxt.start_line <= prev.end_line
        assert nxt.text.split("\n")[0] in prev.text


def test_a_fence_is_never_split_when_it_fits():
    fence = "```python\n" + "\n".join(f"x{i} = {i}  # step {i}" for i in range(15)) + "\n```"
    text = "# Code\n\n" + "word " * 60 + "\n\n" + fence + "\n\n" + "after " * 60 + "\n"
    fence_start = text.split("\n").index("```python") + 1
    fence_end = fence_start + 16
    chunks = chunks_of(text, budget=200, overlap=0)
    holding = [c for c in chunks if c.start_line <= fence_start <= c.end_line]
    assert holding and holding[0].end_line >= fence_end


def test_an_over_long_list_is_cut_between_items():
    items = "\n".join(f"- item {i}: " + "lorem ipsum " * 10 for i in range(20))
    chunks = chunks_of("# L\n" + items + "\n", budget=100, overlap=0)
    for c in chunks[1:]:
        assert c.text.startswith("- item")


def test_a_single_over_long_line_is_its_own_chunk():
    long_line = "word " * 600
    chunks = chunks_of(f"# T\nshort\n{long_line}\nafter\n", budget=100, overlap=20)
    over = [c for c in chunks if c.tokens > 100]
    assert len(over) == 1 and over[0].start_line == over[0].end_line == 3


def test_long_lines_still_overlap_by_tokens():
    """When no whole line fits the overlap, the tail of the last line is carried over."""
    paras = "\n\n".join(f"P{i} " + "lorem ipsum dolor " * 15 for i in range(4))
    chunks = chunks_of("# T\n\n" + paras + "\n", budget=100, overlap=20)
    assert len(chunks) >= 3
    for prev, nxt in pairwise(chunks):
        first = nxt.text.split("\n")[0]
        assert prev.text.rstrip().endswith(first)
        assert count_tokens(first) <= 20
        assert nxt.start_line == prev.end_line


def test_front_matter_is_not_in_any_chunk():
    chunks = chunks_of("---\ntags: [x]\nsecret_key: 1\n---\n# T\nbody\n")
    assert chunks[0].start_line == 5
    assert all("secret_key" not in c.text for c in chunks)


def test_empty_and_blank_files_have_no_chunks():
    assert chunks_of("") == []
    assert chunks_of("\n\n   \n") == []


_line = st.one_of(
    st.sampled_from(
        [
            "",
            "",
            "# Title",
            "## Sub",
            "### Deep",
            "```",
            "~~~",
            "- item",
            "1. step",
            "> quote",
            "| a | b |",
            "|---|---|",
            "[ref]: http://x",
            "---",
            "    code",
            "数据库的设计",
            "Ünïcödé wörds",
            "=====",
            "\t",
            "* * *",
        ]
    ),
    st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"),
        max_size=120,
    ),
    st.builds(lambda n: "word " * n, st.integers(1, 80)),
)
_doc = st.lists(_line, max_size=60).map("\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_doc, budget=st.integers(16, 120), overlap_ratio=st.floats(0, 0.9))
@example(text="# Title\n0:0:0000:0:0:0: ", budget=16, overlap_ratio=0.5)  # heading + 1 long line
def test_chunking_properties(text, budget, overlap_ratio):
    """Every non-blank line is in a chunk, ranges are in the file, budgets hold except for
    single over-long lines (under the headings that open their section), and chunking
    again gives the same chunks."""
    overlap = int(budget * overlap_ratio)
    doc = parse(text)
    chunks = chunk_document(doc, budget, overlap)
    n = len(doc.lines)
    heads = {i for b in doc.blocks if b.heading_level for i in range(b.start, b.end)}
    covered = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= n
        covered.update(range(c.start_line, c.end_line + 1))
        if c.start_line != c.end_line and count_tokens(c.text) > budget:
            lines = range(c.start_line - 1, c.end_line)
            rest = [i for i in lines if doc.lines[i].strip() and i not in heads]
            assert len(rest) == 1 and count_tokens(doc.lines[rest[0]]) > budget, c
        # the text is the file's lines, the first possibly cut to an overlap tail
        text_lines = c.text.split("\n")
        assert text_lines[1:] == doc.lines[c.start_line : c.end_line]
        first = doc.lines[c.start_line - 1]
        assert text_lines[0] == first or first.rstrip().endswith(text_lines[0])
    for i, line in enumerate(doc.lines[doc.body_start :], start=doc.body_start + 1):
        if line.strip():
            assert i in covered, (i, line)
    assert chunk_document(parse(text), budget, overlap) == chunks
    # A chunk that is only headings exists only when the file holds nothing else.
    body = [line for line in doc.lines[doc.body_start :] if line.strip()]
    for n, c in enumerate(chunks):
        if all(is_heading(t) for t in c.text.split("\n") if t.strip()):
            # allowed only when the file holds nothing else, or the text it joins (the next
            # chunk, or at the end the one before) leaves no room for it
            other = chunks[n + 1] if n + 1 < len(chunks) else (chunks[n - 1] if n else None)
            # (the two may share a line: the next chunk can open on the heading's tail)
            a, b = (
                (min(c.start_line, other.start_line), max(c.end_line, other.end_line))
                if other
                else (0, 0)
            )
            # (the chunker counts each line with its newline: never under the joined count)
            joined = doc.lines[a - 1 : b]
            no_room = other is not None and sum(count_tokens(t + "\n") for t in joined) > budget
            assert all(is_heading(line) for line in body) or no_room, c


def is_heading(line: str) -> bool:
    return bool(re.match(r" {0,3}#{1,6}( |$)", line))


def test_a_heading_keeps_the_first_line_when_the_whole_block_does_not_fit():
    """Heading + block one token over budget: the heading takes the block's first line
    rather than becoming a chunk of its own."""
    chunks = chunk_document(parse("# Title\n0:0:𐀀\n0:0: "), 16, 8)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (2, 3)]
    assert all(not c.text.startswith("#") or "\n" in c.text for c in chunks)
