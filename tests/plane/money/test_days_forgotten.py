"""A plane that runs for months keeps in memory the spend of the days it
still weighs (today, and yesterday for a call that closes late), not of every
day it has run (plane/money/day_spend.py, plane/money/plane_day.py): what
the ledger allocated and still holds after a hundred days turned is what it
held after ten."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from plane.clock import ManualClock
from plane.money.ledger import Ledger
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, output_tokens=80)
HELD_FROM = [
    tracemalloc.Filter(True, "*/plane/money/*.py"),
    tracemalloc.Filter(True, "*/plane/batched.py"),
]
"""Where the ledger's memory of days is allocated."""


async def days_of_calls(ledger: Ledger, clock: ManualClock, days: int) -> None:
    """A call a day from each of three agents, settled, the day then turned."""
    for _ in range(days):
        for agent in ("alpha", "beta", "gamma"):
            call = await ledger.open_call(agent, "openai", "gpt-4o", Decimal("0.05"), "estimate")
            await ledger.settle(call, USAGE, Decimal("0.0123"), "genai-prices")
            assert await ledger.spend_today(agent) == Decimal("0.0123")
        await clock.advance(timedelta(days=1))


def held() -> int:
    return sum(
        s.size for s in tracemalloc.take_snapshot().filter_traces(HELD_FROM).statistics("filename")
    )


async def test_the_spend_of_days_gone_by_is_not_kept_in_memory(tmp_path: Path) -> None:
    clock = ManualClock(NOON)
    db = await open_db(tmp_path / "plane.db")
    ledger = Ledger(db, clock)
    tracemalloc.start()
    try:
        await days_of_calls(ledger, clock, 10)
        after_ten = held()
        await days_of_calls(ledger, clock, 100)
        after_a_hundred_more = held()
        assert await ledger.spend_today("alpha") == 0  # the new day, read afresh
        old = await ledger.spend_by_agent(NOON.date() + timedelta(days=42))  # read anew
        assert old == dict.fromkeys(("alpha", "beta", "gamma"), Decimal("0.0123"))
    finally:
        tracemalloc.stop()
        await db.close()
    assert after_a_hundred_more - after_ten < 2048, (after_ten, after_a_hundred_more)
