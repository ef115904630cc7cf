"""What the fork server of parse workers loads once (``memd.index.prepare.prepare_all``):
the parsing code and the cl100k encoder, so each worker it forks starts with them rather
than spending 0.2 s of CPU loading them itself. Imported only there."""

import contextlib

from memd.index import prepare  # noqa: F401 (what every worker runs)
from memd.sources.chunker import count_tokens

# Without its encoder a worker says why at its first note, as a process of its own would.
with contextlib.suppress(Exception):
    count_tokens("loads the encoder and its expressions")
