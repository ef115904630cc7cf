"""What a note is called, and how a typed name is compared with it.

Obsidian's quick switcher finds a note by its file name or an alias whatever the case,
accents and punctuation: ``konigsberg`` finds ``Königsberg``, ``postels law`` finds
``Postel's Law``, ``deep-learning`` finds ``Deep Learning``. ``name_key`` folds a name
that way; ``name_token`` makes the key one word of the index's ``meta`` column, so
looking a name up is one exact probe of the full-text index, however many notes carry
the name's words in their tags or text.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import PurePosixPath

# Notes with names of their own: a daily note's is its date, MEMORY.md's is no topic.
NAMED_SOURCES = ("extra", "memory")
_WORD = re.compile(r"\w+")
_APOSTROPHES = re.compile(r"['’‘ʼ`´]")
_TOKEN_PREFIX = "memdname"


def note_name(path: str) -> str:
    """A note's name as Obsidian shows it: its file name without the suffix."""
    name = PurePosixPath(path).name
    return name.removesuffix(".canvas").removesuffix(".md").removesuffix(".excalidraw")


def name_key(text: str) -> str:
    """A name or a query as the two are compared: its words, lower-case, without accents
    or apostrophes; hyphens, underscores and other punctuation separate words (a name
    with no word is kept as written, less its case and spacing)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    folded = _APOSTROPHES.sub("", folded).replace("_", " ")
    # A name of signs alone (``$?``, ``==``) is its signs: Obsidian finds it too.
    return " ".join(_WORD.findall(folded)) or " ".join(folded.split())


def name_token(key: str) -> str:
    """One index word that stands for a ``name_key``: letters then digits, which no
    tokenizer splits and no stemmer changes."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return f"{_TOKEN_PREFIX}{int.from_bytes(digest, 'big')}"


def name_tokens(path: str, source: str, aliases: tuple[str, ...]) -> list[str]:
    """The name tokens of a note: its file name's and each alias's (none for notes
    without names of their own)."""
    if source not in NAMED_SOURCES:
        return []
    keys = dict.fromkeys(k for k in (name_key(n) for n in (note_name(path), *aliases)) if k)
    return [name_token(k) for k in keys]
