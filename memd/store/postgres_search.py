"""The keyword side of ``PostgresStore``: full-text retrieval ranked coverage first, and
the term statistics (counts, holders) the ranking stages weigh."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from memd.store.fts import MatchQuery
from memd.store.postgres_text import (
    HIT,
    WHOSE,
    Term,
    date_and_file_filters,
    matching,
    term_test,
)
from memd.store.rows import Hit

# A term more chunks hold than this (by the planner's estimate) is not counted exactly; a
# query whose every term is that common is ranked among its first so many holders found.
EXACT_COUNT_UP_TO = 2_000
COMMON_HOLDERS = 20_000


class TextRows:
    """Keyword search and term statistics of ``PostgresStore``."""

    _in: str  # the scope's condition on files ``f`` (TRUE in a team view)
    _args: tuple[str, ...]  # its arguments
    _q: Callable[..., list[tuple]]  # PostgresStore's: run one statement, its rows
    _counted: tuple[int, float] | None  # (chunks, when counted)
    _guesses: dict[tuple, int]  # a term's test -> the planner's row estimate
    _held: dict[tuple, tuple[int, float]]  # a term's test -> (chunks holding it, when)
    _held_for: float  # seconds a count in _held is good for

    def keyword_search(
        self,
        match: MatchQuery,
        limit: int,
        since: str | None = None,
        until: str | None = None,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        terms = [term_test(words) for words in match.words]
        # A chunk holding every term outranks one holding fewer (each held term adds 1):
        # when enough hold them all, those are the answer, found by intersecting indexes.
        # (Not worth asking when a term has fewer holders than that, by the estimate
        # term_counts already made.)
        if len(terms) > 1 and all(self._estimate(t) >= limit for t in terms):
            hits = self._ranked(terms, " AND ", limit, since, until, file_ids)
            if len(hits) >= limit:
                return hits
        return self._ranked(terms, " OR ", limit, since, until, file_ids)

    def _ranked(
        self,
        terms: list[Term],
        join: str,
        limit: int,
        since: str | None,
        until: str | None,
        file_ids: Sequence[int] | None,
    ) -> list[Hit]:
        # Each term held adds 1 and its full-text rank: coverage first, then frequency.
        score = " + ".join(f"(CASE WHEN {t.test} THEN {t.rank} ELSE 0 END)" for t in terms)
        held = join.join(t.test for t in terms)
        where, filters = date_and_file_filters(since, until, file_ids)
        # Terms that very many chunks hold: rank among the first so many holders, not all.
        common = all(self._estimate(t) > COMMON_HOLDERS for t in terms)
        cap = f" LIMIT {COMMON_HOLDERS}" if common else ""
        found, found_args = matching(terms, join)
        rows = self._q(
            f"SELECT {HIT}, {score} AS score, {WHOSE} FROM (SELECT c.* FROM memd_chunks c "
            f"JOIN memd_files f ON f.id = c.file_id WHERE {found} AND {self._in} AND ({held})"
            f"{where}{cap}) c JOIN memd_files f ON f.id = c.file_id "
            "ORDER BY score DESC, c.id LIMIT %s",
            (
                *[a for t in terms for a in (*t.args, *t.rank_args)],
                *found_args,
                *self._args,
                *[a for t in terms for a in t.args],
                *filters,
                limit,
            ),
        )
        return [Hit(*r[:8], float(r[8]), *r[9:]) for r in rows]

    def term_counts(self, match: MatchQuery) -> tuple[int, list[int]]:
        """Chunks in all, and holding each term: counted when few hold it, else the
        planner's estimate (counting 125,000 holders of one word of a million chunks takes
        most of a second; an idf that precise changes nothing)."""
        total = self._total()
        counts = []
        for words in match.words:
            term = term_test(words)
            guess = self._estimate(term)
            if guess > EXACT_COUNT_UP_TO:
                counts.append(min(guess, total))
                continue
            counts.append(self._holding(term))
        return total, counts

    def _holding(self, term: Term) -> int:
        """Chunks this view reads that hold ``term``, counted (and kept ``_held_for``)."""
        key, now = (term.test, tuple(term.args)), time.monotonic()
        held = self._held.get(key)
        if held is None or now - held[1] >= self._held_for:
            found, found_args = matching([term], " OR ")
            (n,) = self._q(
                "SELECT count(*) FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id "
                f"WHERE {found} AND {self._in} AND {term.test}",
                (*found_args, *self._args, *term.args),
            )[0]
            if len(self._held) > 4096:
                self._held.clear()
            held = self._held[key] = (n, now)
        return held[0]

    def term_holders(self, match: MatchQuery, chunk_ids: Sequence[int]) -> list[set[int]]:
        terms = [term_test(words) for words in match.words]
        if not chunk_ids:
            return [set() for _ in terms]
        rows = self._q(
            f"SELECT c.id, {', '.join(f'({t.test})' for t in terms)} FROM memd_chunks c "
            f"JOIN memd_files f ON f.id = c.file_id WHERE {self._in} AND c.id = ANY(%s)",
            (*[a for t in terms for a in t.args], *self._args, list(chunk_ids)),
        )
        return [{r[0] for r in rows if r[n + 1]} for n in range(len(terms))]

    def _total(self) -> int:
        """Chunks this view reads, counted at most once a minute (a million take 0.1 s)."""
        now = time.monotonic()
        if self._counted is None or now - self._counted[1] > 60:
            (total,) = self._q(
                "SELECT count(*) FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id "
                f"WHERE {self._in}",
                self._args,
            )[0]
            self._counted = (total, now)
        return self._counted[0]

    def _estimate(self, term: Term) -> int:
        """The planner's guess of how many chunks hold ``term`` (kept for the query)."""
        key = (term.test, tuple(term.args))
        if key not in self._guesses:
            plan = self._q(
                f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memd_chunks c WHERE {term.test}", term.args
            )[0][0]
            if len(self._guesses) > 256:
                self._guesses.clear()
            self._guesses[key] = int(plan[0]["Plan"]["Plan Rows"])
        return self._guesses[key]
