"""A fast line scanner for the top-level blocks of plain Markdown notes: the same blocks
markdown-it finds, or None when the text holds anything it does not follow exactly.

It handles ATX headings, paragraphs, lists (their items' extents, not what is inside
them), fenced code and tables at the top level. Each rule below mirrors the markdown-it-py
block rule it stands for; whatever that rule would treat in a way not mirrored here
(blockquotes, HTML, thematic breaks, setext headings, link definitions, tabs, lazy
continuation lines, indented block starts, unclosed fences) makes ``scan`` return None,
and the caller parses with markdown-it. tests/test_blockscan.py checks the two agree.
"""

from __future__ import annotations

import re

# A block as ``(start, end, heading level, title, list item lines)``, body-relative.
Found = tuple[int, int, int, str, tuple[tuple[int, int], ...]]

# Constructs refused where they start a line's content at any depth, after any list
# markers ("- 1. - x"), as they would change a block: HTML blocks, blockquotes, thematic
# breaks, setext underlines (and an empty item's '-'); and nesting deep enough to meet
# markdown-it's maxNesting. Searched in "\n" + text: the literal lets re skip to lines,
# and the lookahead (every alternative's first characters) passes a line of text at once.
_MARKER = r"(?:[-*+]|[0-9]{1,9}[.)]) +"
_REFUSE = re.compile(
    rf"\n(?=[- *+0-9<>_=])(?: {{40}}| *(?:{_MARKER}){{20}}"
    rf"| *(?:{_MARKER})*(?:[<>]|([-*_])(?: *\1){{2,}} *$|(?:=+|-+) *$))",
    re.MULTILINE,
)
# A column-0 list marker: bullet, or ordered number and its delimiter, then spaces.
_ITEM = re.compile(r"([-*+]|[0-9]{1,9}([.)]))( *)")
_HEADING = re.compile(r"(#{1,6})(?: |$)")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_STARTERS = frozenset("#`~-*+0123456789")  # first characters of a heading, fence or list
_DELIMITER = re.compile(r"^:?-+:?$")
# CommonMark's whitespace for trimming table cells (markdown_it.common.utils.MD_TRIM_CHARS).
_TRIM = "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
_TRIM += "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def scan(
    body: list[str], text: str | None = None
) -> tuple[list[Found], list[tuple[int, int]]] | None:
    """The top-level blocks of ``body`` and its fenced code's line ranges, or None to leave
    it to markdown-it; ``text``: the body's lines joined, when the caller has it."""
    text = "\n".join(body) if text is None else text
    if "\t" in text or "\0" in text or "\r" in text or "]:" in text:
        return None
    if _REFUSE.search("\n" + text):
        return None
    # markdown-it drops a last line of only spaces: it has no line break after it.
    end = len(body) - 1 if body and not body[-1].strip(" ") else len(body)
    blocks: list[Found] = []
    code: list[tuple[int, int]] = []
    i = 0
    while i < end:
        line = body[i]
        if not line or line[0] == " ":
            if line.strip(" "):
                return None  # an indented block start: code, or a shifted list
            i += 1
            continue
        first, bar = line[0], "|" in line
        if first not in _STARTERS and not bar:
            j = _paragraph_end(body, i, end)  # no rule below can match: most blocks
            blocks.append((i, j, 0, "", ()))
        elif bar and _table(body, i, end):
            j = _table_end(body, i + 2, end)
            if j is None:
                return None
            blocks.append((i, j, 0, "", ()))
        elif first == "#" and (m := _HEADING.match(line)):
            level = len(m.group(1))
            # A title that ends in neither a space nor a '#' is the rest of the line.
            title = line[level:].strip() if line[-1] not in " #" else _title(line, level)
            blocks.append((i, i + 1, level, title, ()))
            j = i + 1
        elif m := _fence_open(line):
            j = _fence_close(body, i, end, m)
            if j is None:
                return None
            blocks.append((i, j, 0, "", ()))
            code.append((i, j))
        elif _marker(line, True):
            found = _list(body, i, end)
            if found is None:
                return None
            j, parts = found
            blocks.append((i, j, 0, "", parts))
        else:
            j = _paragraph_end(body, i, end)
            blocks.append((i, j, 0, "", ()))
        i = j
    return blocks, code


def _title(line: str, level: int) -> str:
    """markdown-it's heading content: trailing spaces, then a closing '#' run that
    follows a space, are dropped."""
    pos, stop = level, len(line)
    while stop > pos and line[stop - 1] == " ":
        stop -= 1
    tmp = stop
    while tmp > pos and line[tmp - 1] == "#":
        tmp -= 1
    if tmp > pos and line[tmp - 1] == " ":
        stop = tmp
    return line[pos:stop].strip()


def _fence_open(line: str) -> re.Match[str] | None:
    m = _FENCE.match(line)
    if m and m.group(1)[0] == "`" and "`" in line[m.end() :]:
        return None  # a backtick in the info string: not a fence
    return m


def _fence_close(body: list[str], i: int, end: int, m: re.Match[str]) -> int | None:
    """The line after the closing fence; None when the fence is never closed."""
    marker, length = m.group(1)[0], len(m.group(1))
    for j in range(i + 1, end):
        s = body[j].lstrip(" ")
        if len(body[j]) - len(s) >= 4 or not s.startswith(marker):
            continue
        run = len(s) - len(s.lstrip(marker))
        if run >= length and not s[run:].strip(" "):
            return j + 1
    return None


def _interrupts(body: list[str], j: int, end: int) -> bool:
    """Whether line ``j`` (indented under 4) ends a top-level paragraph: a table,
    fence, heading, or a list that may interrupt one (non-empty, ordered from 1)."""
    s = body[j].lstrip(" ")
    if s[0] not in _STARTERS and "|" not in s:
        return False  # the common case, a line of text: no rule below can match it
    if _table(body, j, end) or _HEADING.match(s) or _fence_open(s):
        return True
    m = _ITEM.match(s)
    if m is None or m.end() == len(s) or not m.group(3):
        return False  # no marker, or nothing after it
    return not m.group(2) or int(m.group(1)[:-1]) == 1


def _paragraph_end(body: list[str], i: int, end: int) -> int:
    for j in range(i + 1, end):
        line = body[j]
        if not line:
            return j
        if line[0] not in _STARTERS and line[0] != " " and "|" not in line:
            continue  # a line of text: it goes on (``_interrupts`` says the same, slower)
        s = line.lstrip(" ")
        if not s or (len(line) - len(s) < 4 and _interrupts(body, j, end)):
            return j
    return end


def _ends_table(s: str) -> bool:
    """markdown-it's table body terminators at the top level: fence, list (any marker),
    heading (blockquote, hr and HTML are refused before)."""
    return bool(_HEADING.match(s) or _fence_open(s) or _marker(s, True))


def _table_end(body: list[str], j: int, end: int) -> int | None:
    while j < end:
        line = body[j]
        if not line.strip(_TRIM):
            break  # a row of only (Unicode) whitespace ends the table too
        if line[0] == " ":
            return None
        if _ends_table(line):
            break
        j += 1
    return j


def _list(body: list[str], i: int, end: int) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """A top-level list from line ``i``: where it ends and its items' lines."""
    found = _marker(body[i])
    if found is None:
        return None
    kind = found[0]
    parts: list[tuple[int, int]] = []
    start = i
    while True:
        width, j, blank, nxt = found[1], start + 1, False, None
        while j < end:
            line = body[j]
            if not line or line[0] == " ":
                s = line.lstrip(" ")
                if not s:
                    blank = True
                elif len(line) - len(s) >= width:
                    blank = False  # the item's own (nested) content
                else:
                    return None  # under the item's content column: lazy or a shifted list
            else:
                nxt = _marker(line, True)
                # Past a blank line any column-0 line ends the item; right after its text
                # only one that ends its last paragraph, fence or table (else it is lazy).
                if blank or nxt or _HEADING.match(line) or _fence_open(line):
                    break
                return None
            j += 1
        # markdown-it ends an item at the first line that is not its content (past blanks);
        # the list goes on while the next item has the same kind of marker.
        parts.append((start, j))
        if nxt is None or nxt[0] != kind:
            return j, tuple(parts)
        if nxt[1] == len(body[j]) or nxt[2] > 4:
            return None  # what ``_marker(body[j])`` refuses
        found, start = nxt, j


def _marker(line: str, any_item: bool = False) -> tuple[str, int, int] | None:
    """A column-0 list marker's kind (its character, or an ordered list's delimiter), its
    item's content column and the spaces before it; None when the item is one this
    scanner does not follow (empty, or content indented past 4 spaces, which is code),
    unless ``any_item``."""
    if len(line) > 2 and line[0] in "-*+" and line[1] == " " and line[2] != " ":
        return line[0], 2, 1  # "- text": what the expression below finds, sooner
    m = _ITEM.match(line)
    if m is None:
        return None
    stop, gap = m.end(), len(m.group(3))
    if not gap and stop < len(line):
        return None  # "-x", "1.x": no marker
    if not any_item and (stop == len(line) or gap > 4):
        return None
    return m.group(2) or m.group(1), stop, gap


def _table(body: list[str], i: int, end: int) -> bool:
    """markdown-it's table test: line ``i`` a header row, the next a delimiter row with as
    many columns."""
    if i + 2 > end or "|" not in body[i]:
        return False
    head, delim = body[i], body[i + 1]
    d = delim.lstrip(" ")
    if len(delim) - len(d) >= 4 or len(head) - len(head.lstrip(" ")) >= 4:
        return False
    if len(d) < 2 or d[0] not in "|-:" or d[1] not in "|-: ":
        return False
    if (d[0] == "-" and d[1] == " ") or d.strip("|-: "):
        return False
    aligns = 0
    columns = d.split("|")
    for n, col in enumerate(columns):
        t = col.strip(_TRIM)
        if not t:
            if n == 0 or n == len(columns) - 1:
                continue
            return False
        if not _DELIMITER.search(t):
            return False
        aligns += 1
    text = head.lstrip(" ").strip(_TRIM)
    if "|" not in text:
        return False
    cells = _split_row(text)
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return 0 < len(cells) == aligns


def _split_row(text: str) -> list[str]:
    """markdown-it's ``escapedSplit``: split on '|' not escaped by a backslash."""
    result: list[str] = []
    current, last, escaped = "", 0, False
    for pos, ch in enumerate(text):
        if ch == "|":
            if not escaped:
                result.append(current + text[last:pos])
                current, last = "", pos + 1
            else:
                current += text[last : pos - 1]
                last = pos
        escaped = ch == "\\"
    result.append(current + text[last:])
    return result
