import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.sources.fences import fenced_lines
from memd.sources.markdown import code_lines, parse, split_lines


def test_blocks_cover_every_line_and_find_headings():
    """Top-level blocks tile the body; a '#' inside a fence is not a heading."""
    text = "# A\n\npara\n\n```\n# not a heading\n```\n[ref]: http://x\n\n## B\ntext\n"
    doc = parse(text)
    # The link definition has no token of its own: it joins the block before it.
    assert [(b.start, b.end) for b in doc.blocks] == [(0, 2), (2, 4), (4, 9), (9, 10), (10, 11)]
    headings = [(b.heading_level, b.title) for b in doc.blocks if b.heading_level]
    assert headings == [(1, "A"), (2, "B")]


def test_setext_heading_and_list_items():
    doc = parse("Title\n=====\n\n- one\n- two\n  more\n")
    assert doc.blocks[0].heading_level == 1 and doc.blocks[0].title == "Title"
    assert doc.blocks[1].parts == ((3, 4), (4, 6))


def test_front_matter_is_not_body_and_gives_tags_and_aliases():
    doc = parse("---\ntags: [db, '#infra']\naliases: Store, Cache layer\n---\n# T\n")
    assert doc.body_start == 4
    assert doc.tags == ("db", "infra")
    assert doc.aliases == ("Store", "Cache layer")
    assert doc.blocks[0].start == 4


def test_tags_as_a_string():
    assert parse("---\ntags: a, b c\n---\nx\n").tags == ("a", "b", "c")


def test_malformed_front_matter_is_skipped_with_one_warning():
    """Obsidian hides front matter it cannot read too: it is never chunk text."""
    doc = parse("---\ntags: [unclosed\n---\nbody\n")
    assert doc.body_start == 3 and doc.tags == ()
    assert len(doc.warnings) == 1 and "not valid YAML" in doc.warnings[0]
    doc = parse("---\n- just a list\n---\nbody\n")
    assert doc.body_start == 3 and doc.warnings == [
        "front matter is not a mapping; its tags, aliases and date are not read "
        "(the note's text is indexed)"
    ]


def test_line_endings_and_bom():
    """CRLF, a BOM and a lone CR never shift line numbers."""
    doc = parse("\ufeff# A\r\n\r\ntext\rmore\r\n## B\r\n")
    assert doc.lines == ["# A", "", "text\rmore", "## B"]
    assert [(b.heading_level, b.start) for b in doc.blocks if b.heading_level] == [(1, 0), (2, 3)]


def test_split_lines():
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("a\r\nb") == ["a", "b"]
    assert split_lines("a\u2028b\n") == ["a\u2028b"]  # only \n ends a line, as in editors


def test_empty_and_blank_documents():
    assert parse("").blocks == []
    assert all(b.heading_level == 0 for b in parse("\n\n").blocks)


def test_deep_nesting_does_not_crash():
    text = "".join("> " * i + "x\n" for i in range(300))
    assert parse(text).blocks


_piece = st.sampled_from(
    [
        "",
        "# H",
        "Title",
        "=====",
        "-----",
        "---",
        "* * *",
        "___",
        "- item",
        "1. step",
        "> quote",
        "    code",
        "\tcode",
        "```",
        "~~~",
        "| a | b |",
        "|---|---|",
        "[ref]: http://x",
        "<div>",
        "</div>",
        "text with | pipe",
        "a > b",
        "plain words",
        "  - nested",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_piece, max_size=30).map("\n".join))
def test_skipping_rules_that_cannot_match_changes_nothing(text):
    """The fast parser (rules without their trigger characters switched off) gives the same
    blocks as the full one."""
    from markdown_it import MarkdownIt

    from memd.sources.markdown import _parser_for

    full = MarkdownIt("commonmark", {"maxNesting": 200}).enable("table")
    full.disable(["inline", "text_join"], ignoreInvalid=True)

    def sig(tokens):
        return [(t.type, t.map, t.level, t.tag, t.content) for t in tokens]

    assert sig(_parser_for(text).parse(text)) == sig(full.parse(text))


@pytest.mark.parametrize(
    "text",
    [
        "a\n```\ncode\n```\nb\n",
        "- item\n  ```python\n  x = 1\n  ```\n- next\n",
        "> quote\n> ~~~\n> in\n> ~~~\nafter\n",
        "````\n```\nstill code\n````\nout\n",
        "no fences here\n",
        "```\nnever closed\nto the end\n",
    ],
)
def test_the_quick_fence_scan_agrees_with_the_parser_on_fences(text):
    assert fenced_lines(text.splitlines()) == code_lines(text)


@pytest.mark.parametrize(
    ("line", "tags"),
    [
        ("see #`x`tag", ("tag",)),  # the code span is cut out: '#' then the tag's word
        ("(`x`#tag and #``b", ("tag", "b")),
        ("## 07:07 — release # plan #", ()),  # '#' before no word: no tag
        ("#123 #a1 #-x #/y x#no", ("a1", "-x", "/y")),
        ("[[Note#Part]] and [t](#anchor)", ()),
    ],
)
def test_tags_are_found_where_only_a_code_span_stood_between(line, tags):
    """A note is read for tags only when a '#' is followed by a tag's character or a code
    span (which is cut out before the tag is read): the tags found are those of a reading
    of every line."""
    assert parse(f"# Title\n\n{line}\n").tags == tags
