"""A real plane served in the test's own process, on an event loop of its own
thread, for a test that runs the `plane` command against it as a user does
(tests/support/command.py): its agents.yaml read as `plane serve` reads it,
its real socket (and `--tcp`), the system's clock.

    with served(config, home, tcp=("127.0.0.1", 0)) as plane:
        said = plane_cli(home, "status")

A `plane serve` process would cost a Python start and the daemon's imports
(about a CPU-second) on cores the other tests share. What only a process of
its own shows (its signals, its log lines, its exit) is tested on one:
tests/plane/cli/test_smoke.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from plane.config import load_config
from plane.daemon.server import Plane
from plane.home import Home

STARTS_WITHIN_S = 60.0


@contextlib.contextmanager
def served(config: Path, home: Path, *, tcp: tuple[str, int] | None = None) -> Iterator[Plane]:
    """`plane serve --config CONFIG` on `home` until the block ends or the plane
    is told to stop (`plane stop`); the block starts once it answers."""
    plane = Plane(load_config(config), Home(home).ensure(), tcp=tcp)
    started: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
    thread = threading.Thread(target=asyncio.run, args=(_serve(plane, started),), daemon=True)
    thread.start()
    loop = started.result(timeout=STARTS_WITHIN_S)
    try:
        yield plane
    finally:
        with contextlib.suppress(RuntimeError):  # its loop has ended: it was told to stop
            loop.call_soon_threadsafe(plane.stop_event.set)
        thread.join(STARTS_WITHIN_S)
        assert not thread.is_alive(), "the plane did not stop"


async def _serve(
    plane: Plane, started: concurrent.futures.Future[asyncio.AbstractEventLoop]
) -> None:
    try:
        await plane.startup()
    except BaseException as refused:
        await plane.shutdown()
        started.set_exception(refused)
        return
    started.set_result(asyncio.get_running_loop())
    try:
        await plane.stop_event.wait()
    finally:
        await plane.shutdown()
