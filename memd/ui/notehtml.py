"""A note's Markdown as HTML a browser may show: nothing in a note runs.

markdown-it renders with raw HTML off (a ``<script>`` or ``onerror=`` in a note is shown
as text), links only to the web, mail and other notes (never ``javascript:`` or
``data:``), and images as links (a page that works offline fetches nothing). Each
top-level block carries its first line's number, so the page shows where each line is and
a citation's lines can be marked.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_SCHEMES = {"http", "https", "mailto", ""}


def _safe_link(url: str) -> bool:
    """Only the web, mail and links within the page or to other notes."""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    # A browser drops tabs and newlines inside a scheme ("java\tscript:"); so does this.
    plain = "".join(url.split()).lower()
    return scheme in _SCHEMES and not plain.startswith(("javascript:", "vbscript:", "data:"))


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    md.validateLink = _safe_link  # type: ignore[method-assign]

    def image(renderer: object, tokens: list[Token], idx: int, options: object, env: object) -> str:
        token = tokens[idx]
        src = str(token.attrGet("src") or "")
        alt = html.escape(token.content or src)
        return f'<a class="image" href="{html.escape(src)}" rel="noreferrer">[image: {alt}]</a>'

    def link_open(
        renderer: object, tokens: list[Token], idx: int, options: object, env: dict
    ) -> str:
        token = tokens[idx]
        token.attrSet("rel", "noreferrer noopener")
        href = str(token.attrGet("href") or "")
        if env.get("path") and not urlsplit(href).scheme and not href.startswith(("#", "/")):
            token.attrSet("href", _note_link(env["path"], href))
        return md.renderer.renderToken(tokens, idx, options, env)  # type: ignore[arg-type]

    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    return md


def _note_link(note: str, href: str) -> str:
    """A link between notes (``../MEMORY.md``, ``other.md#part``) as the page of that note;
    where it leads is checked when it is opened, as every path is."""
    target = unquote(href.split("#", 1)[0])
    parts = [*PurePosixPath(note).parent.parts, *PurePosixPath(target).parts]
    kept: list[str] = []
    for part in parts:
        if part == "..":
            if kept:
                kept.pop()
        elif part not in (".", ""):
            kept.append(part)
    return note_url("/".join(kept)) if kept else href


def note_html(
    text: str, cited: tuple[int, int] | None = None, path: str = "", first_line: int = 1
) -> str:
    """``text`` (a whole note, its first line line 1) as safe HTML; the blocks within
    ``cited`` (first and last line) marked, the first of them with the id ``cited``; links
    to other notes relative to ``path`` (the note's) lead to their pages; ``first_line``:
    the line of the note ``text`` starts at."""
    md = _parser()
    tokens = md.parse(text)
    marked = False
    for token in tokens:
        if token.map is None or token.nesting == -1 or token.level > 1:
            continue
        if token.level == 1 and token.type != "list_item_open":
            continue
        first = token.map[0] + first_line
        last = max(token.map[1], token.map[0] + 1) + first_line - 1
        token.attrSet("data-line", str(first))
        if token.level == 0:
            token.attrSet("id", f"L{first}")
        # A list is marked item by item: a citation names lines, not the whole list.
        whole = token.type not in ("bullet_list_open", "ordered_list_open")
        if cited is not None and whole and first <= cited[1] and last >= cited[0]:
            token.attrJoin("class", "cited")
            if not marked:
                token.attrSet("id", "cited")
                marked = True
    return md.renderer.render(tokens, md.options, {"path": path})


def note_url(citation_or_path: str) -> str:
    """The page of a note, at a citation's lines when given one (``path#L3-L5``)."""
    path, _, lines = citation_or_path.partition("#L")
    url = f"/note?path={quote(path, safe='/')}"
    if lines:
        start, _, end = lines.partition("-L")
        if start.isdigit():
            end = end if end.isdigit() else start
            url += f"&from={start}&to={end}#cited"
    return url
