"""Shared test fixtures. Each `tests/support/fixtures_*.py` module is a pytest
plugin that registers its own; this file loads them where tests run (not on
pytest-xdist's controller, which runs none), and sorts the tests into tiers
(`make test-fast` leaves out the last four):

- `e2e`: everything under tests/e2e (the real `plane` command in tmux, a clean clone);
- `embedded`: tests on the real embedded model (the `embedded_model` fixture,
  or a module that starts one itself and says so with `pytestmark`);
- `slow`: tests that say so;
- `postgres_twin`: the PostgreSQL run of a test that runs on both stores
  (`each_store`). Its SQLite run stays in the inner loop and its PostgreSQL
  run is `make test`'s: a twentieth of the inner loop's tests, they were
  about a fifth of its CPU, the server's counted (docs/performance.md). The
  tests only PostgreSQL can run (several planes on one store, its links
  going away) are no twins: they stay in the inner loop.

`make test` runs the suite on three workers a core (pytest-xdist, `--dist loadgroup`);
the embedded-model tests all go to one worker, so the model starts once and
two copies never fight over the cores. xdist hands out the tests in the order
they are collected, so the long ones are collected first (`pytest_collection_modifyitems`):
a test of a minute started last would keep the run waiting on it alone.
"""

import gc
from pathlib import Path

import pytest

gc.disable()  # until the tests are collected (tests/support/fixtures_heap.py)

EVERYWHERE = [
    "tests.support.fixtures_examples",  # Hypothesis's profiles, loaded as pytest is configured
    "tests.support.fixtures_postgres",  # the run's one server, named and stopped by the controller
    "tests.support.untested",  # the run's last line: what was not tested here, and how to get it
]
pytest_plugins = EVERYWHERE
FIXTURES = [
    name
    for path in sorted((Path(__file__).parent / "support").glob("fixtures_*.py"))
    if (name := f"tests.support.{path.stem}") not in EVERYWHERE
]
"""The other fixtures, loaded where tests run: not on pytest-xdist's controller,
which runs none. They import the plane, its gateway and the TUI's heap: half
the controller's start (about a CPU-second on a slow day)."""


@pytest.hookimpl(trylast=True)  # after pytest-xdist's, which makes the controller's session
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("dsession"):
        gc.freeze()  # the controller collects nothing (fixtures_heap freezes a worker's heap)
        gc.enable()
        return
    for name in FIXTURES:
        config.pluginmanager.import_plugin(name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow and e2e tiers first, those allowed the longest (their timeout) first
    among them; otherwise the order stays (a stable sort)."""
    items.sort(key=_longest_first)


def _longest_first(item: pytest.Item) -> tuple[bool, float]:
    long = any(item.get_closest_marker(tier) is not None for tier in ("slow", "e2e"))
    timeout = item.get_closest_marker("timeout")
    allowed = float(timeout.args[0]) if timeout is not None and timeout.args else 0.0
    return (not long, -allowed if long else 0.0)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Tiers, marked as each test is collected: before xdist reads its groups."""
    if "e2e" in item.path.parts:
        item.add_marker(pytest.mark.e2e)
    if "embedded_model" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.embedded)
    if item.get_closest_marker("embedded") is not None:
        item.add_marker(pytest.mark.xdist_group("embedded"))
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("each_store") == "postgresql":
        item.add_marker(pytest.mark.postgres_twin)
