"""Obsidian canvases (JSON Canvas, ``*.canvas``): each text node is a note of its own.

A canvas is JSON, one node a line as Obsidian saves it. Each text node becomes a chunk
whose text is the node's Markdown and whose lines are the node's lines in the file, so its
citation points into the canvas; the labels of the groups around it are its heading (so
they are searchable, and a result says which part of the board it is in).
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
    nodes = [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []
    groups = [n for n in nodes if n.get("type") == "group" and isinstance(n.get("label"), str)]
    for node in nodes:
        if node.get("type") != "text":
            continue
        body = node.get("text")
        if not isinstance(body, str) or not body.strip():
            continue
        start, end = _node_lines(lines, str(node.get("id", "")), body)
        chunks.append(Chunk(start, end, _groups_of(node, groups), body, count_tokens(body)))
        tags += [t for t in inline_tags(split_lines(body), []) if t not in tags]
    chunks.sort(key=lambda c: (c.start_line, c.end_line))
    return chunks, tuple(tags), len(lines), []


def _groups_of(node: dict, groups: list[dict]) -> str:
    """The heading path of a node: the labels of the groups whose box holds it, the
    largest first (a group is a canvas's section)."""
    box = _box(node)
    if box is None:
        return ""
    holding = []
    for group in groups:
        outer = _box(group)
        if outer is not None and _holds(outer, box) and group.get("label", "").strip():
            holding.append((outer[2] * outer[3], group["label"].strip()))
    return " > ".join(f"# {label}" for _, label in sorted(holding, key=lambda g: -g[0]))


def _box(node: dict) -> tuple[float, float, float, float] | None:
    values = [node.get(k) for k in ("x", "y", "width", "height")]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return tuple(float(v) for v in values)  # type: ignore[return-value]


def _holds(outer: tuple, inner: tuple) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


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
