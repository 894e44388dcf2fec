"""A ceiling the operator sets on one plane binds every plane's next
admission, on a real PostgreSQL: the other plane still holds the value it
read before (it reads them again at its next tick), and its calls are
admitted against the one set, not the one it remembers — lowered, raised,
or turned off; the fleet's and a group's."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.budgets import Budget, FleetFull, GroupFull
from plane.money.ceilings import Ceilings
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CALL = Decimal("0.10")


@pytest.fixture
async def two(postgres_url):
    """Plane x's ledger, and plane y's ceilings (where the operator types)."""
    x = await PostgresDatabase.connect(postgres_url)
    y = await PostgresDatabase.connect(postgres_url)
    ceilings = Ceilings(y, ManualClock(NOON))
    await ceilings.load({})
    yield Ledger(x, ManualClock(NOON), plane="x"), ceilings
    await x.close()
    await y.close()


async def admitted(
    ledger: Ledger, calls: int, fleet: Decimal | None = None, group: Budget | None = None
) -> int:
    """How many of `calls` calls `ledger` admits under the ceilings it remembers."""
    for n in range(calls):
        try:
            await ledger.open_call(
                f"agent-{n}", "p", "m", CALL, "estimate", fleet_ceiling=fleet, group=group
            )
        except (FleetFull, GroupFull):
            return n
    return calls


async def test_a_fleet_ceiling_lowered_on_another_plane_binds_the_next_admission(two):
    ledger, elsewhere = two
    await elsewhere.set_fleet(Decimal("0.25"))
    # Admitted with $0.00, $0.10 and $0.20 spent; refused at $0.30.
    assert await admitted(ledger, 6, fleet=Decimal(100)) == 3


async def test_a_fleet_ceiling_turned_off_on_another_plane_holds_nothing_back(two):
    ledger, elsewhere = two
    await elsewhere.set_fleet(None)
    assert await admitted(ledger, 4, fleet=Decimal("0.15")) == 4


async def test_a_group_ceiling_lowered_on_another_plane_binds_the_next_admission(two):
    ledger, elsewhere = two
    await elsewhere.set_group("research", Decimal("0.15"))
    research = Budget("research", Decimal(100))
    assert await admitted(ledger, 6, group=research) == 2
    assert await admitted(ledger, 2, group=Budget("other", Decimal(100))) == 2
