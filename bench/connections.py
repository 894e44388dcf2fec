"""Why the plane's pool opened each new TCP connection, over a run of
bench/metering.py: every idle connection busy, idle ones stale (past
`KEEPALIVE_S`, or closed by the server), or one dropped after its response
because it was not left idle (its body not read to the end).

    .venv/bin/python bench/connections.py [--agents 1000] [metering.py's options]

The counts cover the whole run, warm-up included (where each agent's first
call opens its connection): both pool sides of the metering run, so about
2 x `--agents` "all busy" is the floor.
"""

from __future__ import annotations

import collections
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpcore

from plane.providers import connections as c

WHY: collections.Counter[str] = collections.Counter()
_take, _give_back = c.Pool._take, c.Pool.give_back


async def _counted_take(
    self: c.Pool, origin: httpcore.Origin
) -> tuple[httpcore.AsyncHTTPConnection, bool]:
    stack = self._idle.get(c._key(origin))
    idle = len(stack) if stack else 0
    connection, reused = await _take(self, origin)
    if not reused:
        WHY["opened: every idle connection busy" if idle == 0 else "opened: idle ones stale"] += 1
    return connection, reused


def _counted_give_back(
    self: c.Pool, connection: httpcore.AsyncHTTPConnection, origin: httpcore.Origin
) -> None:
    if not connection.is_idle():
        WHY["dropped: not idle after its response"] += 1
    _give_back(self, connection, origin)


def main() -> None:
    c.Pool._take = _counted_take  # type: ignore[method-assign]
    c.Pool.give_back = _counted_give_back  # type: ignore[method-assign]
    args = sys.argv[1:] or ["--agents", "1000"]
    sys.argv = ["metering.py", *args]
    runpy.run_path(str(Path(__file__).with_name("metering.py")), run_name="__main__")
    print("the plane's pool, the whole run (warm-up included):")
    for why in (
        "opened: every idle connection busy",
        "opened: idle ones stale",
        "dropped: not idle after its response",
    ):
        print(f"  {why:40} {WHY[why]:6,}")


if __name__ == "__main__":
    main()
