"""A tag's spend kept per day beside its calls, on each engine: each tag's sum
of its closed calls moves in the transaction that closes them (settled,
failed, interrupted, cut or swept), as a group's does, so admitting a call
of a busy tag reads one row, not the tag's day."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.budgets import Budget
from plane.money.ledger import Ledger, TagFull
from plane.store import open_store
from plane.store.engine import Database
from plane.store.migrations import MIGRATIONS
from plane.wire.protocol import Usage
from tests.support.fixtures_postgres import open_db
from tests.support.old_stores import postgres_before, sqlite_before

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TICKET = Budget("ticket-7", Decimal(1))
OPS = Budget("ops", None)

STEP = next(n for n, script in enumerate(MIGRATIONS) if "CREATE TABLE tag_spend" in script)
"""The step that makes the tag sums (the schema before it is `MIGRATIONS[:STEP]`)."""


async def tags_of_calls(db: Database) -> dict[tuple[str, str], Decimal]:
    """Each (day, tag)'s spend on closed calls, summed from the calls themselves."""
    sums: dict[tuple[str, str], Decimal] = {}
    closed = "SELECT day, tag, cost_usd FROM calls WHERE status <> 'pending'"
    for day, tag, cost in await db.fetchall(closed + " AND tag IS NOT NULL"):
        sums[(day, tag)] = sums.get((day, tag), Decimal(0)) + Decimal(cost)
    return {key: total for key, total in sums.items() if total}


async def tag_spend_table(db: Database) -> dict[tuple[str, str], Decimal]:
    """The tag sums the ledger keeps (a sum moved back to zero may stay a row)."""
    rows = await db.fetchall("SELECT day, tag, cost_usd FROM tag_spend")
    return {(day, tag): Decimal(cost) for day, tag, cost in rows if Decimal(cost)}


async def test_the_tag_sums_are_the_calls_summed_through_every_change(tmp_path):
    """A tag's calls opened, settled across midnight, failed, interrupted by
    the operator, cut by their plane, closed by a plane that did not open
    them and swept at a restart: after each, the tag's sums kept beside the
    calls are its calls summed, and `tag_today` is what they say. Every call
    still in flight at midnight is the next day's."""
    clock = ManualClock(NOON)
    db = await open_db(tmp_path / "plane.db")
    ledger = Ledger(db, clock)
    first = await ledger.open_call("a", "p", "m", Decimal("0.05"), "estimate", tag=TICKET)
    second = await ledger.open_call("b", "p", "m", Decimal("0.30"), "estimate", tag=TICKET)
    await ledger.open_call("b", "p", "m", Decimal("0.11"), "estimate", tag=TICKET)
    await ledger.open_call("c", "p", "m", Decimal("0.07"), "estimate", tag=TICKET)
    cut = await ledger.open_call("d", "p", "m", Decimal("0.02"), "estimate", tag=TICKET)
    elsewhere = await ledger.open_call("d", "p", "m", Decimal("0.04"), "estimate", tag=OPS)
    untagged = await ledger.open_call("d", "p", "m", Decimal("0.50"), "estimate")
    assert await ledger.budget_spend.tag_today("ticket-7") == Decimal("0.55")
    await clock.advance(timedelta(hours=12))  # the responses arrive on the next day
    await ledger.settle(first, Usage(input_tokens=1), Decimal("0.0123"), "table")
    await ledger.fail(second)
    assert (await ledger.interrupt_open("b")).estimate_usd == Decimal("0.11")
    await ledger.cut(cut)
    await ledger.settle(untagged, Usage(input_tokens=1), Decimal("0.3"), "table")
    assert await tag_spend_table(db) == await tags_of_calls(db)
    await Ledger(db, clock).settle(elsewhere, Usage(input_tokens=1), Decimal("0.01"), "table")
    assert await tag_spend_table(db) == await tags_of_calls(db)
    assert await ledger.budget_spend.tag_today("ticket-7") == Decimal("0.2123"), "c's in flight"
    await db.close()
    db = await open_db(tmp_path / "plane.db")
    try:
        again = Ledger(db, clock)
        assert (await again.recover())["c"].estimate_usd == Decimal("0.07")
        assert await tag_spend_table(db) == await tags_of_calls(db)
        assert await tag_spend_table(db) == {
            ("2026-11-30", "ticket-7"): Decimal("0.2123"),
            ("2026-11-30", "ops"): Decimal("0.01"),
        }
        assert await again.budget_spend.tag_today("ticket-7") == Decimal("0.2123")
        assert await again.budget_spend.tag_in_flight("ticket-7") == Decimal(0)
    finally:
        await db.close()


async def test_a_call_its_tag_cannot_afford_is_refused_and_not_written(tmp_path):
    """The tag's closed calls and those in flight count, whichever agent made
    them, and a refused call leaves no row."""
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        done = await ledger.open_call("a", "p", "m", Decimal("0.10"), "estimate", tag=TICKET)
        await ledger.settle(done, Usage(input_tokens=1), Decimal("0.60"), "table")
        await ledger.open_call("b", "p", "m", Decimal("0.39"), "estimate", tag=TICKET)
        await ledger.open_call("c", "p", "m", Decimal("5"), "estimate", tag=OPS)
        await ledger.open_call("c", "p", "m", Decimal("0.01"), "estimate", tag=TICKET)
        with pytest.raises(TagFull) as full:
            await ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate", tag=TICKET)
        assert (full.value.spent, full.value.name) == (Decimal("1.00"), "ticket-7")
        assert len(await db.fetchall("SELECT id FROM calls")) == 4
    finally:
        await db.close()


CALL = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status, tag)"
    " VALUES ('a', ?, '', 'p', 'm', ?, 'table', ?, ?)"
)
OLD_CALLS = [
    *(("2026-11-29", cost, "settled", "ticket-7") for cost in ["0.1", "0.2", "1E-9"] * 10),
    ("2026-11-29", "0.5", "pending", "ticket-7"),  # in flight: at its estimate, not in the sum
    ("2026-11-29", "0.3", "interrupted", "ticket-7"),
    ("2026-11-29", "0", "failed", "ticket-7"),
    ("2026-11-28", "0.25", "settled", "ticket-7"),
    ("2026-11-29", "0.07", "settled", None),
    ("2026-11-29", "0.000000000000000001", "settled", "ops"),
]
"""An older ledger's calls: 0.1 + 0.2 is not 0.3 in floats."""

OLD_SUMS = {
    ("2026-11-29", "ticket-7"): Decimal("3.30000001"),
    ("2026-11-28", "ticket-7"): Decimal("0.25"),
    ("2026-11-29", "ops"): Decimal("0.000000000000000001"),
}


async def summed_exactly(db: Database) -> None:
    """The older store's tag calls, opened by a plane: summed into `tag_spend`
    to the last digit, and read by the ledger from there. Closes `db`."""
    try:
        assert await tag_spend_table(db) == OLD_SUMS == await tags_of_calls(db)
        ledger = Ledger(db, ManualClock(NOON))
        assert await ledger.budget_spend.tag_today("ticket-7") == Decimal("3.80000001")
    finally:
        await db.close()


@pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)
async def test_a_ledger_from_before_the_tag_sums_is_summed_exactly(tmp_path):
    path = tmp_path / "plane.db"
    old = sqlite_before(path, STEP)
    old.executemany(CALL, OLD_CALLS)
    old.commit()
    old.close()
    db = await open_db(path)
    await summed_exactly(db)


@pytest.mark.parametrize("each_store", ["postgresql"], indirect=True)
async def test_a_shared_store_from_before_the_tag_sums_is_summed_exactly(
    bare_postgres_url, tmp_path
):
    """The same on PostgreSQL: a database with the schema before the step,
    its calls written, then opened by a plane that takes the step."""
    with postgres_before(bare_postgres_url, STEP) as old:
        old.executemany(CALL, OLD_CALLS)
    db = await open_store(bare_postgres_url, tmp_path / "plane.db")
    await summed_exactly(db)
