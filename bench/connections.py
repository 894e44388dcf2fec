"""Why aiohttp's pool (the plane's connector, plane.providers.connections)
opened each new TCP connection, over a run of bench/metering.py: every idle
connection busy, idle ones stale (past `KEEPALIVE_S`, or closed by the
server), or one dropped after its response because it could not carry
another call (its body not received to the end).

    .venv/bin/python bench/connections.py [--agents 1000] [metering.py's options]

The counts cover the whole run, warm-up included (where each agent's first
call opens its connection), for every aiohttp side of the metering run (the
plane's and bare aiohttp's), so about 2 x `--agents` "all busy" is the floor.
They read the connector's own bookkeeping (its idle queues, its release), as
a diagnostic may; the plane does not.
"""

from __future__ import annotations

import collections
import runpy
import sys
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WHY: collections.Counter[str] = collections.Counter()
_get, _release = aiohttp.BaseConnector._get, aiohttp.BaseConnector._release


async def _counted_get(self: aiohttp.BaseConnector, key: Any, traces: Any) -> Any:
    """With no cap on connections, `_get` finding none to reuse means one is opened."""
    idle = len(self._conns.get(key) or ())
    connection = await _get(self, key, traces)
    if connection is None:
        WHY["opened: every idle connection busy" if idle == 0 else "opened: idle ones stale"] += 1
    return connection


def _counted_release(
    self: aiohttp.BaseConnector, key: Any, protocol: ResponseHandler, *, should_close: bool = False
) -> None:
    if should_close or protocol.should_close:
        WHY["dropped: not reusable after its response"] += 1
    _release(self, key, protocol, should_close=should_close)


def main() -> None:
    aiohttp.BaseConnector._get = _counted_get  # type: ignore[method-assign]
    aiohttp.BaseConnector._release = _counted_release  # type: ignore[method-assign]
    args = sys.argv[1:] or ["--agents", "1000"]
    sys.argv = ["metering.py", *args]
    runpy.run_path(str(Path(__file__).with_name("metering.py")), run_name="__main__")
    print("aiohttp's pool, the whole run (warm-up included):")
    for why in (
        "opened: every idle connection busy",
        "opened: idle ones stale",
        "dropped: not reusable after its response",
    ):
        print(f"  {why:42} {WHY[why]:6,}")


if __name__ == "__main__":
    main()
