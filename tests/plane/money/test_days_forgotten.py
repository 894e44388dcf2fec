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

import pytest

from plane.clock import ManualClock
from plane.history.conversation import Conversation
from plane.money.ledger import Ledger
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, output_tokens=80)
HELD_FROM = [
    tracemalloc.Filter(True, f"*/plane/{module}.py")
    for module in ("money/day_spend", "money/plane_day", "money/stored", "batched")
]
"""Where the ledger's memory of days is allocated (a day's sums, its read, its turn)."""


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


@pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)  # memory: either store's
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
    assert after_a_hundred_more - after_ten < 4096, (after_ten, after_a_hundred_more)


async def test_the_notices_of_days_gone_by_leave_the_store_when_the_day_turns(
    tmp_path: Path,
) -> None:
    """A notice is said once a day (`first_today`, asked of the plane's day,
    which never goes back): a row an agent, a kind and a day, never read
    again once that day is over; a plane running for months kept them all."""
    clock = ManualClock(NOON)
    db = await open_db(tmp_path / "plane.db")
    ledger, conversation = Ledger(db, clock), Conversation(db, clock)
    try:
        for _ in range(30):
            day = await ledger.today()
            for agent in ("alpha", "beta"):
                for kind in ("warn", "ceiling 5", "spike"):
                    assert await conversation.first_today(agent, kind, day)
                    assert not await conversation.first_today(agent, kind, day)
            await clock.advance(timedelta(days=1))
        await ledger.today()  # the day turns
        days = await db.fetchall("SELECT DISTINCT day FROM notices ORDER BY day")
        today = await ledger.today()
        assert [row[0] for row in days] == [(today - timedelta(days=1)).isoformat()]
        assert not await conversation.first_today("alpha", "warn", today - timedelta(days=1))
    finally:
        await db.close()
