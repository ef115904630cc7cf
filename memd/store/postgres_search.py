"""The keyword side of ``PostgresStore``: full-text retrieval ranked coverage first, and
the term statistics (counts, holders) the ranking stages weigh."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from memd.store.fts import MatchQuery
from memd.store.postgres_text import HIT, WHOSE, Term, match_sql, matching, term_test
from memd.store.rows import Hit

# A term more chunks hold than this is not counted further, and a query whose every term is
# that common is ranked among its first so many holders found.
COMMON_HOLDERS = 20_000


class TextRows:
    """Keyword search and term statistics of ``PostgresStore``."""

    _scope: tuple[str | None, str | None]  # (host, workspace) read; (None, None): all
    _q: Callable[..., list[tuple]]  # PostgresStore's: run one statement, its rows
    _counted: tuple[int, float] | None  # (chunks, when counted)
    _held: dict[tuple, tuple[int, float]]  # a term's test -> (holders, up to a cap; when)
    _held_for: float  # seconds a count in _held is good for (0: until the next write)

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
        every = join == " AND "
        # Terms that very many chunks hold: rank among the first so many holders, not all.
        common = all(self._estimate(t) > COMMON_HOLDERS for t in terms)
        rows = self._q(
            f"SELECT {HIT}, {score} AS score, {WHOSE} FROM memd_hits(%s, %s, ARRAY("
            f"SELECT memd_matching(%s, %s, {match_sql(terms, every)}, %s, %s, %s, %s, %s, %s)"
            ")) c ORDER BY score DESC, c.id LIMIT %s",
            (
                *[a for t in terms for a in (*t.args, *t.rank_args)],
                *self._scope,
                *self._scope,
                *matching(terms, every),
                since,
                until,
                None if file_ids is None else list(file_ids),
                COMMON_HOLDERS if common else None,
                limit,
            ),
        )
        return [Hit(*r[:8], float(r[8]), *r[9:]) for r in rows]

    def term_counts(self, match: MatchQuery) -> tuple[int, list[int]]:
        """Chunks in all, and holding each term: counted up to a little more than
        ``COMMON_HOLDERS`` (counting 125,000 holders of one word of a million chunks takes
        most of a second; an idf that precise changes nothing)."""
        total = self._total()
        return total, [min(self._estimate(term_test(words)), total) for words in match.words]

    def _count_holders(self, term: Term, cap: int | None) -> int:
        """Chunks this view reads that hold ``term``, counted up to ``cap`` (None: all)."""
        (n,) = self._q(
            f"SELECT count(*) FROM memd_matching(%s, %s, {match_sql([term], True)}, %s, %s, "
            "NULL, NULL, NULL, %s)",
            (*self._scope, *matching([term], True), cap),
        )[0]
        return n

    def term_holders(self, match: MatchQuery, chunk_ids: Sequence[int]) -> list[set[int]]:
        terms = [term_test(words) for words in match.words]
        if not chunk_ids:
            return [set() for _ in terms]
        rows = self._q(
            f"SELECT c.id, {', '.join(f'({t.test})' for t in terms)} FROM memd_hits(%s, %s, %s) c",
            (*[a for t in terms for a in t.args], *self._scope, list(chunk_ids)),
        )
        return [{r[0] for r in rows if r[n + 1]} for n in range(len(terms))]

    def _total(self) -> int:
        """Chunks this view reads, counted at most once a minute (a million take 0.1 s)."""
        now = time.monotonic()
        if self._counted is None or now - self._counted[1] > 60:
            (chunks,) = self._q("SELECT chunks FROM memd_counts(%s, %s)", self._scope)[0]
            self._counted = (chunks, now)
        return self._counted[0]

    def _estimate(self, term: Term) -> int:
        """How many chunks this view reads hold ``term``, counted up to a little more than
        ``COMMON_HOLDERS``; kept ``_held_for`` seconds in a team view, until the next write
        in a scope. Never the planner's estimate: that is made from every host's rows, and
        so told others' text to whoever could ask it."""
        key, now = (term.test, tuple(term.args)), time.monotonic()
        held = self._held.get(key)
        if held is None or (self._held_for and now - held[1] >= self._held_for):
            if len(self._held) > 4096:
                self._held.clear()
            held = self._held[key] = (self._count_holders(term, COMMON_HOLDERS + 1), now)
        return held[0]
