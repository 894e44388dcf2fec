"""A fleet ceiling first set on one plane binds the calls the others admit
all at once, though none of them has heard of it: on a real PostgreSQL, two
planes that remember no ceiling each open ten calls at the same moment,
right after a third set the fleet's ceiling. Each call is written only
while no ceiling is set, else admitted under the set one, in turn: together
they pass it by less than one call, as admissions under a ceiling every
plane knows do (plane/money/budgets.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.budgets import FleetFull
from plane.money.ceilings import Ceilings
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase

pytestmark = pytest.mark.timeout(60)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CALL = Decimal("0.10")
CEILING = Decimal("0.25")
CALLS = 10
"""The calls each plane opens at once."""


@pytest.fixture
async def stores(postgres_url: str) -> AsyncIterator[list[PostgresDatabase]]:
    """Three planes' stores: where the operator types, and two admitting."""
    dbs = [await PostgresDatabase.connect(postgres_url) for _ in range(3)]
    yield dbs
    for db in dbs:
        await db.close()


async def test_calls_admitted_at_once_on_planes_unaware_pass_a_new_ceiling_by_less_than_one(
    stores: list[PostgresDatabase],
) -> None:
    typed, *admitting = stores
    ceilings = Ceilings(typed, ManualClock(NOON))  # no `tell`: nothing reaches the others
    await ceilings.load({})
    ledgers = [
        Ledger(db, ManualClock(NOON), plane=name)
        for db, name in zip(admitting, ["a", "b"], strict=True)
    ]
    await ceilings.set_fleet(CEILING)
    opened = await asyncio.gather(
        *(
            ledger.open_call(f"{name}-{n}", "p", "m", CALL, "estimate", fleet_ceiling=None)
            for ledger, name in zip(ledgers, ["a", "b"], strict=True)
            for n in range(CALLS)
        ),
        return_exceptions=True,
    )
    refused = [o for o in opened if isinstance(o, FleetFull)]
    written = [o for o in opened if isinstance(o, int)]
    assert len(written) + len(refused) == len(opened), opened
    rows = await typed.fetchall("SELECT COUNT(*) FROM calls")
    assert int(rows[0][0]) == len(written)
    spent = CALL * len(written)
    assert spent - CALL < CEILING <= spent, "admitted until the ceiling, one call past it at most"
