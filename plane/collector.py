"""The cyclic collector paused while the plane builds what it keeps.

The start builds what lives as long as the plane: agents.yaml's values, a
worker, its task and its row for each agent. Each of the collector's passes
walks everything built so far and finds nothing to free, and the passes come
more often the more is built: at 30,000 agents they were a fifth of the
start's CPU. Reference counting still frees what is dropped meanwhile; the
collector finds any cycle once it runs again.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; as it was after (off stays off)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
