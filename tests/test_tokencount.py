"""The quick token count (``memd.sources.tokencount``) is tiktoken's count on any text."""

import unicodedata
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memd.sources import tokencount
from memd.sources.chunker import count_tokens, encoder

ROOT = Path(__file__).parent.parent


def real(text: str) -> int:
    return len(encoder().encode_ordinary(text))


# Pieces where the pre-tokenizer's rules meet: runs of blank lines, spaces before a line
# end, a line of spaces, \r, other white space, contractions (and the long s that folds
# to "s"), digits in threes, punctuation before line ends, Latin letters and numbers past
# ASCII, and characters the quick count leaves to tiktoken (CJK, emoji, combining marks).
PIECES = [
    *("\n", "\n\n", " ", "  ", "\t", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u2003"),
    *("\u2028", "\u202f", "\x1c", "'", "'s", "'S", "'ll", "'LL", "'ve", "'re", "'t", "'Tis"),
    *("'REAL", "\u017f", "a", "Zq", "word", " word", "ab12", "7", "1234567", "\xb2", "\xb9"),
    *("\xbd", "\xb5", "\xaa", "\xe9t\xe9", "stra\xdfe", "\u0142\xf3d\u017a", ".", "!?", "--"),
    *("\u2014", "\u2026", "\u2019", "\u201c", "`", "```", "#", "## ", "- [ ] ", "|", "%%"),
    *("\u2192", "\u4e2d\u6587", "\U0001f600", "e\u0301", "\u0300", "\u2065", "<|endoftext|>"),
]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
@example("para one\n\n\n\npara two")
@example("trailing spaces   \n  \nnext\n \n")
@example("```python\nx = 1\n```\n\n")
@example("# \u6807\u9898\n\n\u4e2d\u6587\u7b14\u8bb0 and English\n")
@example("It's done.\n\n- [ ] don't\n   \n")
@example("  \n\n  ")
@example("it'\u017f 'S\u017f x'LL'Ve'\u017f'D \u017f\u017f")  # the long s folds to "s"
def test_the_quick_count_is_tiktoken_s_count(text):
    assert count_tokens(text) == real(text)


def test_every_markdown_file_in_the_repository_counts_alike():
    """Real notes, whole and line by line (as the chunker counts a long section)."""
    files = [*ROOT.glob("tests/data/**/*.md"), *ROOT.glob("bench/fixtures/**/*.md")]
    files += [*ROOT.glob("docs/*.md"), ROOT / "README.md"]
    assert len(files) > 50
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert count_tokens(text) == real(text), path
        for line in text.split("\n"):
            assert count_tokens(line + "\n") == real(line + "\n"), (path, line)


def test_the_spelled_out_classes_are_unicode_s():
    """Letters, numbers and white space as the quick count spells them are Unicode's
    classes over every character it counts itself."""
    covered = [chr(c) for c in range(0x2200) if tokencount.COVERED.fullmatch(chr(c))]
    assert len(covered) > 700
    for ch, cls, name in [
        (ch, cls, name)
        for ch in covered
        for cls, name in ((tokencount._LETTER, "L"), (tokencount._NUMBER, "N"))
    ]:
        inside = bool(tokencount.re.fullmatch(f"[{cls}]", ch))
        assert inside == unicodedata.category(ch).startswith(name), (hex(ord(ch)), name)
    white = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, *range(0x2000, 0x200B),
             0x2028, 0x2029, 0x202F, 0x205F}  # Unicode's White_Space in this range  # fmt: skip
    for ch in covered:
        assert bool(tokencount.re.fullmatch(f"[{tokencount._SPACE}]", ch)) == (ord(ch) in white)


def test_another_pre_tokenizer_is_counted_by_tiktoken_itself():
    class Other:
        _pat_str = r"\S+|\s+"

        def encode_ordinary(self, text):
            return text.split()

    assert tokencount.counter(Other())("a b  c") == 3


def test_the_installed_tiktoken_cuts_text_as_the_quick_count_does():
    """Else every count falls back to tiktoken's own, correct but twice as slow: a new
    tiktoken's expression is then to be spelled out in ``memd.sources.tokencount``."""
    assert encoder()._pat_str == tokencount.CL100K_PATTERN


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), max_size=12))
def test_a_count_for_a_note_s_lines_counts_their_joins_as_tiktoken_does(parts):
    """The count made for a note's lines (which reads no text's characters again when
    every line holds only those spelled out) counts any run of them, joined, and any
    line alone, as tiktoken does; a line of CJK or emoji makes it the checking count."""
    lines = "\n".join(parts).split("\n")  # no line holds a "\n"
    count = tokencount.for_lines(tokencount.counter(encoder()), lines)
    for a in range(len(lines)):
        text = "\n".join(lines[a:])
        assert count(text) == real(text)
        assert count(lines[a] + "\n") == real(lines[a] + "\n")
