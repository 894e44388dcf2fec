"""The TUI freezes the heap at each snapshot (tui/heap.py): thawed after each
test, or what every test that ran an app left behind would never be
collected for the rest of the run."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def thawed_heap() -> Iterator[None]:
    yield
    gc.unfreeze()
