"""A ceiling first set on another plane binds this plane's very next
admission, on a real PostgreSQL, though this plane remembers none: its
notice has not arrived (the plane typed on tells no one), and no renewal
has read the ceilings again. The call over it is refused as a remembered
ceiling refuses it (`FleetFull`, `GroupFull`), and nothing is written; the
ceiling removed there lets the next call through here."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
RESEARCH = Budget("research", None)
"""The group research as this plane's agents.yaml has it: no ceiling."""


class Planes:
    """This plane's ledger, and another plane's ceilings, where the operator types."""

    def __init__(self, here: Ledger, elsewhere: Ceilings, db: PostgresDatabase) -> None:
        self.here = here
        self.elsewhere = elsewhere
        self.db = db

    async def open(self, agent: str, group: Budget | None = None) -> int:
        """A call of `agent`'s opened here, under the ceilings this plane
        remembers: none (as `services.gate.ceilings.fleet()` would say)."""
        return await self.here.open_call(
            agent, "p", "m", CALL, "estimate", fleet_ceiling=None, group=group
        )

    async def written(self) -> int:
        rows = await self.db.fetchall("SELECT COUNT(*) FROM calls")
        return int(rows[0][0])


@pytest.fixture
async def planes(postgres_url: str) -> AsyncIterator[Planes]:
    here = await PostgresDatabase.connect(postgres_url)
    there = await PostgresDatabase.connect(postgres_url)
    elsewhere = Ceilings(there, ManualClock(NOON))  # no `tell`: nothing reaches this plane
    await elsewhere.load({})
    yield Planes(Ledger(here, ManualClock(NOON), plane="here"), elsewhere, here)
    await here.close()
    await there.close()


async def test_a_fleet_ceiling_first_set_on_another_plane_refuses_the_next_call_here(
    planes: Planes,
) -> None:
    for n in range(3):  # $0.00, $0.10, $0.20 spent: under no ceiling, then under $0.25
        await planes.open(f"agent-{n}")
        if n == 1:
            await planes.elsewhere.set_fleet(Decimal("0.25"))
    with pytest.raises(FleetFull) as refused:
        await planes.open("agent-3")
    assert (refused.value.spent, refused.value.ceiling) == (Decimal("0.30"), Decimal("0.25"))
    assert str(refused.value) == "the fleet has spent 0.30 today, of its 0.25 ceiling"
    assert await planes.written() == 3, "nothing written for the call refused"

    await planes.elsewhere.set_fleet(None)
    await planes.open("agent-3")
    assert await planes.written() == 4


async def test_a_group_ceiling_first_set_on_another_plane_refuses_the_next_call_here(
    planes: Planes,
) -> None:
    await planes.elsewhere.set_group("research", Decimal("0.15"))
    for n in range(2):
        await planes.open(f"r{n}", RESEARCH)
    with pytest.raises(GroupFull) as refused:
        await planes.open("r2", RESEARCH)
    assert (refused.value.name, refused.value.spent) == ("research", Decimal("0.20"))
    assert refused.value.ceiling == Decimal("0.15")
    assert await planes.written() == 2, "nothing written for the call refused"
    await planes.open("o0", Budget("other", None))
    await planes.open("loner")
    assert await planes.written() == 4, "another group's agent and one in none are not held"

    await planes.elsewhere.set_group("research", None)
    await planes.open("r2", RESEARCH)
    assert await planes.written() == 5
