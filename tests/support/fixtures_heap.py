"""The test process's heap, kept out of the collector's full passes as the
app keeps its own (tui/heap.py).

A worker holds every library and test module it imported, and what Textual's
bounded caches keep across tests; a full pass walks all of it, ~0.1 s, and the
TUI makes one at each snapshot (`settle`) and every two seconds: a third of the
TUI tests' CPU. So what is alive when the tests are collected, and again after
each test, is frozen (`gc.freeze`), and a full pass walks only what the running
test made. While the tests are collected the collector is off: importing them
(the SDKs' thousands of models) made it start a full pass over everything
imported so far several times, ~0.4 CPU-seconds in each worker, to free
almost nothing; one pass at the end frees what there is. An app's snapshot
collects without freezing: its objects are the test's and must be freed with
it (frozen, a cycle among them would never be).
The test of the freezing itself asks for `app_freezes`."""

from __future__ import annotations

import gc
from collections.abc import Generator, Iterator

import pytest

from plane import collector
from tui import heap

_settle = heap.settle


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Generator[None, object, object]:
    """Collected with the collector off, then frozen (on pytest-xdist's
    controller, which collects nothing, this freezes its start): what the
    plane's start does for what it builds."""
    with collector.kept():
        return (yield)


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
