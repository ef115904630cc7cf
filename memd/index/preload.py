"""What the fork server of parse workers loads once (``memd.index.prepare.prepare_all``):
the parsing code and the cl100k encoder, so each worker it forks starts with them rather
than spending 0.2 s of CPU loading them itself. Imported only there."""

import atexit
import contextlib
import os

from memd.index import prepare  # noqa: F401 (what every worker runs)
from memd.sources.chunker import count_tokens

# Without its encoder a worker says why at its first note, as a process of its own would.
with contextlib.suppress(Exception):
    count_tokens("loads the encoder and its expressions")

# The fork server ends when the process that started it lets go of it, and that process
# waits for it (``workers.stop_fork_server``): it ends at once rather than tear down what
# it loaded first (0.04 s of every ``memd index``). The workers it forked have ended, or end
# with their owner.
atexit.register(os._exit, 0)
