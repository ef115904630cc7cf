"""A note's Markdown as HTML a browser may show: nothing in a note runs.

markdown-it renders with raw HTML off (a ``<script>`` or ``onerror=`` in a note is shown
as text), links only to the web, mail and other notes (never ``javascript:`` or
``data:``), and images as links (a page that works offline fetches nothing). A wikilink
(``[[Note]]``, ``[[Note#Part|shown]]``) opens the note of that name, as Obsidian resolves
it. Each top-level block carries its first line's number, so the page shows where each
line is and a citation's lines can be marked.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from memd.sources.markdown import links
from memd.sources.names import name_key, note_name

if TYPE_CHECKING:
    from collections.abc import Iterable

    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline
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
    md.inline.ruler.before("link", "wikilink", _wikilink)
    return md


def _wikilink(state: StateInline, silent: bool) -> bool:
    """``[[Note]]`` as a link to that note's page, when a note of that name is indexed;
    else its words, as plain text. Inline only: a wikilink in code stays code."""
    start = state.pos
    end = state.src.find("]]", start + 2) + 2
    raw = state.src[start:end]
    if not raw.startswith("[[") or "[" in raw[2:] or "\n" in raw:
        return False
    found = links(raw)
    if len(found) != 1:
        return False
    if not silent:
        if state.pending.endswith("!"):  # an embed (``![[file]]``): shown as its link
            state.pending = state.pending[:-1]
        target, words = found[0]
        path = _resolve(state.env["names"].get(name_key(target)) or [], state.env["path"])
        if path is not None:
            token = state.push("link_open", "a", 1)
            token.attrs = {"href": note_url(path), "class": "wikilink"}
        state.push("text", "", 0).content = words
        if path is not None:
            state.push("link_close", "a", -1)
    state.pos = end
    return True


def note_names(paths: Iterable[str]) -> dict[str, list[str]]:
    """``{name key: paths}`` of the notes a wikilink can name, those nearest the
    workspace's top first."""
    names: dict[str, list[str]] = {}
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        if path.endswith(".md"):
            names.setdefault(name_key(note_name(path)), []).append(path)
    return names


def _resolve(paths: list[str], note: str) -> str | None:
    """Of the notes that share a name, the one a wikilink in ``note`` leads to, as in
    Obsidian: one in the same folder, else the one nearest the top."""
    folder = note.rpartition("/")[0]
    same = [p for p in paths if p.rpartition("/")[0] == folder]
    return (same or paths or [None])[0]


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
    text: str,
    cited: tuple[int, int] | None = None,
    path: str = "",
    first_line: int = 1,
    names: dict[str, list[str]] | None = None,
) -> str:
    """``text`` (a whole note, its first line line 1) as safe HTML; the blocks within
    ``cited`` (first and last line) marked, the first of them with the id ``cited``; links
    to other notes relative to ``path`` (the note's) lead to their pages; ``first_line``:
    the line of the note ``text`` starts at; ``names``: the notes wikilinks lead to
    (``note_names``)."""
    md = _parser()
    env = {"path": path, "names": names or {}}
    tokens = md.parse(text, env)
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
    return md.renderer.render(tokens, md.options, env)


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
