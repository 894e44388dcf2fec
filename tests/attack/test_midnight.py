"""The plane's day attacked at 00:00 UTC: calls in flight as the day turns,
on each engine. A call's cost counts on the day it became known, so a call
sent at 23:59:59.9 and still in flight at midnight is the new day's: its
estimate leaves the old day exactly and counts against the new day's
ceilings from 00:00, and no day ends more than one call over."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.budgets import Budget
from plane.money.ledger import FleetFull, Ledger
from plane.store.postgres import PostgresDatabase
from plane.wire.protocol import Usage
from tests.support.approving import held_links, held_plane, post, standing
from tests.support.fixtures_postgres import open_db
from tests.support.scripted_llm import Reply

LATE = datetime(2026, 11, 29, 22, tzinfo=UTC)
LAST_TENTH = datetime(2026, 11, 29, 23, 59, 59, 900000, tzinfo=UTC)
DAY_ONE, DAY_TWO = date(2026, 11, 29), date(2026, 11, 30)
USAGE = Usage(input_tokens=100, output_tokens=50)


@pytest.mark.usefixtures("each_store")
async def test_a_call_in_flight_at_midnight_counts_against_the_new_days_fleet_ceiling(tmp_path):
    """$0.90 sent at 23:59:59.9 under a $1 fleet ceiling (and a group's and
    a tag's), settled after 00:00: from midnight the new day counts it, in
    every sum, so calls of $0.30 on the new day are refused once it is full,
    and the day ends at most one call over (before: the new day admitted
    $1.20 besides, and ended $2.10 of $1)."""
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(LAST_TENTH)
        ledger = Ledger(db, clock)
        fleet = Decimal(1)
        group, tag = Budget("research", Decimal(5)), Budget("nightly", Decimal(5))
        late = await ledger.open_call(
            "a", "p", "m", Decimal("0.90"), "estimate", fleet_ceiling=fleet, group=group, tag=tag
        )
        await clock.advance(timedelta(seconds=0.2))
        fleet_now = await ledger.budget_spend.fleet_today()
        assert fleet_now == Decimal("0.90"), "in flight: counted from 00:00"
        assert await ledger.budget_spend.group_today("research") == Decimal("0.90")
        assert await ledger.budget_spend.tag_today("nightly") == Decimal("0.90")
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
        over = await ledger.budget_spend.fleet_today() - fleet
        assert over <= Decimal("0.90"), "at most one call over"
        days = await db.fetchall("SELECT day FROM calls ORDER BY id")
        assert [row[0] for row in days] == [DAY_TWO.isoformat()] * 2
    finally:
        await db.close()


async def _the_day_turns_then_the_clock_steps_back(plane) -> None:
    """00:00:05 on the 30th, reached by the plane, then NTP puts the clock at
    23:59:58 on the 29th: the plane's day stays the 30th."""
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, 5, tzinfo=UTC))
    assert await plane.services.ledger.today() == DAY_TWO
    await plane.clock.set(datetime(2026, 11, 29, 23, 59, 58, tzinfo=UTC))
    assert await plane.services.ledger.today() == DAY_TWO


async def test_a_raise_that_ended_at_midnight_does_not_come_back_with_the_clock(
    start_plane, receiver
):
    """A raise lasts until 00:00 UTC of the plane's day: a clock stepping
    back across midnight after it does not give the agent the raise again
    on the next day's budget (before: $1.40 again, until the clock passed
    00:00 a second time)."""
    plane = await held_plane(start_plane, receiver, clock=ManualClock(LATE))
    assert (await post(held_links(receiver)["+$0.40 today"])).status_code == 200
    assert plane.services.gate.ceilings.of("demo") == Decimal("1.40")
    await _the_day_turns_then_the_clock_steps_back(plane)
    assert plane.services.gate.ceilings.of("demo") == Decimal("1.00")


async def test_a_link_for_a_day_that_ended_is_refused_with_the_clock_stepped_back(
    start_plane, receiver
):
    """The link was for the 29th; the plane is on the 30th, whatever the
    clock reads now (before: it raised the ceiling on the 30th)."""
    plane = await held_plane(start_plane, receiver, clock=ManualClock(LATE))
    links = held_links(receiver)
    await _the_day_turns_then_the_clock_steps_back(plane)
    before = await standing(plane)
    answer = await post(links["+$0.40 today"])
    assert (answer.status_code, answer.text) == (
        410,
        "This link was for 2026-11-29, which ended at 00:00 UTC; nothing changed.\n",
    )
    assert await standing(plane) == before


async def test_each_plane_carries_its_own_calls_in_flight_onto_the_new_day(postgres_url):
    """Several planes on one store: the plane reaching 00:00 carries the
    calls it has in flight, not another plane's (whose sums in memory would
    then lose them); that one carries its own as it reaches the day."""
    dbs = [await PostgresDatabase.connect(postgres_url) for _ in range(2)]
    try:
        clock = ManualClock(LAST_TENTH)
        ledgers = [Ledger(db, clock, plane=f"plane-{n}") for n, db in enumerate(dbs)]
        assert [await ledger.today() for ledger in ledgers] == [DAY_ONE] * 2
        await dbs[0].write(
            lambda conn: conn.executemany(
                "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
                " status, estimated, plane) VALUES (?, ?, ?, 'p', 'm', '0.25', 'estimate',"
                " 'pending', 1, ?)",
                [
                    (f"agent-{n}", DAY_ONE.isoformat(), LAST_TENTH.isoformat(), f"plane-{n}")
                    for n in range(2)
                ],
            )
        )
        await clock.advance(timedelta(seconds=0.2))
        days = "SELECT plane, day FROM calls ORDER BY plane"
        assert await ledgers[0].today() == DAY_TWO
        assert [tuple(r) for r in await dbs[0].fetchall(days)] == [
            ("plane-0", DAY_TWO.isoformat()),
            ("plane-1", DAY_ONE.isoformat()),
        ]
        assert await ledgers[1].today() == DAY_TWO
        assert [r[1] for r in await dbs[0].fetchall(days)] == [DAY_TWO.isoformat()] * 2
        assert await ledgers[1].budget_spend.fleet_today() == Decimal("0.50")
    finally:
        for db in dbs:
            await db.close()


async def test_a_turn_booked_past_midnight_while_held_runs_once_after_it(start_plane):
    """Held at 22:00 with a turn booked for 00:10 and a message kept: at
    00:00 the message is answered, once; at 00:10 the booking runs, once,
    and nothing runs again after."""
    plane = await start_plane(clock=ManualClock(LATE))
    book = ("schedule_turn", {"in_seconds": 130 * 60, "note": "the nightly check"})
    plane.llm.reply("", tool_calls=[book], usage=Usage(input_tokens=1050))
    plane.llm.reply("Booked.", usage=Usage())
    await plane.turn("demo", "book the nightly check")
    assert (await plane.rows.state("demo")).status == "held"
    await plane.send("demo", "still there?")
    await plane.quiet()
    asked = len(plane.llm.requests)
    plane.llm.default_reply = Reply("Here.", usage=Usage(input_tokens=10))

    def lasts() -> list[str]:
        return [r["messages"][-1]["content"] for r in plane.llm.requests[asked:]]

    # Each wake goes through the store first (the day's rows, the bookings):
    # waited for as the turn it starts, not guessed from idle workers.
    turns = plane.bus.subscribe()
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, 1, tzinfo=UTC))
    await plane.until_turn_ends("demo", turns)
    await plane.quiet()
    assert lasts() == ["[arrived 2026-11-29 22:00 UTC, while you were held] still there?"]
    await plane.clock.set(datetime(2026, 11, 30, 0, 10, 1, tzinfo=UTC))
    await plane.until_turn_ends("demo", turns)
    plane.bus.unsubscribe(turns)
    await plane.quiet()
    await plane.clock.set(datetime(2026, 11, 30, 1, tzinfo=UTC))
    await plane.quiet()
    assert len(lasts()) == 2 and "the nightly check" in lasts()[1]
    assert await plane.scheduler.open("demo") == []
