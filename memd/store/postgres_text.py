"""A search as PostgreSQL conditions: each query term as full-text search with English
stemming (spaced words) or the in-order character bigrams FTS5 matches (scripts without
spaces), and the date and file filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from memd.errors import FileRefused
from memd.store.fts import NOSPACE_RUN
from memd.store.postgres_functions import FILE_MAX_BYTES
from memd.store.rows import ChunkRow, FileMeta

# What a ``Hit`` is read from (a ``memd_hit`` row ``c``), and whose it is (after the
# score: a Hit's last two fields).
HIT = "c.id, c.path, c.start_line, c.end_line, c.heading, c.text, c.source, c.date"
WHOSE = "c.host, c.workspace"


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


def matching(terms: Sequence[Term], all_terms: bool) -> list[Any]:
    """The arguments of ``memd_matching`` after the scope that find chunks holding the
    terms (``all_terms``: each of them, else any): the full-text terms as one tsquery
    (its SQL: ``match_sql``), the bigram patterns of the rest, and ``all_terms``."""
    queries = [t for t in terms if t.query]
    likes = [t.args[0] for t in terms if not t.query]
    return [
        *[a for t in queries for a in t.args],
        likes or None,
        all_terms,
    ]


def match_sql(terms: Sequence[Term], all_terms: bool) -> str:
    """The tsquery argument of ``memd_matching`` for ``terms`` (its args: ``matching``)."""
    queries = [t.query for t in terms if t.query]
    return (" && " if all_terms else " || ").join(queries) or "NULL::tsquery"  # type: ignore[arg-type]


def like_prefix(text: str) -> str:
    """``text`` as a LIKE pattern matching itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def refuse_unsendable(meta: FileMeta, rows: Sequence[ChunkRow]) -> None:
    """Raise ``FileRefused`` for a file the team database would refuse, before it is sent:
    a NUL byte (named by its line; PostgreSQL text holds none), a name that is not valid
    UTF-8, or more text than ``FILE_MAX_BYTES`` (memd's function checks it again)."""
    stored = sum(len(v) for r in rows for v in (r.heading, r.text, *r.fts))
    if stored > FILE_MAX_BYTES:  # characters: at least as many bytes
        raise FileRefused(
            meta.path,
            f"{stored:,} characters to store, more than the {FILE_MAX_BYTES:,} bytes a file "
            "may take in the team database",
        )
    fields = [meta.path, meta.abspath, meta.realpath, meta.source, meta.date or "",
              meta.hash, *meta.tags, *meta.aliases]  # fmt: skip
    for value in fields:
        if "\x00" in value:
            raise FileRefused(meta.path, "its name or front matter holds a NUL byte")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise FileRefused(meta.path, "its name is not valid UTF-8") from None
    for row in rows:
        for n, value in enumerate((row.text, row.heading, *row.fts)):
            if "\x00" in value:
                at = row.start_line + value[: value.index("\x00")].count("\n") if n == 0 else 0
                line = f"line {at}" if at else f"the chunk at line {row.start_line}"
                raise FileRefused(meta.path, f"a NUL byte at {line}: PostgreSQL text holds none")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise FileRefused(meta.path, "text that is not valid UTF-8") from None
