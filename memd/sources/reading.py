"""A stretch of a file's lines as ``memory_get`` returns them, capped in lines and bytes."""

from __future__ import annotations

from memd.errors import NotFound
from memd.records import Lines
from memd.sources.markdown import split_lines

GET_MAX_LINES = 1000
GET_MAX_BYTES = 64 * 1024


def read_lines(full: str, path: str, start: int, lines: int, workspace: str = "") -> Lines:
    """Lines ``start``.. of the file at ``full`` (shown as ``path``), at most
    ``GET_MAX_LINES`` lines and ``GET_MAX_BYTES`` of text."""
    try:
        with open(full, "rb") as f:
            data = f.read()
    except FileNotFoundError as exc:
        raise NotFound(f"no file {path} in workspace '{workspace}'") from exc
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return lines_of(split_lines(text), path, start, lines)


def lines_of(all_lines: list[str], path: str, start: int, lines: int) -> Lines:
    """Lines ``start``.. of a file's lines, under the same caps as ``read_lines``."""
    count = min(lines, GET_MAX_LINES)
    out: list[str] = []
    size = 0
    truncated = False
    for line in all_lines[start - 1 : start - 1 + count]:
        encoded = len(line.encode("utf-8")) + 1
        if size + encoded > GET_MAX_BYTES:
            truncated = True
            if not out:  # one line larger than the cap: give its start
                out.append(line.encode("utf-8")[:GET_MAX_BYTES].decode("utf-8", "ignore"))
            break
        out.append(line)
        size += encoded
    end = start - 1 + len(out)
    truncated = truncated or (lines > GET_MAX_LINES and end < len(all_lines))
    return Lines(
        path=path,
        start=start,
        lines=len(out),
        text="\n".join(out) + ("\n" if out else ""),
        total_lines=len(all_lines),
        truncated=truncated,
        next_from=end + 1 if end < len(all_lines) else None,
    )
