"""A search as PostgreSQL conditions: each query term as full-text search with English
stemming (spaced words) or the in-order character bigrams FTS5 matches (scripts without
spaces), and the date and file filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from memd.store.fts import NOSPACE_RUN

# What a ``Hit`` is read from, and whose it is (after the score: a Hit's last two fields).
HIT = "c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date"
WHOSE = "f.host, f.workspace"


class Term(NamedTuple):
    """One query term (any of its word forms): SQL that a chunk holds it, and SQL of its
    weight when it does, each with its args."""

    test: str
    args: list[Any]
    rank: str
    rank_args: list[Any]
    query: str | None = None  # the term as a tsquery expression (its args: ``args``)


def term_test(words: tuple[str, ...]) -> Term:
    """The test of one query term (any of its word forms) on chunk ``c``."""
    if len(words) == 1 and NOSPACE_RUN.fullmatch(words[0]):
        run = words[0]  # as FTS5's cjk column: the run's bigrams in a row, or one character
        grams = " ".join(run[i : i + 2] for i in range(len(run) - 1))
        pattern = f"% {grams} %" if len(run) > 1 else f"%{run}%"
        return Term("(' ' || c.fts_cjk || ' ') LIKE %s", [pattern], "1", [])
    query = " || ".join("phraseto_tsquery('english', %s)" for _ in words)
    rank = f"1 + ts_rank('{{0.1, 0.5, 0.75, 1.0}}', c.tsv, {query})"
    return Term(f"c.tsv @@ ({query})", list(words), rank, list(words), f"({query})")


def matching(terms: Sequence[Term], join: str) -> tuple[str, list[Any]]:
    """SQL limiting chunk ``c`` to those holding the terms (``join``: " AND " or " OR ")
    found by the full-text index as readable (``memd_match``), and its args; no limit when
    a term is not full-text (a script without spaces: tested row by row)."""
    if not all(t.query for t in terms):
        return "TRUE", []
    query = (" && " if join == " AND " else " || ").join(t.query or "" for t in terms)
    return f"c.id IN (SELECT memd_match({query}))", [a for t in terms for a in t.args]


def like_prefix(text: str) -> str:
    """``text`` as a LIKE pattern matching itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def date_and_file_filters(
    since: str | None, until: str | None, file_ids: Sequence[int] | None
) -> tuple[str, list[Any]]:
    where, args = "", []
    if since:
        where, args = where + " AND f.date >= %s", [*args, since]
    if until:
        where, args = where + " AND f.date <= %s", [*args, until]
    if file_ids is not None:
        where, args = where + " AND f.id = ANY(%s)", [*args, list(file_ids)]
    return where, args
