"""A fleet's ceiling set on one plane holds the other's agents at once even
while that plane's reader is busy: at 10,000 agents, a takeover has
thousands of rows shown again through it, for seconds at a time (6-9 s
typically, up to 110 s). The other plane reads the ceilings on its ticks'
own connection, which no agent's read queues on, so `/limit fleet` shows
there within a renewal, not once the rows are shown."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from tests.support.fleet_members import join

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]

BUSY_S = 10
"""How long B's reader is kept busy: one read a second, queued."""
DEADLINE_S = 5.0
"""How long B may take to hold its agents to the new ceiling: half of it."""


async def test_a_fleet_ceiling_reaches_a_plane_whose_reader_is_busy(postgres_url, monkeypatch):
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 60.0)  # no renewal while the test waits
    b = await join(postgres_url, "B", ["x"])
    a = await join(postgres_url, "A", ["x"])
    started = []
    try:
        for member in (b, a):
            await member.fleet.start()
            started.append(member)
        woken: list[str] = []
        b.fleet.wake = woken.append
        # Rows shown again, as after a takeover: B's reader busy, reads queued.
        busy = [asyncio.ensure_future(b.db.fetchall("SELECT pg_sleep(1)")) for _ in range(BUSY_S)]
        await asyncio.sleep(0.2)  # the first of them under way
        await a.ceilings.set_fleet(Decimal("2.50"))
        try:
            async with asyncio.timeout(DEADLINE_S):
                while b.ceilings.fleet() != Decimal("2.50") or "x" not in woken:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await asyncio.gather(*busy, return_exceptions=True)
    finally:
        for member in reversed(started):
            await member.fleet.stop()
        for member in (a, b):
            await member.db.close()
