"""How chunk text becomes FTS5 columns, and how a user's query becomes a safe MATCH expression.

Latin-script text goes through FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer.
Scripts written without spaces (Chinese, Japanese, Korean, Thai...) are indexed as
overlapping character bigrams in their own column, so any substring of two or more
characters is found; the last character of each run is also kept alone so that a
one-character query finds it by prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import apsw

from memd.config import HIDDEN_TEXT
from memd.sources.markdown import readable
from memd.sources.wordforms import forms

# Han, kana, Hangul, and the South-East Asian scripts written without word spaces.
_NOSPACE = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)


# Characters of no script written without spaces (below Thai, and punctuation and symbols
# from U+2000 to U+2E7F): Latin text with its dashes and quotes is only these.
_SPACED = re.compile("[\x00-\u0dff\u2000-\u2e7f]*")


def _spaced(text: str) -> bool:
    """Whether ``text`` holds no character of a script written without spaces."""
    return text.isascii() or _SPACED.fullmatch(text) is not None


class _Scripts:
    """A pattern over the no-space scripts, compiled on the first text that may hold them:
    their wide ranges take milliseconds to compile (much of a one-shot search's start),
    and on text of ``_SPACED`` characters only the pattern ``ascii`` (the same one without
    them) answers alike, in a fraction of the time."""

    def __init__(self, pattern: str, ascii: str) -> None:
        self._source = pattern
        self._ascii = re.compile(ascii)
        self._full: re.Pattern[str] | None = None

    def _for(self, text: str) -> re.Pattern[str]:
        if _spaced(text):
            return self._ascii
        if self._full is None:
            self._full = re.compile(self._source)
        return self._full

    def search(self, text: str) -> re.Match[str] | None:
        return self._for(text).search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self._for(text).fullmatch(text)

    def findall(self, text: str) -> list[str]:
        return self._for(text).findall(text)

    def sub(self, repl: str, text: str) -> str:
        return self._for(text).sub(repl, text)


NOSPACE_RUN = _Scripts(f"[{_NOSPACE}]+", r"(?!)")  # ASCII text holds no such run
_WORD_PART = _Scripts(f"[^\\W_{_NOSPACE}]+", r"[^\W_]+")

_CLITIC = re.compile(r"(?:n['’]t|['’](?:s|re|ve|ll|d|m|t))(?=\W*$)", re.I)

# Words that carry no meaning in a question; dropped from queries that have others.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    just me more most my no nor not now of off on once only or other our ours out over own
    same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours""".split()
)

# bm25 weights for the FTS columns: heading, body, meta (tags, aliases, title), cjk.
COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 1.0)


class FtsRow(NamedTuple):
    """The text of one chunk as the FTS5 table's columns hold it."""

    heading: str
    body: str
    meta: str
    cjk: str


def fts_row(heading: str, body: str, meta: str = "", hide: Collection[str] = HIDDEN_TEXT) -> FtsRow:
    """Split chunk text into FTS columns: spaced scripts as words, the rest as bigrams.
    Obsidian links count as the text a reader sees, and as the name of the note they
    point to."""
    body = readable(body, targets=True, hide=hide)
    if _spaced(body) and _spaced(heading) and _spaced(meta):
        return FtsRow(heading, body, meta, "")  # most text: no run to look for
    runs = [
        *NOSPACE_RUN.findall(heading),
        *NOSPACE_RUN.findall(body),
        *NOSPACE_RUN.findall(meta),
    ]
    if not runs:
        return FtsRow(heading, body, meta, "")
    return FtsRow(
        NOSPACE_RUN.sub(" ", heading),
        NOSPACE_RUN.sub(" ", body),
        NOSPACE_RUN.sub(" ", meta),
        " ".join(_bigrams(run) for run in runs),
    )


def _bigrams(run: str) -> str:
    return " ".join([*(run[i : i + 2] for i in range(len(run) - 1)), run[-1]])


@dataclass(frozen=True)
class MatchQuery:
    """An FTS5 MATCH expression, and one clause per query term (for coverage) with the
    text each clause matches: a term's word forms, or a run of CJK characters."""

    expression: str
    clauses: tuple[str, ...]
    words: tuple[tuple[str, ...], ...]

    @property
    def terms(self) -> int:
        return len(self.clauses)


def match_query(query: str) -> MatchQuery | None:
    """Turn free text into an FTS5 expression matching any of its words; None if it has none.

    Every term is quoted, so punctuation and FTS5 keywords in the query are plain text.
    A word joined by punctuation (``node.js``, ``gpt-4o``) must match as a phrase.
    """
    phrases: list[str] = []
    for word in query.split():
        # "what's", "didn't": a question word's clitic is no word of its own to look for.
        # ("Caroline's" stays a phrase: it tells her things from her friends'.)
        base = _CLITIC.sub("", word)
        if base != word and base.lower() in STOPWORDS:
            word = base
        parts = [p.lower() for p in _WORD_PART.findall(word)]
        if parts:
            phrases.append(" ".join(parts))
    # A query of stopwords alone ("the") holds no evidence a keyword match could carry.
    phrases = list(dict.fromkeys(p for p in phrases if p not in STOPWORDS))
    cjk = list(dict.fromkeys(NOSPACE_RUN.findall(query)))
    # A one-word phrase matches its irregular forms too (memd.sources.wordforms).
    words = [forms(p) if " " not in p else (p,) for p in phrases]
    terms = [
        "{heading body meta} : " + (f'"{w[0]}"' if len(w) == 1 else _alternatives(w)) for w in words
    ]
    for run in cjk:
        words.append((run,))
        if len(run) == 1:
            terms.append(f'cjk : "{run}" *')
        else:
            terms.append(f'cjk : "{" ".join(run[i : i + 2] for i in range(len(run) - 1))}"')
    if not terms:
        return None
    return MatchQuery(" OR ".join(f"({t})" for t in terms), tuple(terms), tuple(words))


def _alternatives(words: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f'"{w}"' for w in words) + ")"


def _tokenizer() -> Callable[[str], list[str]]:
    """FTS5's own tokenizer, as ``chunks_fts`` is built with (schema v1), outside any index
    (it holds its in-memory connection)."""
    tokenize = apsw.Connection(":memory:").fts5_tokenizer(
        "porter", ["unicode61", "remove_diacritics", "2"]
    )
    return lambda text: [t[2] for t in tokenize(text.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None)]


def term_strings(texts: Iterable[str]) -> list[str]:
    """Each text's words as FTS5 indexes them, spaced (and led and ended by a space):
    what ``TermMatcher`` looks in. Made once per passage, when it is embedded."""
    tokens = _tokenizer()
    return [f" {' '.join(tokens(text))} " for text in texts]


class TermMatcher:
    """Which of a query's terms a passage holds, matched as FTS5 matches them (the same
    tokens; a phrase's words in a row; a CJK run within a word), weighted by idf."""

    def __init__(self, match: MatchQuery, weights: list[float]) -> None:
        tokens = _tokenizer()
        self._weights = weights
        self._total = sum(weights)
        # Per term, its alternatives as they would sit in a term string (a word that
        # tokenizes to nothing is never held).
        spelled = [
            [w if NOSPACE_RUN.fullmatch(w) else f" {' '.join(tokens(w))} " for w in alternatives]
            for alternatives in match.words
        ]
        self._terms = [[alt for alt in alts if alt.strip()] for alts in spelled]

    def share(self, terms: str, among: Iterable[int] | None = None) -> float:
        """The idf-weighted share of the query's terms that ``terms`` (a term string) holds,
        0 to 1; only the terms numbered in ``among`` are looked for, when given."""
        if self._total <= 0:
            return 0.0
        held = sum(
            self._weights[i]
            for i in (range(len(self._terms)) if among is None else among)
            if any(alt in terms for alt in self._terms[i])
        )
        return held / self._total
