"""A plane is listening once it has started, on a real PostgreSQL: a notice
another plane sends the moment it is up (a wake, an interrupt's ask or its
answer) is heard, not lost to a LISTEN still on its way. (An interrupt asked
through a plane just started waited out its lease for an answer sent before
that plane listened, and said the owner did not answer.)"""

from __future__ import annotations

import asyncio

from plane.daemon.fleet import tell_owner
from tests.support.fleet_members import join


async def test_a_wake_sent_as_the_plane_starts_is_heard(postgres_url, monkeypatch):
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 60.0)  # no tick wakes anything meanwhile
    member = await join(postgres_url, "p0", ["a"], shared=True)
    heard: list[str] = []
    woken = asyncio.Event()

    def told(agent: str) -> None:
        heard.append(agent)
        woken.set()

    member.fleet.told = told
    await member.fleet.start()
    try:
        tell_owner(member.db, "a")
        async with asyncio.timeout(10):
            await woken.wait()
        assert heard == ["a"]
    finally:
        await member.fleet.stop()
        await member.db.close()
