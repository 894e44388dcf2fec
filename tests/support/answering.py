"""Whether a plane answers on a home's socket, asked from the test's own
process: a `plane status` process per poll would cost a Python start
(0.3-0.4 CPU-seconds of imports) each time, on cores the other tests share."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from plane.wire.client import PlaneClient, PlaneError


def answers(home: Path) -> bool:
    """A hello on `home`'s socket is answered (what `plane status` needs)."""

    async def hello() -> None:
        client = await PlaneClient.connect(home / "plane.sock")
        await client.close()

    try:
        asyncio.run(hello())
    except (PlaneError, OSError):
        return False
    return True


def until_it_answers(home: Path, process: subprocess.Popen, within: float = 30) -> None:
    """Wait for the `plane serve` in `process` to answer on `home`'s socket."""
    deadline = time.monotonic() + within
    while not answers(home):
        assert process.poll() is None, process.stderr.read() if process.stderr else "it exited"
        assert time.monotonic() < deadline, "the plane did not start"
        time.sleep(0.05)
