"""How chunk text becomes FTS5 columns, and how a user's query becomes a safe MATCH expression.

Latin-script text goes through FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer.
Scripts written without spaces (Chinese, Japanese, Korean, Thai...) are indexed as
overlapping character bigrams in their own column, so any substring of two or more
characters is found; the last character of each run is also kept alone so that a
one-character query finds it by prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from memd.markdown import readable
from memd.wordforms import forms

# Han, kana, Hangul, and the South-East Asian scripts written without word spaces.
_NOSPACE = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_NOSPACE_RUN = re.compile(f"[{_NOSPACE}]+")
_WORD_PART = re.compile(f"[^\\W_{_NOSPACE}]+")

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


def fts_row(heading: str, body: str, meta: str = "") -> FtsRow:
    """Split chunk text into FTS columns: spaced scripts as words, the rest as bigrams.
    Obsidian links count as the text a reader sees."""
    body = readable(body)
    runs = [
        *_NOSPACE_RUN.findall(heading),
        *_NOSPACE_RUN.findall(body),
        *_NOSPACE_RUN.findall(meta),
    ]
    if not runs:
        return FtsRow(heading, body, meta, "")
    return FtsRow(
        _NOSPACE_RUN.sub(" ", heading),
        _NOSPACE_RUN.sub(" ", body),
        _NOSPACE_RUN.sub(" ", meta),
        " ".join(_bigrams(run) for run in runs),
    )


def _bigrams(run: str) -> str:
    return " ".join([*(run[i : i + 2] for i in range(len(run) - 1)), run[-1]])


@dataclass(frozen=True)
class MatchQuery:
    """An FTS5 MATCH expression, and one clause per query term (for coverage)."""

    expression: str
    clauses: tuple[str, ...]

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
        parts = [p.lower() for p in _WORD_PART.findall(word)]
        if parts:
            phrases.append(" ".join(parts))
    meaningful = [p for p in phrases if p not in STOPWORDS]
    phrases = list(dict.fromkeys(meaningful or phrases))
    cjk = list(dict.fromkeys(_NOSPACE_RUN.findall(query)))
    terms = [f"{{heading body meta}} : {_any_form(p)}" for p in phrases]
    for run in cjk:
        if len(run) == 1:
            terms.append(f'cjk : "{run}" *')
        else:
            terms.append(f'cjk : "{" ".join(run[i : i + 2] for i in range(len(run) - 1))}"')
    if not terms:
        return None
    return MatchQuery(" OR ".join(f"({t})" for t in terms), tuple(terms))


def _any_form(phrase: str) -> str:
    """A quoted phrase, or a one-word phrase's irregular forms as alternatives."""
    alternatives = forms(phrase) if " " not in phrase else (phrase,)
    if len(alternatives) == 1:
        return f'"{phrase}"'
    return "(" + " OR ".join(f'"{w}"' for w in alternatives) + ")"
