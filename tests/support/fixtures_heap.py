"""The test process's heap, kept out of the collector's full passes as the
app keeps its own (tui/heap.py).

A worker holds every library and test module it imported, and what Textual's
bounded caches keep across tests; a full pass walks all of it, ~0.1 s. So what
is alive when the tests are collected, and again after each test, is frozen
(`gc.freeze`), and a full pass walks only what the running test made. From the
moment tests/conftest.py is read until the tests are collected the collector
is off: importing the plane, the TUI and the tests (the SDKs' thousands of
models) made it start a full pass over everything imported so far several
times, to free almost nothing. What is there then is frozen without a pass:
one freed ~10,000 objects of the imports' own, for ~0.13 CPU-seconds in each
process.

In a test, an app's snapshot (`settle`) and its periodic full pass
(`FULL_PASS_S`) are left to the pass after the test: each walked everything
the test had made so far (~10 ms at each snapshot, ~20 ms every two
seconds), which the pass after the test walks again, and what they would
have freed it frees. Frozen, an app's objects would never be freed: a cycle
among them would be kept. The tests of the app's own passes ask for
`app_freezes`, or a `FULL_PASS_S` of their own."""

from __future__ import annotations

import gc
from collections.abc import Generator, Iterator

import pytest

from tui import heap

_settle = heap.settle
LEFT_TO_THE_END_S = 3600.0
"""An app's periodic full pass in a test: longer than any test runs."""


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Generator[None, object, object]:
    """Collected with the collector off (since tests/conftest.py was read),
    then frozen (on pytest-xdist's controller, which collects nothing, this
    freezes its start)."""
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


def _left_to_the_end() -> None:
    """An app's snapshot in a test: its pass is the one after the test."""


@pytest.fixture(autouse=True)
def frozen_after_each_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(heap, "settle", _left_to_the_end)
    monkeypatch.setattr(heap, "FULL_PASS_S", LEFT_TO_THE_END_S)
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
