"""A ceiling the operator sets on one plane reaches the plane that runs the
agent at once, on a real PostgreSQL: the plane that stored it tells the
others on the fleet's channel, and they read the ceilings again then, not
at their next renewal — leases here last a minute, so no renewal runs
while the test waits. The plane that runs the agent wakes it, as a renewal
that finds a ceiling changed does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.money.ceilings import Ceilings
from tests.support.fleet_members import Member, join
from tests.support.held_reads import HeldRead

pytestmark = pytest.mark.timeout(60)

DEADLINE_S = 5.0
"""How long the plane that runs the agent may take to hear of the change
(a renewal would come only after 20 s)."""

TOMORROW = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)


@pytest.fixture
async def a_and_b(postgres_url, monkeypatch) -> AsyncIterator[tuple[Member, Member]]:
    """Planes A (where the operator types) and B (which runs agent x), both
    started as `plane serve` starts them: listening on the fleet's channel."""
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 60.0)
    b = await join(postgres_url, "B", ["x"])
    a = await join(postgres_url, "A", ["x"])
    started: list[Member] = []
    try:
        for member in (b, a):
            await member.fleet.start()
            started.append(member)
        assert b.ownership.owns("x") and not a.ownership.owns("x")
        yield a, b
    finally:
        for member in reversed(started):
            await member.fleet.stop()
        for member in (a, b):
            await member.db.close()


async def until(holds: Callable[[], bool]) -> None:
    """Until `holds()` is true, failing past `DEADLINE_S`."""
    async with asyncio.timeout(DEADLINE_S):
        while not holds():  # noqa: ASYNC110 - the other plane's memory
            await asyncio.sleep(0.02)


WRITES: dict[str, tuple[Callable[[Ceilings], Awaitable[object]], Callable[[Ceilings], bool]]] = {
    "/limit 0": (
        lambda c: c.set("x", Decimal(0)),
        lambda c: c.of("x") == Decimal(0),
    ),
    "/limit fleet": (
        lambda c: c.set_fleet(Decimal("2.50")),
        lambda c: c.fleet() == Decimal("2.50"),
    ),
    "/limit group": (
        lambda c: c.set_group("research", Decimal("1.25")),
        lambda c: c.groups.ceiling("research") == Decimal("1.25"),
    ),
    "a raise from an alert": (
        lambda c: c.raise_until("x", Decimal(7), TOMORROW, lambda conn: None),
        lambda c: c.of("x") == Decimal(7),
    ),
}
"""What the operator sets on plane A, and how plane B's memory shows it."""


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
async def test_a_ceiling_set_on_one_plane_reaches_the_plane_running_the_agent_at_once(
    a_and_b, write
):
    a, b = a_and_b
    setting, seen = write
    woken: list[str] = []
    b.fleet.wake = woken.append
    assert not seen(b.ceilings)
    await setting(a.ceilings)
    await until(lambda: seen(b.ceilings))
    await until(lambda: "x" in woken)  # held at its next look, or freed by a raise


async def test_many_ceilings_set_at_once_all_reach_the_other_plane(a_and_b):
    """Notices heard while B reads the ceilings make one more read: the last
    value set is the one B holds."""
    a, b = a_and_b
    for cents in range(1, 21):
        await a.ceilings.set("x", Decimal(cents) / 100)
    await until(lambda: b.ceilings.of("x") == Decimal("0.20"))


async def test_the_plane_that_set_a_ceiling_keeps_what_it_set(a_and_b):
    a, b = a_and_b
    await b.ceilings.set("x", Decimal(0))
    await a.ceilings.set_fleet(Decimal(3))
    await until(lambda: b.ceilings.fleet() == Decimal(3))
    assert b.ceilings.of("x") == Decimal(0)
    assert a.ceilings.fleet() == Decimal(3)


READ_FROM = {"/limit 0": "ceilings", "/limit fleet": "fleet", "/limit group": "group_limits"}
READ_FROM["a raise from an alert"] = "raises"
"""The table each write's value is read from, again, by a reread."""


@pytest.mark.parametrize("write", WRITES, ids=WRITES.keys())
async def test_a_reread_under_way_never_takes_back_a_ceiling_set_on_its_plane(
    a_and_b, write, monkeypatch
):
    """A reread of A's that read a value before A's own change to it was
    stored would put what it read over that change (the fleet's ceiling gone
    from A's memory until the next renewal): they take turns."""
    a, _ = a_and_b
    store, holds = WRITES[write]
    read = HeldRead(a.db, READ_FROM[write], monkeypatch)
    reread = asyncio.ensure_future(a.ceilings.reload())
    await read.held.wait()
    change = asyncio.ensure_future(store(a.ceilings))
    await asyncio.sleep(0.2)  # a change that does not wait its turn is done by now
    read.go_on.set()
    await asyncio.gather(reread, change)
    assert holds(a.ceilings)
    await a.ceilings.reload()
    assert holds(a.ceilings), "as stored"


async def test_a_rename_while_a_reread_is_under_way_keeps_the_ceiling_with_the_new_name(
    a_and_b, monkeypatch
):
    a, _ = a_and_b
    await a.ceilings.set("x", Decimal(0))
    read = HeldRead(a.db, "ceilings", monkeypatch)
    reread = asyncio.ensure_future(a.ceilings.reload())
    await read.held.wait()
    # As a rename does: the rows moved in one transaction, then the memory.
    await a.db.write(lambda conn: conn.execute("UPDATE ceilings SET agent = 'y' WHERE agent = 'x'"))
    a.ceilings.renamed("x", "y")
    read.go_on.set()
    await reread
    assert a.ceilings.of("y") == Decimal(0)
    assert a.ceilings.source("x") == "none"


async def test_a_renewal_that_finds_a_ceiling_changed_wakes_each_agent_once(postgres_url):
    """A notice lost (B not listening): B's renewal reads the change, and
    wakes each agent it runs once, as every renewal does — not once for the
    ceilings and once more for the renewal."""
    b = await join(postgres_url, "B", ["x", "y"])
    a = await join(postgres_url, "A", ["x", "y"])
    try:
        await b.fleet.tick(first=True)
        assert b.ownership.mine == frozenset({"x", "y"})
        woken: list[str] = []
        b.fleet.wake = woken.append
        await a.ceilings.set_fleet(Decimal("2.50"))
        await b.fleet.tick()
        assert b.ceilings.fleet() == Decimal("2.50"), "read by the renewal"
        assert sorted(woken) == ["x", "y"]
    finally:
        for member in (a, b):
            await member.fleet.stop()
            await member.db.close()
