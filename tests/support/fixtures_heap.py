"""The test process's heap, kept out of the collector's full passes as the
app keeps its own (tui/heap.py).

A worker holds every library and test module it imported, and what Textual's
bounded caches keep across tests; a full pass walks all of it, ~0.1 s, and the
TUI makes one at each snapshot (`settle`) and every two seconds: a third of the
TUI tests' CPU. So what is alive when the tests are collected, and again after
each test, is frozen (`gc.freeze`), and a full pass walks only what the running
test made. An app's snapshot collects without freezing: its objects are the
test's and must be freed with it (frozen, a cycle among them would never be).
The test of the freezing itself asks for `app_freezes`."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tui import heap

_settle = heap.settle


@pytest.fixture(scope="session", autouse=True)
def frozen_once_collected() -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def frozen_after_each_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(heap, "settle", gc.collect)
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture
def app_freezes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app's own `settle`; afterwards the heap is thawed and the baseline frozen again."""
    monkeypatch.setattr(heap, "settle", _settle)
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.collect()
    gc.freeze()
