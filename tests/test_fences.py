from hypothesis import given, settings
from hypothesis import strategies as st

from memd.sources.fences import fenced_lines, lines_holding

# Lines where fences meet their edge cases: a fence mid-line, after list and quote marks,
# longer and shorter closers, tildes inside backtick code, a fence on the last line.
_LINE = st.sampled_from(
    ["", "text", "```", "```py", "~~~", "~~~~", "````", "text ``` mid", "- ```", "> ~~~",
     "   ```", "``` x", "#tag", "## head", "a # b", "``", "~~", "```` ", "1. ~~~ x"]
)  # fmt: skip


def _scan_every_line(lines: list[str]) -> set[int]:
    """The fence scan as a loop over every line: what ``fenced_lines`` must agree with."""
    out, fence = set(), ""
    for n, line in enumerate(lines):
        bare = line.lstrip(" \t>-*+0123456789.)")
        if fence:
            out.add(n)
            if bare.startswith(fence) and not bare[len(fence) :].strip(fence[0]).strip():
                fence = ""
        elif bare.startswith(("```", "~~~")):
            fence = bare[: len(bare) - len(bare.lstrip(bare[0]))]
            out.add(n)
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=25))
def test_fences_found_from_the_marked_lines_are_those_of_every_line(lines):
    """Looking only at the lines that hold three backticks or tildes finds the fenced
    lines a scan of every line finds."""
    assert fenced_lines(lines) == _scan_every_line(lines)
    assert fenced_lines(lines, "\n".join(lines)) == _scan_every_line(lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=25).map("\n".join), st.sampled_from([("#",), ("```", "~~~")]))
def test_the_lines_holding_a_mark_are_found_in_order(text, marks):
    """Each line holding a mark once, in order, counted as ``split("\\n")`` numbers lines:
    a mark at the text's very start or end, or twice on a line."""
    expected = [n for n, line in enumerate(text.split("\n")) if any(m in line for m in marks)]
    assert lines_holding(text, *marks) == expected


def test_a_fence_in_the_middle_of_a_line_opens_none():
    """Three backticks after text are inline code's, not a fence: nothing after is code."""
    assert fenced_lines(["see ``` here", "text", "#tag"]) == set()
    assert fenced_lines(["text", "```", "code", "more ``` code"]) == {1, 2, 3}
