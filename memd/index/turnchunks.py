"""Chunks of a session transcript's turns: consecutive turns under the token budget,
redacted, each citing the transcript lines it came from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

from memd.sources.chunker import count_tokens
from memd.sources.dates import spoken_date
from memd.sources.redact import redact
from memd.sources.transcripts import Turn
from memd.store.fts import fts_row
from memd.store.rows import ChunkRow


def turn_rows(
    turns: Sequence[Turn],
    session_id: str,
    began: dt.datetime,
    budget: int,
    tz: dt.tzinfo | None,
) -> list[ChunkRow]:
    """Chunks of consecutive turns under ``budget`` tokens, each citing the transcript
    lines of its turns and headed by the session and the time of its first turn."""
    pieces: list[tuple[Turn, str, int]] = []
    for turn in turns:
        for text in _fit(f"{turn.role}: {redact(turn.text)}", budget):
            pieces.append((turn, text, count_tokens(text)))
    rows: list[ChunkRow] = []
    group: list[tuple[Turn, str, int]] = []
    for piece in [*pieces, None]:
        size = sum(p[2] + 1 for p in group)
        if group and (piece is None or size + piece[2] > budget):
            rows.append(_row(group, session_id, began, tz))
            group = []
        if piece is not None:
            group.append(piece)
    return rows


def _row(
    group: list[tuple[Turn, str, int]], session_id: str, began: dt.datetime, tz: dt.tzinfo | None
) -> ChunkRow:
    first = group[0][0]
    when = first.at.astimezone(tz) if first.at else began
    heading = f"session {session_id} · {when:%Y-%m-%d %H:%M}"
    text = "\n".join(p[1] for p in group)
    # The day in words leads the searchable heading, as for daily notes.
    fts = fts_row(f"{spoken_date(when.date().isoformat())} session {session_id}", text)
    tokens = sum(p[2] for p in group) + len(group) - 1
    return ChunkRow(first.line, max(p[0].end_line for p in group), heading, text, tokens, fts)


def _fit(text: str, budget: int) -> Iterator[str]:
    """``text`` in pieces of at most ``budget`` tokens: whole lines where they fit."""
    if count_tokens(text) <= budget:
        yield text
        return
    piece: list[str] = []
    size = 0
    for line in text.split("\n"):
        cost = count_tokens(line) + 1
        while cost > budget:  # one line over budget: cut it by characters
            cut = max(1, len(line) * budget // cost)
            if piece:
                yield "\n".join(piece)
                piece, size = [], 0
            yield line[:cut]
            line = line[cut:]
            cost = count_tokens(line) + 1
        if size + cost > budget and piece:
            yield "\n".join(piece)
            piece, size = [], 0
        piece.append(line)
        size += cost
    if piece and "".join(piece).strip():
        yield "\n".join(piece)
