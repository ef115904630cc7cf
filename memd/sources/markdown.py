"""Markdown structure with exact line numbers: front matter, heading sections and blocks.

markdown-it-py finds the top-level blocks (so a ``#`` inside a code fence is not a
heading); every line of the file after the front matter belongs to exactly one block,
including lines markdown-it emits no token for (blank lines, link definitions). Most
notes never reach markdown-it: ``memd.sources.blockscan`` finds the same blocks faster
when the text holds only the structures it follows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cache
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple

from memd.config import HIDDEN_TEXT
from memd.log import get_logger
from memd.sources.blockscan import Found, scan
from memd.sources.fences import fenced_lines
from memd.sources.frontmatter import FrontMatter, front_matter

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

log = get_logger()


class Block(NamedTuple):
    """Lines ``[start, end)`` (0-based) of one top-level block and the blank lines after it
    (a tuple: a parse makes one per block, and a frozen dataclass took twice as long)."""

    start: int
    end: int
    heading_level: int = 0  # 1-6 for a heading, else 0
    title: str = ""
    parts: tuple[tuple[int, int], ...] = ()  # list items: where a long list may be cut


@dataclass(frozen=True)
class Document:
    """A parsed Markdown file: its lines (without line endings) and top-level blocks."""

    lines: list[str]
    blocks: list[Block]
    body_start: int = 0  # first line after the front matter (0-based)
    tags: tuple[str, ...] = ()  # front matter tags, then inline #tags
    aliases: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    date: str | None = None  # front matter's ``date:`` or ``created:`` (YYYY-MM-DD)
    # The lines as a reader of the rendered note sees them: comments, Dataview queries and
    # a drawing's data blank (None: the same as ``lines``). Chunks are cut on these.
    visible: list[str] | None = None

    @property
    def shown(self) -> list[str]:
        """``visible``, or ``lines`` when nothing is hidden."""
        return self.lines if self.visible is None else self.visible


# A block rule that cannot match a text is skipped: markdown-it tries every rule on every
# line, so this is most of the parse time for plain notes. Each test is a necessary
# condition for its rule to fire; when it fails the rule is off and the tokens are the same.
_RULE_NEEDS: dict[str, Callable[[str], bool]] = {
    "table": lambda t: "|" in t,
    "blockquote": lambda t: ">" in t,
    "fence": lambda t: "```" in t or "~~~" in t,
    "reference": lambda t: "]:" in t,
    "html_block": lambda t: "<" in t,
    "code": re.compile(r"^(?: {4}|\t)", re.MULTILINE).search,
    "lheading": re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE).search,
    "hr": re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE).search,
}


def _parser_for(text: str) -> MarkdownIt:
    return _parser(frozenset(rule for rule, needs in _RULE_NEEDS.items() if not needs(text)))


@cache
def _parser(off: frozenset[str]) -> MarkdownIt:
    # Imported here: a search that re-parses nothing should not load markdown-it.
    from markdown_it import MarkdownIt

    # Only block structure is needed: inline parsing is most of markdown-it's time.
    md = MarkdownIt("commonmark", {"maxNesting": 200}).enable("table")
    md.disable(["inline", "text_join", *off], ignoreInvalid=True)
    return md


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on ``\\n`` only, ``\\r`` endings dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse(text: str, drawing: bool = False, hide: Collection[str] = HIDDEN_TEXT) -> Document:
    """Parse Markdown text into lines, front matter fields and top-level blocks;
    ``drawing`` for an Excalidraw file (``*.excalidraw.md``): only its text elements.
    ``hide``: which of comments, queries and drawings' data are no text."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = split_lines(text)
    warnings: list[str] = []
    fm = front_matter(lines, warnings)
    return _parse_body(lines, fm, warnings, hide, drawing)


def parse_lines(lines: list[str], hide: Collection[str] = HIDDEN_TEXT) -> Document:
    """Parse lines that continue a document from a line where a top-level block starts
    (no front matter): its blocks are those a parse of the whole file has there."""
    return _parse_body(lines, FrontMatter(), [], hide)


def is_drawing(path: str) -> bool:
    """Whether a file is an Obsidian Excalidraw drawing (its prose is its text elements)."""
    return path.endswith(".excalidraw.md")


def _parse_body(
    lines: list[str],
    fm: FrontMatter,
    warnings: list[str],
    hide: Collection[str],
    drawing: bool = False,
) -> Document:
    body_start = fm.end
    body = lines[body_start:]
    text = "\n".join(body)  # whole-text checks skip line loops that would find nothing
    comments = "comments" in hide and "%%" in text
    shown = _unhidden(lines, body_start, drawing and "drawings" in hide, comments)
    if shown is not None:
        body = shown[body_start:]
        text = "\n".join(body)
    found = scan(body, text)
    if found is None:
        blocks, code = _tokenized_blocks(body, body_start)
        blocks = _cover(blocks, body_start, len(lines))
    else:
        blocks = _cover_found(found[0], body_start, len(lines))
        code = found[1]
    queries = [(a, b) for a, b in code if "queries" in hide and _QUERY_FENCE.match(body[a])]
    if queries:  # a Dataview query is no prose: Obsidian shows its results instead
        shown = list(lines) if shown is None else shown
        for a, b in queries:
            shown[body_start + a : body_start + b] = [""] * (b - a)
        body = shown[body_start:]
        text = "\n".join(body)
    inline = inline_tags(body, code, text)
    return Document(
        lines=lines,
        blocks=blocks,
        body_start=body_start,
        tags=tuple(dict.fromkeys([*fm.tags, *inline])),
        aliases=fm.aliases,
        warnings=warnings,
        date=fm.date,
        visible=shown,
    )


_QUERY_FENCE = re.compile(r" {0,3}(?:`{3,}|~{3,}) *(?:dataview|dataviewjs|query)\b", re.I)
_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.DOTALL)
_FENCE_LINE = re.compile(r" {0,3}(?:`{3,}|~{3,})")
_DRAWING_TEXT = re.compile(r"#{1,6} Text Elements\s*")
_DRAWING_END = re.compile(r"%%\s*|#{1,6} (?:Drawing|Embedded [Ff]iles|Element Links)\b.*")


def _unhidden(lines: list[str], start: int, drawing: bool, comments: bool) -> list[str] | None:
    """The lines from ``start`` with Obsidian comments (``%% ... %%``, inline or over
    lines, outside code fences) blanked (``comments``: they hold a ``%%``), and for a
    drawing all but its text elements; None when nothing is hidden."""
    if drawing:
        out = [""] * len(lines)
        inside = False
        for n in range(start, len(lines)):
            if _DRAWING_TEXT.fullmatch(lines[n]):
                inside = True
            elif inside and _DRAWING_END.fullmatch(lines[n]):
                break
            if inside:
                out[n] = lines[n]
        if not any(line.strip() and not _DRAWING_TEXT.fullmatch(line) for line in out):
            return [""] * len(lines)  # no text elements: a heading alone is no text
        return out
    if not comments:
        return None
    out = list(lines)
    comment = fence = False
    for n in range(start, len(lines)):
        line = lines[n]
        if not comment and _FENCE_LINE.match(line):
            fence = not fence
        if fence or ("%%" not in line and not comment):
            continue
        text = ("%%" if comment else "") + line  # a comment still open from a line above
        shown = _COMMENT.sub(" ", text)
        comment = text.count("%%") % 2 == 1
        out[n] = shown if shown.strip() else ""
    return out


def _cover_found(found: list[Found], first: int, total: int) -> list[Block]:
    """``_cover`` of the scanner's blocks (body-relative, from line ``first`` of the file)."""
    if not found:
        return [Block(first, total)] if total > first else []
    starts, ends, levels, titles, parts = zip(*found, strict=True)
    nexts = [*starts[1:], total - first]
    if first:
        starts = [start + first for start in starts]
        parts = [tuple((a + first, b + first) for a, b in p) if p else p for p in parts]
    ends = [max(nxt, end) + first for nxt, end in zip(nexts, ends, strict=True)]
    # Made in C (``tuple.__new__``), not by a Python call per block.
    rows = zip([first, *starts[1:]], ends, levels, titles, parts, strict=True)
    return list(map(tuple.__new__, repeat(Block), rows))


def _tokenized_blocks(
    body: list[str], body_start: int
) -> tuple[list[Block], list[tuple[int, int]]]:
    """The top-level blocks markdown-it finds (lines of the whole file), and its code
    blocks' lines (relative to ``body``)."""
    # A lone '\r' would be a line break to markdown-it but not to an editor.
    text = "\n".join(line.replace("\r", " ") for line in body)
    tokens = _parser_for(text).parse(text)
    blocks: list[Block] = []
    code: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            i += 1
            continue
        start, end = tok.map[0] + body_start, tok.map[1] + body_start
        if tok.type == "heading_open":
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            blocks.append(Block(start, end, int(tok.tag[1]), title))
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            items = tuple(
                (t.map[0] + body_start, t.map[1] + body_start)
                for t in _children(tokens, i)
                if t.type == "list_item_open" and t.level == 1 and t.map
            )
            blocks.append(Block(start, end, parts=items))
        else:
            if tok.type in ("fence", "code_block", "html_block"):
                code.append((start - body_start, end - body_start))
            blocks.append(Block(start, end))
        i = _skip(tokens, i)
    return blocks, code


def code_lines(text: str) -> set[int]:
    """0-based numbers of the lines inside fenced or indented code, at any depth (a fence
    inside a list item too)."""
    body = "\n".join(line.replace("\r", " ") for line in split_lines(text))
    lines: set[int] = set()
    for tok in _parser_for(body).parse(body):
        if tok.type in ("fence", "code_block") and tok.map:
            lines.update(range(tok.map[0], tok.map[1]))
    return lines


# Obsidian's inline tag: '#' after a space or line start, then letters, digits, '_', '-',
# '/', not all digits ('#123' is not a tag, '# Heading' is a heading).
_INLINE_TAG = re.compile(r"(?<![^\s(\[])#([\w/-]*[^\W\d][\w/-]*)")
_INLINE_CODE = re.compile(r"`[^`]*`")
# What a tag needs right after its '#' (or a code span, which may be cut out before one):
# a text with none of these has no tag, however its links and code fall.
_TAG_START = re.compile(r"#[\w/`-]")
# Where a '#' is part of a link, not a tag: a wikilink (``[[#Heading]]``, ``[[Note#Part]]``),
# a Markdown link's destination (``[text](#anchor)``, with balanced parentheses inside:
# ``(https://w.org/Wall_(castle)#/Gates)``) and a URL (``<https://a.b/#top>``).
_LINK_PARTS = re.compile(
    r"\[\[[^\]]*\]\]|\]\((?:[^()]|\([^()]*\))*\)|<?\b[A-Za-z][\w+.-]*://[^\s>]*>?"
)
_WIKILINK = re.compile(r"!?\[\[([^\]|#^]*)(?:[#^]([^\]|]*))?(?:\|([^\]]*))?\]\]")
_CALLOUT = re.compile(r"^([ \t]*>[ \t]*)\[!([\w-]+)\][+-]?", re.MULTILINE)


def inline_tags(
    lines: list[str], code: list[tuple[int, int]], text: str | None = None
) -> list[str]:
    """``#tags`` written in the text, outside code (``code``'s blocks, and fenced code at
    any depth: in a callout or a list item, ``#ff0000`` is no tag either); ``text``: the
    lines joined, when the caller has it."""
    found: list[str] = []
    text = "\n".join(lines) if text is None else text
    if not _TAG_START.search(text):
        return found
    in_code = fenced_lines(lines, text)
    for start, end in code:
        in_code.update(range(start, end))
    for n in [n for n, line in enumerate(lines) if "#" in line]:
        if n in in_code:
            continue
        text = _INLINE_CODE.sub("", lines[n])
        if "[" in text or "://" in text:
            text = _LINK_PARTS.sub(" ", text)
        for tag in _INLINE_TAG.findall(text):
            if tag not in found:
                found.append(tag)
    return found


def readable(text: str, targets: bool = False, hide: Collection[str] = HIDDEN_TEXT) -> str:
    """Obsidian syntax as a reader sees it: ``[[Note|shown]]`` → shown (and Note, with
    ``targets``), ``[[Note#Part]]`` → Note Part, ``![[file]]`` → file, ``> [!note]`` →
    ``> note:``; block ids (`` ^id``) dropped, and comments and Dataview queries as
    ``hide`` says."""
    if not _REWRITTEN.search(text):
        return text  # most text: one scan, not one for each mark below
    if "%%" in text and "comments" in hide:
        text = _COMMENT.sub(" ", text)
    if ("```" in text or "~~~" in text) and "queries" in hide:
        text = _QUERY_BLOCK.sub("", text)
    if "^" in text:
        text = _BLOCK_ID.sub("", text)
    if "[[" in text:
        text = _WIKILINK.sub(_with_target if targets else _link_text, text)
    if "[!" in text:
        text = _CALLOUT.sub(r"\1\2:", text)
    return text


# What any rewrite in ``readable`` starts from.
_REWRITTEN = re.compile(r"%%|```|~~~|\^|\[\[|\[!")
_QUERY_BLOCK = re.compile(
    r"^ {0,3}(`{3,}|~{3,}) *(?:dataview|dataviewjs|query)\b.*?(?:^ {0,3}\1[ \t]*$|\Z)",
    re.I | re.M | re.S,
)
_BLOCK_ID = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$", re.M)


def links(text: str) -> list[tuple[str, str]]:
    """``(target note's name, the words a reader sees)`` of each wikilink in ``text``."""
    if "[[" not in text:
        return []
    return [
        (m.group(1).rsplit("/", 1)[-1].strip(), _link_text(m))
        for m in _WIKILINK.finditer(text)
        if not m.group(0).startswith("!")
    ]


def _link_text(m: re.Match[str]) -> str:
    target, part, shown = m.group(1), m.group(2), m.group(3)
    if shown:
        return shown
    return f"{target} {part}".strip() if part else target


def _with_target(m: re.Match[str]) -> str:
    """A link as its words and the name of the note it points to, so either finds it."""
    shown = _link_text(m)
    target = m.group(1).rsplit("/", 1)[-1].strip()
    return shown if not target or target in shown else f"{shown} ({target})"


def _children(tokens: list, i: int) -> list:
    return tokens[i + 1 : _skip(tokens, i)]


def _skip(tokens: list, i: int) -> int:
    """Index just past the token at ``i`` and everything nested inside it."""
    if tokens[i].nesting != 1:
        return i + 1
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j + 1
    return len(tokens)


def _cover(blocks: list[Block], first: int, total: int) -> list[Block]:
    """Stretch blocks so that together they cover lines ``[first, total)`` without gaps."""
    if not blocks:
        return [Block(first, total)] if total > first else []
    out = []
    for n, b in enumerate(blocks):
        start = first if n == 0 else b.start
        end = blocks[n + 1].start if n + 1 < len(blocks) else total
        out.append(Block(start, max(end, b.end), b.heading_level, b.title, b.parts))
    return out
