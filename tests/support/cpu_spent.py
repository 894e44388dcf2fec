"""Where a test run's CPU goes: a pytest plugin that writes, for each test's
set-up, call and tear-down and for each process's collection, the CPU seconds
spent (the process's own and that of the children it reaped: a `plane`
subprocess, an MCP server), and each phase's wall time, as one JSON line
in `$PLANE_TEST_CPU_DIR`, a file a process (each pytest-xdist worker writes
its own).

    PLANE_TEST_CPU_DIR=/tmp/cpu .venv/bin/pytest -p tests.support.cpu_spent ...

bench/suite_cpu.py runs the fast tier with it and sums the lines by file and
by fixture. CPU, not wall time: on a machine shared with other runs a test's
wall time is mostly waiting for a core, while the CPU it burns is its own.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import IO

import pytest

DIRECTORY = "PLANE_TEST_CPU_DIR"

_out: list[IO[str]] = []


def cpu_seconds() -> float:
    """User and system time of this process and of the children it has reaped."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def _write(record: dict[str, object]) -> None:
    directory = os.environ.get(DIRECTORY)
    if not directory:
        return
    if not _out:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out.append(open(Path(directory) / f"{worker}.jsonl", "a", encoding="utf-8"))
    _out[0].write(json.dumps(record) + "\n")
    _out[0].flush()


def _measured(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    before, started = cpu_seconds(), time.monotonic()
    try:
        return (yield)
    finally:
        _write(
            {
                "test": item.nodeid,
                "phase": phase,
                "cpu": cpu_seconds() - before,
                "wall": time.monotonic() - started,
                "fixtures": list(getattr(item, "fixturenames", ())),
            }
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _measured(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _measured(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _measured(item, "teardown"))


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Generator[None, object, object]:
    before = cpu_seconds()
    try:
        return (yield)
    finally:
        _write({"test": "", "phase": "collection", "cpu": cpu_seconds() - before, "fixtures": []})
