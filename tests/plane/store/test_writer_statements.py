"""The writer's kept statements (`Database.statements`): on SQLite one cursor
for the writer's connection, used only on its thread and closed there; any
other connection (PostgreSQL's, the fleet's own) is its own runner. The
ledger's calls go through it, two statements a call."""

import asyncio
import sqlite3
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.ledger import Ledger
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")
sqlite_only = pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@sqlite_only
async def test_the_writer_keeps_one_cursor_and_closes_it_when_it_stops(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    runners = await asyncio.gather(*(db.write(db.statements) for _ in range(3)))
    assert len({id(runner) for runner in runners}) == 1
    kept = runners[0]
    assert isinstance(kept, sqlite3.Cursor)
    assert kept.execute("SELECT 1").fetchone()[0] == 1  # on the writer's connection
    await db.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed cursor"):
        kept.execute("SELECT 1")


async def test_a_connection_not_the_writers_runs_its_own_statements(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        other = sqlite3.connect(tmp_path / "other.db")
        assert db.statements(other) is other
        other.close()
        if getattr(db, "url", None) is not None:  # PostgreSQL: its connection itself
            writer = await db.write(lambda conn: conn)
            assert await db.write(db.statements) is writer
    finally:
        await db.close()


async def test_calls_opened_and_settled_together_each_get_their_own_row(tmp_path):
    """Many calls at once share the writer's batches, and its one cursor: each
    open gets its own id, each settle changes its own row, and the day's
    sums are the calls'."""
    db = await open_db(tmp_path / "plane.db")
    ledger = Ledger(db, ManualClock(NOON))
    try:

        async def agent(name: str, costs: list[Decimal]) -> list[int]:
            calls = []
            for cost in costs:
                call = await ledger.open_call(name, "p", "m", Decimal("0.5"), "estimate")
                await ledger.settle(call, Usage(input_tokens=10), cost, "table")
                calls.append(call)
            return calls

        costs = {
            f"a{n}": [Decimal(n) / 1000 + Decimal(k) / 10**7 for k in range(8)] for n in range(40)
        }
        ids = await asyncio.gather(*(agent(name, spent) for name, spent in costs.items()))
        assert len({call for calls in ids for call in calls}) == 8 * 40
        rows = await db.fetchall("SELECT agent, cost_usd, status FROM calls")
        assert {row["status"] for row in rows} == {"settled"}
        summed: dict[str, Decimal] = {}
        for row in rows:
            summed[row["agent"]] = summed.get(row["agent"], Decimal(0)) + Decimal(row["cost_usd"])
        assert summed == {name: sum(spent, Decimal(0)) for name, spent in costs.items()}
        assert await ledger.spend_by_agent() == summed
    finally:
        await db.close()
