"""A client of the running plane, for one command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from plane.errors import NotRunning, PlaneError
from plane.home import Home, PlaneState
from plane.wire.client import PlaneClient


def with_client(work: Callable[[PlaneClient], Awaitable[int]]) -> int:
    async def run() -> int:
        client = await connect(Home.from_env())
        try:
            return await work(client)
        finally:
            await client.close()

    return asyncio.run(run())


async def connect(home: Home) -> PlaneClient:
    """A client of the plane in `home`; when none answers, what its lock
    says: no plane, or one starting or stopping (its socket closed)."""
    try:
        return await PlaneClient.connect(home.socket)
    except NotRunning:
        state = home.state()
        if state == "none":
            raise
        raise NotAnswering(home, state) from None


class NotAnswering(PlaneError):
    def __init__(self, home: Home, state: PlaneState) -> None:
        said = {
            "starting": "is starting; try again in a moment",
            "stopping": "is stopping",
            "running": f"holds its lock but does not answer on {home.socket}",
        }
        super().__init__(f"The plane in {home.root} {said.get(state, state)}.")
        self.state = state
