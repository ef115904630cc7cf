"""Count cl100k_base tokens at half tiktoken's cost, with the same answer.

tiktoken first cuts text into pieces with one regular expression, then byte-pair encodes
each piece on its own; a count is the sum over the pieces. Its expression (Rust's
fancy-regex) is most of the time on notes. Python's ``re`` runs the same expression faster
once its classes (letters ``\\p{L}``, numbers ``\\p{N}``, white space ``\\s``) are spelled
out, and a piece's count is looked up once per process (a note's words repeat).

Spelled out here only for the characters up to U+024F (Latin letters, accents), general
punctuation (U+2000–U+206F) and arrows (U+2190–U+21FF): classes Unicode has kept the same
since 1.1, so Python's and Rust's tables agree. Text with any other character (CJK, emoji,
combining marks) is counted by tiktoken itself, and so is all text when the encoding's
expression is not the one spelled out here (another tiktoken): ``tests/test_tokencount.py``
checks the two counts agree on tricky text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import filterfalse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

# cl100k_base's pre-tokenizer as tiktoken >= 0.8 writes it.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
# Unicode's classes over the characters below (unicodedata agrees: tests/test_tokencount.py).
_LETTER = "A-Za-z\xaa\xb5\xba\xc0-\xd6\xd8-\xf6\xf8-\u024f"
_NUMBER = "0-9\xb2\xb3\xb9\xbc-\xbe"
_SPACE = "\t-\r \x85\xa0\u2000-\u200a\u2028\u2029\u202f\u205f"  # White_Space
# The characters spelled out (U+2065 is unassigned: left to tiktoken).
COVERED = re.compile("[\x00-\u024f\u2000-\u2064\u2066-\u206f\u2190-\u21ff]*")
_PIECES = re.compile(
    rf"'(?i:[sdmt]|ll|ve|re)|[^\r\n{_LETTER}{_NUMBER}]?+[{_LETTER}]++|[{_NUMBER}]{{1,3}}+"
    rf"| ?[^{_SPACE}{_LETTER}{_NUMBER}]++[\r\n]*+|[{_SPACE}]++\Z|[{_SPACE}]*[\r\n]"
    rf"|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]"
)
_REMEMBERED = 200_000  # pieces whose counts are kept (a few MB), then forgotten at once


def counter(enc: tiktoken.Encoding) -> Callable[[str], int]:
    """A function counting ``enc``'s tokens in a text as ``len(enc.encode_ordinary(text))``
    does (special tokens' text as plain text): by pieces when ``enc`` cuts text as
    cl100k_base does (its own ranks then encode each piece)."""
    if enc._pat_str != CL100K_PATTERN:
        return lambda text: len(enc.encode_ordinary(text))
    return _PieceCounter(enc)


def for_lines(count: Callable[[str], int], lines: list[str]) -> Callable[[str], int]:
    """``count`` (from ``counter``) for texts made of ``lines`` and parts of them: one that
    does not read each text's characters again when every line holds only the characters
    spelled out here (an ASCII line is known to at no cost; a chunker's texts hold most
    lines once or twice)."""
    if not isinstance(count, _PieceCounter):
        return count
    if all(map(COVERED.fullmatch, filterfalse(str.isascii, lines))):
        return count.covered
    return count


class _PieceCounter(dict[str, int]):
    """Pieces' token counts, each found once; called on a text, its count."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        super().__init__()
        self._enc = enc
        self._piece = enc._core_bpe.encode_single_piece  # a piece's tokens, no pre-tokenizer

    def __call__(self, text: str) -> int:
        if not text.isascii() and not COVERED.fullmatch(text):
            return len(self._enc.encode_ordinary(text))
        return self.covered(text)

    def covered(self, text: str) -> int:
        """The count of a text whose every character ``COVERED`` holds."""
        if len(self) > _REMEMBERED:
            self.clear()
        return sum(map(self.__getitem__, _PIECES.findall(text)))

    def __missing__(self, piece: str) -> int:
        count = self[piece] = len(self._piece(piece.encode()))
        return count
