"""An agent read again from the store (on a fleet, before each turn) while
the operator pauses it here: the row read before the pause was stored must
not take the pause back, or the turn the pause should stop starts."""

from __future__ import annotations

import asyncio

from tests.support.held_reads import HeldRead


async def test_a_pause_made_while_the_agent_is_read_again_is_what_the_read_returns(
    start_plane, monkeypatch
) -> None:
    plane = await start_plane()
    roster = plane.services.roster
    await roster.change("demo", paused=False)  # its settings' row, as a fleet's agent has
    read = HeldRead(plane.db, "agent_settings", monkeypatch)
    reread = asyncio.ensure_future(roster.reread("demo"))
    await read.held.wait()
    await roster.change("demo", paused=True)  # the operator's pause, stored
    read.go_on.set()
    assert (await reread).paused
    assert roster.get("demo").paused
