"""SQLite reads for search: FTS5 keyword matches ranked by weighted BM25, term postings,
chunks by id and by date, the files' tags, and what the last review found superseded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import apsw

from memd.errors import StoreError
from memd.store.fts import COLUMN_WEIGHTS, MatchQuery
from memd.store.rows import Hit, Supersession
from memd.store.sqlite_errors import guard


def _file_filter(
    where: list[str],
    args: list[object],
    since: str | None,
    until: str | None,
    file_ids: Sequence[int] | None,
) -> tuple[list[str], list[object]]:
    """``where``/``args`` with the date range and file restriction of a search added."""
    if since:
        where.append("f.date >= ?")
        args.append(since)
    if until:
        where.append("f.date <= ?")
        args.append(until)
    if file_ids is not None:
        where.append("f.id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(file_ids)))
    return where, args


class QueryTables:
    """The search side of ``SqliteStore``."""

    path: Path
    db: apsw.Connection

    @guard
    def term_counts(self, match: MatchQuery) -> tuple[int, list[int]]:
        """How many chunks there are, and how many hold each FTS5 clause (one query term)."""
        (total,) = self.db.execute("SELECT count(*) FROM chunks").fetchone()
        counts = [
            self.db.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (clause,)
            ).fetchone()[0]
            for clause in match.clauses
        ]
        return total, counts

    @guard
    def term_holders(self, match: MatchQuery, chunk_ids: Sequence[int]) -> list[set[int]]:
        """For each FTS5 clause, which of ``chunk_ids`` hold it."""
        if not chunk_ids:
            return [set() for _ in match.clauses]
        ids = json.dumps(list(chunk_ids))
        return [
            {
                r[0]
                # The clause's holders once, probed for each id (with the ids outside, FTS5
                # runs the match once per id: 16 ms against 1.2 for a SciFact claim).
                for r in self.db.execute(
                    "SELECT value FROM json_each(?) WHERE value IN "
                    "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)",
                    (ids, clause),
                )
            }
            for clause in match.clauses
        ]

    @guard
    def counts(self) -> dict[str, int]:
        files, chunks = self.db.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)"
        ).fetchone()
        return {"files": files, "chunks": chunks}

    @guard
    def keyword_search(
        self,
        match: MatchQuery,
        limit: int,
        since: str | None = None,
        until: str | None = None,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks matching an FTS5 expression, best first by weighted BM25."""
        weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
        where, args = _file_filter(
            ["chunks_fts MATCH ?"], [match.expression], since, until, file_ids
        )
        columns = "c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date"
        rank = f"-bm25(chunks_fts, {weights})"
        if len(where) == 1:
            # No filter: take the top rows from the FTS table alone and join only those; a
            # common word can match tens of thousands of chunks.
            sql = (
                f"SELECT {columns}, t.score FROM (SELECT rowid AS id, {rank} AS score "
                f"FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?) t "
                f"JOIN chunks c ON c.id = t.id JOIN files f ON f.id = c.file_id "
                f"ORDER BY t.score DESC, c.id"
            )
        else:
            sql = (
                f"SELECT {columns}, {rank} AS score "
                f"FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                f"JOIN files f ON f.id = c.file_id WHERE {' AND '.join(where)} "
                f"ORDER BY score DESC, c.id LIMIT ?"
            )
        args.append(limit)
        try:
            return [Hit(*row) for row in self.db.execute(sql, args)]
        except apsw.SQLError as exc:
            raise StoreError(f"keyword query failed: {exc}") from exc

    @guard
    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Hit]:
        """Live chunks among ``ids`` as hits (with no keyword score)."""
        if not ids:
            return {}
        rows = self.db.execute(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date, 0 "
            "FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )
        return {row[0]: Hit(*row) for row in rows}

    @guard
    def dated_chunks(
        self,
        since: str | None,
        until: str | None,
        limit: int,
        file_ids: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Chunks of files dated from ``since`` to ``until`` (either may be open), newest
        file first, each file's chunks in order (a question that names only a time)."""
        where, args = _file_filter(["f.date IS NOT NULL"], [], since, until, file_ids)
        rows = self.db.execute(
            "SELECT c.id, f.path, c.start_line, c.end_line, c.heading, c.text, f.source, f.date, 0 "
            f"FROM chunks c JOIN files f ON f.id = c.file_id WHERE {' AND '.join(where)} "
            "ORDER BY f.date DESC, f.path, c.start_line LIMIT ?",
            [*args, limit],
        )
        return [Hit(*row) for row in rows]

    @guard
    def has_files_under(self, folder: str) -> bool:
        """Whether any indexed file lies below ``folder`` (a result-path prefix)."""
        # '/' + 1 is '0': the range holds exactly the paths starting with folder + '/'.
        row = self.db.execute(
            "SELECT 1 FROM files WHERE path > ? AND path < ? LIMIT 1", (folder + "/", folder + "0")
        ).fetchone()
        return row is not None

    @guard
    def file_tags(self) -> list[tuple[int, str, list[str]]]:
        """``(id, path, tags)`` of every file, for filtering searches."""
        rows = self.db.execute("SELECT id, path, tags FROM files")
        return [(file_id, path, json.loads(tags)) for file_id, path, tags in rows]

    @guard
    def superseded_at(self, paths: Sequence[str] | None = None) -> list[Supersession]:
        """The superseded statements of these files (all, with None)."""
        sql = (
            "SELECT path, start_line, end_line, digest, by, likely, now, confirmed FROM superseded"
        )
        if paths is None:
            rows = self.db.execute(sql)
        else:
            rows = self.db.execute(
                sql + " WHERE path IN (SELECT value FROM json_each(?))", (json.dumps(list(paths)),)
            )
        return [Supersession(*row[:5], bool(row[5]), row[6], bool(row[7])) for row in rows]

    @guard
    def superseded_in(self, chunk_ids: Sequence[int]) -> dict[int, list[Supersession]]:
        """The superseded statements whose lines lie within each of ``chunk_ids``."""
        if not chunk_ids:
            return {}
        rows = self.db.execute(
            "SELECT c.id, s.path, s.start_line, s.end_line, s.digest, s.by, s.likely, s.now, "
            "s.confirmed "
            "FROM chunks c JOIN files f ON f.id = c.file_id JOIN superseded s "
            "ON s.path = f.path AND s.start_line >= c.start_line AND s.end_line <= c.end_line "
            "WHERE c.id IN (SELECT value FROM json_each(?)) ORDER BY c.id, s.start_line",
            (json.dumps(list(chunk_ids)),),
        )
        found: dict[int, list[Supersession]] = {}
        for chunk_id, *row, likely, now, confirmed in rows:
            found.setdefault(chunk_id, []).append(
                Supersession(*row, bool(likely), now, bool(confirmed))
            )
        return found
