"""The fast block scanner finds exactly the blocks markdown-it finds, whenever it answers."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memd.sources import blockscan, markdown
from memd.sources.markdown import Block, _cover, _cover_found, _tokenized_blocks

_EXAMPLES = int(os.environ.get("MEMD_BLOCKSCAN_EXAMPLES", "400"))

_WORDS = st.sampled_from(
    ["alpha", "beta gamma", "a | b", "#tag", "x #", "*em*", "`code`", "1.", "-", "|", ":",
     "[x]", "~~~", "```", "\\|", "\u00a0", "#", "##", "<b>", "> q", "]:", "2)", "+", " "]
)  # fmt: skip
_TEXT = st.lists(_WORDS, min_size=0, max_size=4).map(" ".join)
# Line starts the scanner must follow or refuse: markers, fences, headings, table rows,
# and the constructs it leaves to markdown-it.
_PLAIN_PREFIXES = ["", "", "", "- ", "* ", "+ ", "1. ", "2. ", "1) ", "10. ", "- [ ] ",
                   "# ", "## ", "###### ", "#", "```", "```py", "~~~", "````", "| ", "-  ",
                   "1.  ", "- - ", "#######", "01. ", "0. ", "3)  "]  # fmt: skip
_ODD_PREFIXES = ["> ", "<div>", "---", "***", "* * *", "===", "-", "[a]: b", "-     ",
                 "\t", "- ", "   \t", "1.", "*", "__ _", "<!-- ", "- > "]  # fmt: skip
_SPECIAL = ["", "", "", "  ", "|---|---|", "|:-|-:|", "--|--", "| a | b |", "a | b",
            "```", "~~~~", "    ```", "  ```", "| x |", "- |", ":-:|", "text\r", "   ",
            "\u00a0", " \u3000", "\x0c"]  # fmt: skip


def _line(prefixes: list[str]) -> st.SearchStrategy[str]:
    built = st.builds(
        lambda indent, prefix, text, tail: " " * indent + prefix + text + tail,
        st.sampled_from([0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 8]),
        st.sampled_from(prefixes),
        _TEXT,
        st.sampled_from(["", "", "", " ", "  ", " #", " ##"]),
    )
    return st.one_of(built, st.sampled_from(_SPECIAL))


_PLAIN_DOC = st.lists(_line(_PLAIN_PREFIXES), max_size=30)
_ANY_DOC = st.lists(_line(_PLAIN_PREFIXES + _ODD_PREFIXES), max_size=30)
_SAFE = st.lists(
    st.sampled_from(["alpha", "beta", "a|b", "#tag", "x #", "*em*", "`c`", "1.", "|", "\\|"]),
    min_size=1,
    max_size=3,
).map(" ".join)


@st.composite
def _item(draw: st.DrawFn, marker: str) -> list[str]:
    """A list item: its first line, then content under its column (text, a nested item, a
    fence), with blank lines between."""
    pad = " " * draw(st.sampled_from([1, 1, 1, 2, 4]))
    lines = [marker + pad + draw(_SAFE)]
    width = len(marker) + len(pad)
    for _ in range(draw(st.integers(0, 3))):
        indent = " " * (width + draw(st.sampled_from([0, 0, 1, 2, 4, 6])))
        kind = draw(st.sampled_from(["text", "item", "fence", "blank"]))
        if kind == "text":
            lines.append(indent + draw(_SAFE))
        elif kind == "item":
            lines.append(indent + draw(st.sampled_from(["- ", "* ", "1. ", "3) "])) + draw(_SAFE))
        elif kind == "fence":
            lines += [indent + "```", indent + "- " + draw(_SAFE), indent + "```"]
        else:
            lines.append("")
    return lines


@st.composite
def _block(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(["heading", "para", "list", "fence", "table", "blank"]))
    if kind == "heading":
        return [draw(st.sampled_from(["# ", "## ", "### "])) + draw(_SAFE)]
    if kind == "para":
        return draw(st.lists(_SAFE, min_size=1, max_size=3))
    if kind == "list":
        marker = draw(st.sampled_from(["-", "*", "+", "1.", "2)", "10."]))
        items = draw(st.lists(_item(marker), min_size=1, max_size=4))
        gap = draw(st.sampled_from([[], [""]]))
        return [line for item in items for line in [*item, *gap]]
    if kind == "fence":
        body = draw(st.lists(st.sampled_from(["# not", "- no", "", "  ``", "x"]), max_size=3))
        return ["```py", *body, "```"]
    if kind == "table":
        rows = draw(st.lists(st.just("| 1 | 2 |"), max_size=3))
        return [draw(st.sampled_from(["| a | b |", "a | b"])), "|---|:-:|", *rows]
    return [""]


# Notes as people write them: mostly accepted, so the agreement is tested where it counts.
_NOTE = st.lists(_block(), max_size=12).map(lambda blocks: [x for b in blocks for x in b])


def _check(body: list[str]) -> bool:
    found = blockscan.scan(body)
    if found is None:
        return False
    want, want_code = _tokenized_blocks(body, 0)
    assert _cover_found(found[0], 0, len(body)) == _cover(want, 0, len(body))
    assert found[1] == want_code
    return True


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAIN_DOC)
def test_plain_notes_match_markdown_it(body: list[str]) -> None:
    _check(body)


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_DOC)
def test_any_markdown_matches_markdown_it_or_is_refused(body: list[str]) -> None:
    _check(body)


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NOTE)
def test_structured_notes_match_markdown_it(body: list[str]) -> None:
    _check(body)


def test_most_plain_notes_take_the_fast_path() -> None:
    """The scanner answers for typical notes; markdown-it is only the fallback."""
    note = [
        "# 2026-01-20", "", "## 09:00 — standup", "", "Some text with #tag and a | pipe.",
        "wrapped line", "", "- [x] done", "- [ ] todo", "  more of it", "", "1. one",
        "2. two", "", "```python", "x = 1  # not a heading", "```", "",
        "| a | b |", "|---|---|", "| 1 | 2 |", "", "### End ##",
    ]  # fmt: skip
    assert _check(note)
    doc = markdown.parse("\n".join(note))
    assert doc.blocks[0] == Block(0, 2, 1, "2026-01-20")
    assert doc.tags == ("tag",)


def test_trim_characters_are_markdown_its() -> None:
    from markdown_it.common.utils import MD_TRIM_CHARS

    assert blockscan._TRIM == MD_TRIM_CHARS
