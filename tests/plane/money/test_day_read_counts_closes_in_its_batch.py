"""A day's first read on the writer counts the closes its own transaction ran
before it (plane/money/day_spend.py): a close's cost is written to `spend`
only at the transaction's end, and its estimate is no longer pending, so a
read in the same batch saw neither; the close's commit does not move a day
not loaded yet, and the gate's sum stayed short by that call until restart.

The batch is made deterministically: a write that waits on an event holds
the writer, the close and then the read are queued behind it, in that order,
and run in one transaction once it is released."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from plane.clock import ManualClock
from plane.errors import LedgerError
from plane.money.ledger import Ledger
from plane.store.engine import Database
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LAST_TENTH = datetime(2026, 11, 29, 23, 59, 59, 900000, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, output_tokens=80)
ESTIMATE, COST = Decimal("0.05"), Decimal("0.0123")


class Hold:
    """A write that holds the writer until released."""

    def __init__(self, db: Database) -> None:
        self.started = threading.Event()
        self.released = threading.Event()
        self.done = db.submit(self.run)

    def run(self, conn: Any) -> None:
        self.started.set()
        self.released.wait(10)

    async def running(self) -> None:
        assert await asyncio.to_thread(self.started.wait, 10), "the writer never took it"

    async def release(self) -> None:
        self.released.set()
        await self.done


async def put(db: Database, ask: Callable[[], Awaitable[Any]]) -> asyncio.Task[Any]:
    """`ask()` as a task, once it has put its one write on the writer's queue."""
    before = db.counts.writes
    task = asyncio.ensure_future(ask())
    deadline = time.monotonic() + 10
    while db.counts.writes == before and not task.done():
        assert time.monotonic() < deadline, "the write was never put"
        await asyncio.sleep(0.001)
    return task


async def in_one_batch(
    db: Database, close: Callable[[], Awaitable[Any]], read: Callable[[], Awaitable[Decimal]]
) -> Decimal:
    """`close`'s write and then `read`'s in one transaction: what `read` answers."""
    hold = Hold(db)
    await hold.running()
    closing = await put(db, close)
    reading = await put(db, read)
    await hold.release()
    await closing
    return await reading


async def counted_once(db: Database, ledger: Ledger, call: int, day: date) -> None:
    """The call settled and then agent "a"'s day read, in one transaction:
    the read, the sum in memory and the `spend` row each hold its cost once."""
    spent = await in_one_batch(
        db,
        lambda: ledger.settle(call, USAGE, COST, "table"),
        lambda: ledger.spend_today("a"),
    )
    assert spent == COST
    assert ledger.spend_known("a") == COST == await table(db, day, "a")


async def table(db: Database, day: date, agent: str) -> Decimal:
    rows = await db.fetchall(
        "SELECT cost_usd FROM spend WHERE day = ? AND agent = ?", day.isoformat(), agent
    )
    return sum((Decimal(row[0]) for row in rows), Decimal(0))


@pytest.fixture
async def opened(tmp_path: Path) -> Any:
    db = await open_db(tmp_path / "plane.db")
    yield db
    await db.close()


async def test_a_forgotten_days_first_read_counts_a_close_in_its_batch(opened):
    """On a fleet, the day's sums forgotten (`forget_sums`, an agent taken
    over): the read that loads them again runs right after a close."""
    db = opened
    ledger = Ledger(db, ManualClock(NOON))
    call = await ledger.open_call("a", "p", "m", ESTIMATE, "estimate")
    ledger.forget_sums()
    await counted_once(db, ledger, call, NOON.date())


async def test_a_new_days_first_read_counts_a_close_in_its_batch(opened):
    """A call in flight at midnight, carried onto the new day, settles just
    before the new day's sums are first read."""
    db = opened
    clock = ManualClock(LAST_TENTH)
    ledger = Ledger(db, clock)
    call = await ledger.open_call("a", "p", "m", ESTIMATE, "estimate")
    await clock.advance(timedelta(seconds=0.2))
    new_day = await ledger.today()
    assert new_day == LAST_TENTH.date() + timedelta(days=1)
    await counted_once(db, ledger, call, new_day)


async def test_an_agents_reread_counts_a_close_in_its_batch(opened):
    """An agent held by a row that did not read (its call's estimate edited
    while the plane runs) is read again right after a close that rewrote the
    row: its sum is the call's cost."""
    db = opened
    ledger = Ledger(db, ManualClock(NOON))
    call = await ledger.open_call("a", "p", "m", ESTIMATE, "estimate")
    await db.write(
        lambda conn: conn.execute("UPDATE calls SET cost_usd = 'lots' WHERE id = ?", (call,))
    )
    ledger.forget_sums()
    with pytest.raises(LedgerError):
        await ledger.spend_today("a")
    await counted_once(db, ledger, call, NOON.date())
