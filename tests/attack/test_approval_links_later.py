"""An approval link followed long after: an expired link, or one for a day
that ended, still says so when a later alert has cleared its offer from the
store (each offer made forgets those that expired). A link this plane
signed is never answered "made no such offer"."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from plane.wire.protocol import Usage
from tests.attack.test_approval_links import refused
from tests.support.approving import held_links, held_plane


async def test_an_expired_link_says_so_after_a_later_alert(start_plane, receiver):
    plane = await held_plane(start_plane, receiver)  # demo held at 12:00: its link ends 18:00
    old = held_links(receiver)
    await plane.clock.advance(timedelta(hours=7))
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1050))
    await plane.turn("scout", "spend")  # scout held at 19:00: an offer made, the old one forgotten
    async with asyncio.timeout(10):
        while sum(h["event"] == "held" for h in receiver.hooks()) < 2:
            receiver.arrived.clear()
            await receiver.arrived.wait()
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    await refused(
        plane, old["+$0.40 today"], 410, "This link expired at 18:00 UTC; nothing changed."
    )
