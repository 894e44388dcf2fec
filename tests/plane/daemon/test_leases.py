"""Leases on a real PostgreSQL, planes in one process (each its own
connections): agents shared out evenly and never held twice; a plane that
stops renewing loses its agents when its leases run out, and its calls in
flight are charged at their estimates by the plane that takes them."""

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from plane.daemon.fleet import DatabaseClock
from plane.money.ledger import LeaseLost
from plane.store.postgres import NOW_MS
from tests.support.fleet_members import Member, join

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
AGENTS = ["a", "b", "c", "d", "e"]


@pytest.fixture
def long_leases(monkeypatch):
    """Leases held however slow the machine (a short one runs out between two
    steps of a test under load); a plane's run out as one write (`ran_out`)."""
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 60.0)


@pytest.fixture
async def planes(postgres_url, long_leases):
    made: list[Member] = []

    async def make(
        name: str, agents: list[str] = AGENTS, clock: DatabaseClock | None = None
    ) -> Member:
        made.append(await join(postgres_url, name, agents, clock=clock))
        return made[-1]

    yield make
    for member in made:
        await member.db.close()


async def owners(plane: Member) -> dict[str, str]:
    rows = await plane.db.fetchall("SELECT agent, plane FROM leases")
    return {agent: plane for agent, plane in rows}


async def test_planes_share_the_agents_out_and_never_hold_one_twice(planes):
    fleets = [await planes(f"p{n}") for n in range(3)]
    held: dict[str, str] = {}
    counts: list[int] = []
    for _ in range(10):  # each sees the others, then evens out (an agent let go is
        # taken at another's next tick)
        await asyncio.gather(*(f.fleet.tick() for f in fleets))
        held = await owners(fleets[0])
        counts = sorted(list(held.values()).count(f.fleet.name) for f in fleets)
        if sorted(held) == AGENTS and counts == [1, 2, 2]:
            break
    assert sorted(held) == AGENTS
    assert counts == [1, 2, 2]
    mine = [f.ownership.mine for f in fleets]
    assert sum(len(m or ()) for m in mine) == 5 and set().union(*mine) == set(AGENTS)


async def test_a_plane_that_stops_renewing_loses_its_agents_and_its_calls_are_charged(planes):
    first = await planes("p0")
    await first.fleet.tick(first=True)
    call = await first.ledger.open_call("a", "p", "m", Decimal("0.30"), "estimate")
    second = await planes("p1")
    await second.fleet.tick(first=True)
    assert set(await owners(second)) == set(AGENTS)
    assert set((await owners(second)).values()) == {"p0"}, "p0's leases have not run out"
    await ran_out(first)  # p0 is dead: it renews no more
    tick = await second.fleet.tick()
    assert tick.gained == frozenset(AGENTS)
    assert tick.cut["a"].estimate_usd == Decimal("0.30")
    [row] = await second.db.fetchall("SELECT status, cost_usd FROM calls WHERE id = ?", call)
    assert tuple(row) == ("interrupted", "0.30")
    history = await second.conversation.history("a")
    assert "the call in flight is counted at its estimate" in history[-1].text
    assert await second.ledger.spend_today("a") == Decimal("0.30"), "counted once"


async def test_at_start_a_plane_sweeps_what_it_left_in_flight_outside_any_lease(planes):
    before = await planes("p0", agents=[])
    await before.fleet.tick(first=True)
    call = await before.ledger.open_call("gateway", "p", "m", Decimal("0.05"), "estimate")
    again = await planes("p0", agents=[])  # the same plane, started again
    tick = await again.fleet.tick(first=True)
    assert tick.cut["gateway"].calls == 1
    [row] = await again.db.fetchall("SELECT status FROM calls WHERE id = ?", call)
    assert row[0] == "interrupted"


async def test_a_plane_whose_machine_clock_is_an_hour_off_keeps_the_databases_time(
    planes, monkeypatch
):
    """The machine's clock an hour ahead: after one renewal the plane's clock
    reads the server's, within a round trip (here: a second)."""
    import time

    clock = DatabaseClock()
    plane = await planes("p0", clock=clock)
    real = time.time
    monkeypatch.setattr("plane.daemon.fleet.time.time", lambda: real() + 3600)
    assert abs((clock.now() - datetime.now(UTC)).total_seconds() - 3600) < 1
    await plane.fleet.tick(first=True)
    assert abs((clock.now() - datetime.now(UTC)).total_seconds()) < 1


async def ran_out(plane: Member) -> None:
    """`plane` renews no more: its leases have run out, and it was last seen
    alive longer than a lease ago, by the database's clock. The moment a
    lease's time passes, as one write."""

    def dead(conn: Any) -> None:
        name = plane.fleet.name
        conn.execute(f"UPDATE leases SET expires_ms = {NOW_MS} - 1 WHERE plane = ?", (name,))
        conn.execute("UPDATE planes SET seen_ms = 0 WHERE name = ?", (name,))

    await plane.db.write(dead)


async def test_a_plane_that_lost_an_agent_opens_no_call_for_it(planes):
    first = await planes("p0")
    await first.fleet.tick(first=True)
    await first.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
    await ran_out(first)
    with pytest.raises(LeaseLost):  # not renewed: refused even before another takes it
        await first.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
    second = await planes("p1")
    await second.fleet.tick(first=True)
    with pytest.raises(LeaseLost, match="a is run by p1 now"):
        await first.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
    await first.ledger.open_call("gateway", "p", "m", Decimal("0.01"), "estimate")
    await second.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
    rows = await second.db.fetchall("SELECT agent, plane FROM calls ORDER BY id")
    assert [tuple(r) for r in rows] == [("a", "p0"), ("gateway", "p0"), ("a", "p1")]
