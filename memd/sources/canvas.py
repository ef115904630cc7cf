"""Obsidian canvases (JSON Canvas, ``*.canvas``): each text node is a note of its own.

A canvas is JSON, one node a line as Obsidian saves it. Each text node becomes a chunk
whose text is the node's Markdown and whose lines are the node's lines in the file, so its
citation points into the canvas.
"""

from __future__ import annotations

import json
import re

from memd.sources.chunker import Chunk, count_tokens
from memd.sources.markdown import inline_tags, split_lines

CANVAS_SUFFIX = ".canvas"


def is_canvas(path: str) -> bool:
    """Whether a file is a JSON Canvas."""
    return path.endswith(CANVAS_SUFFIX)


def canvas_chunks(text: str) -> tuple[list[Chunk], tuple[str, ...], int, list[str]]:
    """``(chunks, tags, line count, warnings)`` of a canvas: one chunk per text node."""
    lines = split_lines(text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], (), len(lines), [f"not a JSON Canvas ({exc.msg}); not indexed"]
    nodes = data.get("nodes") if isinstance(data, dict) else None
    chunks: list[Chunk] = []
    tags: list[str] = []
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, dict) or node.get("type") != "text":
            continue
        body = node.get("text")
        if not isinstance(body, str) or not body.strip():
            continue
        start, end = _node_lines(lines, str(node.get("id", "")), body)
        chunks.append(Chunk(start, end, "", body, count_tokens(body)))
        tags += [t for t in inline_tags(split_lines(body), []) if t not in tags]
    chunks.sort(key=lambda c: (c.start_line, c.end_line))
    return chunks, tuple(tags), len(lines), []


def _node_lines(lines: list[str], node_id: str, body: str) -> tuple[int, int]:
    """1-based lines from the node's ``"id"`` to the end of its text (the whole file when
    the id is not found on a line of its own)."""
    key = re.compile(r'"id"\s*:\s*' + re.escape(json.dumps(node_id)))
    start = next((n for n, line in enumerate(lines) if key.search(line)), None)
    if start is None:
        return 1, max(len(lines), 1)
    tail = json.dumps(body.rstrip().rsplit("\n", 1)[-1])[1:-1][-40:]  # as the JSON spells it
    end = next((n for n in range(start, len(lines)) if tail in lines[n]), start)
    return start + 1, end + 1
