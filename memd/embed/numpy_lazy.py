"""numpy, imported on first use: ``import memd.embed.numpy_lazy as np``, then ``np.zeros`` as usual.

numpy takes ~50 ms to import, a quarter of a one-shot ``memd search`` or ``memd get``
that works on the index itself; keyword search and reading a file never touch a vector.
The first attribute looked up imports numpy; every name is then a plain attribute here.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    value = getattr(importlib.import_module("numpy"), name)
    globals()[name] = value
    return value
