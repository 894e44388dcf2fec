"""Renewals that come while what follows an earlier one still runs are
followed once, by the newest: but the agents each of them swept (their
calls in flight on a plane that stopped) are woken all the same. On a real
PostgreSQL, two planes of the fleet's own parts, one agent: p0 holds it
with a call in flight and stops; p1's renewals run every half second, the
first one's follow held by the test (its read of which agents have work
waits) while the next takes the agent and sweeps the call, and another
comes after it. Before, the newest tick alone was followed: it swept
nothing, and the agent was never woken."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from plane.daemon import fleet
from tests.support.fleet_members import join
from tests.support.takeovers import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

LEASE_S = 1.5
"""Renewals half a second apart."""

PENDING = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status, plane)"
    " VALUES ('x', '2026-11-29', '', 'p', 'm', '0.50', 'table', 'pending', 'p0')"
)


async def test_an_agent_swept_at_a_renewal_whose_follow_was_merged_is_woken(
    postgres_url, monkeypatch
):
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    p0 = await join(postgres_url, "p0", ["x"], shared=True)
    await p0.fleet.start()
    assert p0.ownership.mine == frozenset({"x"})
    await p0.db.write(lambda conn: conn.execute(PENDING))  # its call in flight

    held = asyncio.Event()
    asked: list[Mapping[str, int]] = []

    async def work(waiting: Mapping[str, int]) -> set[str]:
        """Nothing to do, by the store's rows; the first renewal's read held."""
        asked.append(waiting)
        if len(asked) == 1:
            await held.wait()
        return set()

    p1 = await join(postgres_url, "p1", ["x"], shared=True, work=work)
    woken: list[str] = []
    p1.fleet.wake = woken.append
    await p1.fleet.start()
    try:
        await until(lambda: asked, "p1's first renewal asked which agents have work")
        await p0.fleet.stop()  # its lease let go, its call left in flight
        await until(lambda: "x" in (p1.ownership.mine or ()), "p1 took x")
        taken_until = p1.ownership.live_until
        await until(lambda: p1.ownership.live_until != taken_until, "p1 renewed again")
        held.set()
        await until(lambda: "x" in woken, "x woken for the call swept")
        rows = await p1.db.fetchall("SELECT status FROM calls WHERE agent = 'x'")
        assert [row[0] for row in rows] == ["interrupted"]
    finally:
        held.set()
        await p1.fleet.stop()
        await p0.fleet.stop()
        await p1.db.close()
        await p0.db.close()
