"""The plane's day attacked at 00:00 UTC: calls in flight as the day turns,
on each engine. A call's cost counts on the day it became known, so a call
sent at 23:59:59.9 and still in flight at midnight is the new day's: its
estimate leaves the old day exactly and counts against the new day's
ceilings from 00:00, and no day ends more than one call over."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.ledger import FleetFull, Ledger
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db

LAST_TENTH = datetime(2026, 11, 29, 23, 59, 59, 900000, tzinfo=UTC)
DAY_ONE, DAY_TWO = date(2026, 11, 29), date(2026, 11, 30)
USAGE = Usage(input_tokens=100, output_tokens=50)


@pytest.mark.usefixtures("each_store")
async def test_a_call_in_flight_at_midnight_counts_against_the_new_days_fleet_ceiling(tmp_path):
    """$0.90 sent at 23:59:59.9 under a $1 fleet ceiling, settled after
    00:00: from midnight the new day counts it, so calls of $0.30 on the new
    day are refused once it is full, and the day ends at most one call over
    (before: the new day admitted $1.20 besides, and ended $2.10 of $1)."""
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(LAST_TENTH)
        ledger = Ledger(db, clock)
        fleet = Decimal(1)
        late = await ledger.open_call(
            "a", "p", "m", Decimal("0.90"), "estimate", fleet_ceiling=fleet
        )
        await clock.advance(timedelta(seconds=0.2))
        assert await ledger.fleet_today() == Decimal("0.90"), "in flight: counted from 00:00"
        assert await ledger.spend_by_agent(DAY_ONE) == {"a": Decimal(0)}, "released exactly"
        admitted: list[int] = []
        with pytest.raises(FleetFull):
            for _ in range(10):
                admitted.append(
                    await ledger.open_call(
                        "b", "p", "m", Decimal("0.30"), "estimate", fleet_ceiling=fleet
                    )
                )
        assert len(admitted) == 1
        await ledger.settle(late, USAGE, Decimal("0.90"), "table")
        for call in admitted:
            await ledger.settle(call, USAGE, Decimal("0.30"), "table")
        assert await ledger.spend_by_agent(DAY_TWO) == {"a": Decimal("0.90"), "b": Decimal("0.30")}
        assert await ledger.spend_by_agent(DAY_ONE) == {"a": Decimal(0)}
        assert await ledger.fleet_today() - fleet <= Decimal("0.90"), "at most one call over"
        days = await db.fetchall("SELECT day FROM calls ORDER BY id")
        assert [row[0] for row in days] == [DAY_TWO.isoformat()] * 2
    finally:
        await db.close()
