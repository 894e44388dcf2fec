"""A plane keeps its leases while its reader is busy: what follows a renewal
(the ceilings read again, the rows of agents that moved shown again) reads
through the plane's one reader, which thousands of rows shown at once (a
fleet of 10,000 agents moving between planes) keep busy for seconds. Before,
each tick waited for those reads before the next renewal, the leases ran
out, the other plane took every agent, and the two passed the whole fleet
back and forth, no plane running it for seconds at a time."""

import asyncio

import pytest

from plane.store.postgres import NOW_MS, PostgresDatabase
from tests.support.fleet_members import join

AGENTS = ["a", "b", "c"]
LEASE_S = 3.0
BUSY_READS = 40
"""Reads of a quarter of a second each, queued on the plane's reader: ten
seconds of it busy, more than three leases."""


@pytest.mark.slow
async def test_a_plane_keeps_its_leases_while_its_reader_is_busy(postgres_url, monkeypatch):
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", LEASE_S)
    plane = await join(postgres_url, "p1", AGENTS)
    watcher = await PostgresDatabase.connect(postgres_url, migrate=False)
    await plane.fleet.start()
    try:
        busy = [
            asyncio.ensure_future(plane.db.fetchall("SELECT pg_sleep(0.25)"))
            for _ in range(BUSY_READS)
        ]
        ran_out = 0
        while not all(read.done() for read in busy):
            rows = await watcher.fetchall(
                f"SELECT COUNT(*) FROM leases WHERE plane = 'p1' AND expires_ms < {NOW_MS}"
            )
            ran_out = max(ran_out, rows[0][0])
            await asyncio.sleep(0.1)
        await asyncio.gather(*busy)
        held = await watcher.fetchall("SELECT agent FROM leases WHERE plane = 'p1'")
    finally:
        await plane.fleet.stop()
        await watcher.close()
        await plane.db.close()
    assert sorted(agent for (agent,) in held) == AGENTS
    assert ran_out == 0, f"{ran_out} of p1's leases ran out while its reader was busy"
