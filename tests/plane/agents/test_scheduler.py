"""Bookings on each engine (a real SQLite file, a real PostgreSQL): the
ambient turn is booked once."""

import asyncio
import logging
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

from plane.agents.scheduler import Scheduler
from plane.clock import ManualClock
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


async def test_an_ambient_turn_asked_for_twice_at_once_is_booked_once(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        scheduler = Scheduler(db, ManualClock(NOON), wake=lambda agent: None)
        every = timedelta(minutes=5)
        await asyncio.gather(*(scheduler.keep_ambient("demo", every, "look") for _ in range(4)))
        [booking] = await scheduler.open("demo")
        assert booking.ambient and booking.due == NOON + every
    finally:
        await db.close()


async def test_an_agent_with_nothing_booked_is_read_once_not_before_and_after_each_turn(
    tmp_path,
):
    db = await open_db(tmp_path / "plane.db")
    try:
        scheduler = Scheduler(db, ManualClock(NOON), wake=lambda agent: None, only_writer=True)
        reads = db.counts.reads
        for _ in range(4):
            assert await scheduler.due("demo") == []
        assert db.counts.reads - reads == 1
    finally:
        await db.close()


async def test_what_is_booked_after_a_read_comes_due_all_the_same(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(NOON)
        scheduler = Scheduler(db, clock, wake=lambda agent: None, only_writer=True)
        assert await scheduler.due("demo") == []  # nothing booked: remembered
        soon = await scheduler.book("demo", NOON + timedelta(minutes=5), "look")
        await scheduler.keep_ambient("demo", timedelta(minutes=10), "ambient")
        assert await scheduler.due("demo") == []  # not yet: remembered until 12:05
        reads = db.counts.reads
        assert await scheduler.due("demo") == []
        assert db.counts.reads == reads
        await clock.advance(timedelta(minutes=5))
        assert [b.id for b in await scheduler.due("demo")] == [soon.id]
        await scheduler.done([soon])
        assert await scheduler.due("demo") == []
        await clock.advance(timedelta(minutes=5))
        [ambient] = await scheduler.due("demo")
        assert ambient.ambient
    finally:
        await db.close()


async def test_the_agents_with_a_booking_due_are_read_for_the_fleet_in_one_query(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(NOON)
        scheduler = Scheduler(db, clock, wake=lambda agent: None)
        await scheduler.book("early", NOON - timedelta(minutes=1), "look")
        await scheduler.book("now", NOON, "look")
        await scheduler.book("later", NOON + timedelta(hours=1), "look")
        taken = await scheduler.book("taken", NOON - timedelta(hours=1), "look")
        await scheduler.done([taken])
        reads = db.counts.reads
        assert await scheduler.due_agents() == {"early", "now"}
        assert db.counts.reads - reads == 1
        await clock.advance(timedelta(hours=1))
        assert await scheduler.due_agents() == {"early", "now", "later"}
    finally:
        await db.close()


async def test_the_scheduler_stops_when_cancelled_at_any_step_of_waking_up(tmp_path):
    """A plane's stop cancels the scheduler; cancelled while it was putting
    away its waits (a booking had just woken it), it swallowed the
    cancellation as theirs, slept again, and the stop waited forever."""
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(NOON)
        for steps in range(12):  # one of these lands in each await of the wake-up
            scheduler = Scheduler(db, clock, wake=lambda agent: None)
            await scheduler.book("demo", NOON + timedelta(hours=1), "later")
            running = asyncio.create_task(scheduler.run())
            for _ in range(20):  # asleep until the booking comes due
                await asyncio.sleep(0)
            await scheduler.book("demo", NOON + timedelta(hours=2), "wakes it")
            for _ in range(steps):
                await asyncio.sleep(0)
            running.cancel()
            await asyncio.wait([running], timeout=5)
            assert running.cancelled(), f"still running after a cancel {steps} steps in"
    finally:
        await db.close()


async def test_the_scheduler_is_caught_up_only_once_a_booking_due_has_woken_its_agent(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    clock = ManualClock(NOON)
    woken = asyncio.Event()
    scheduler = Scheduler(db, clock, wake=lambda agent: woken.set())
    run = asyncio.create_task(scheduler.run())

    async def caught_up() -> None:
        while not scheduler.caught_up():  # noqa: ASYNC110 - a state, not an event
            await asyncio.sleep(0.001)

    try:
        await scheduler.book("demo", NOON + timedelta(hours=1), "later")
        assert not scheduler.caught_up(), "a booking made: not read yet"
        await asyncio.wait_for(caught_up(), 10)
        await clock.advance(timedelta(hours=2))
        assert not scheduler.caught_up(), "due now, its agent not woken yet"
        await asyncio.wait_for(woken.wait(), 10)
        assert scheduler.caught_up()
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await db.close()


async def test_bookings_that_could_not_be_read_are_read_again_and_still_come_due(tmp_path, caplog):
    """A failed read of the bookings (the store away, say) ends no booking,
    nor the scheduler: it reads them again, and what was due wakes its agent."""
    db = await open_db(tmp_path / "plane.db")
    clock = ManualClock(NOON)
    woken = asyncio.Event()
    scheduler = Scheduler(db, clock, wake=lambda agent: woken.set())
    await scheduler.book("demo", NOON + timedelta(hours=1), "later")
    await db.write(lambda conn: conn.execute("ALTER TABLE bookings RENAME TO bookings_gone"))
    await clock.advance(timedelta(hours=2))
    run = asyncio.create_task(scheduler.run())

    async def refused() -> None:
        said = "the bookings could not be read"
        while not run.done() and not any(said in r.getMessage() for r in caplog.records):  # noqa: ASYNC110 - a log line, not an event
            await asyncio.sleep(0.01)

    try:
        with caplog.at_level(logging.WARNING, logger="plane.agents.scheduler"):
            await asyncio.wait_for(refused(), 10)
            assert not run.done(), "the scheduler ended with the read"
            await db.write(
                lambda conn: conn.execute("ALTER TABLE bookings_gone RENAME TO bookings")
            )
            await asyncio.wait_for(woken.wait(), 10)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await db.close()


@pytest.mark.parametrize("due", ["not a time", "2026-11-29T11:00:00", "1"])
async def test_a_booking_that_cannot_be_read_is_said_once_and_the_others_come_due(
    tmp_path, caplog, due
):
    """A row no plane writes (a store edited by hand: a due that is no time,
    or no time zone's) is left aside and said in the log once; before, it
    failed every read of the bookings, and no booking came due again."""
    db = await open_db(tmp_path / "plane.db")
    clock = ManualClock(NOON)
    woken: list[str] = []
    scheduler = Scheduler(db, clock, wake=woken.append)
    await db.write(
        lambda conn: conn.execute(
            "INSERT INTO bookings (agent, due, note, booked_at) VALUES ('odd', ?, 'x', ?)",
            (due, NOON.isoformat()),
        )
    )
    await scheduler.book("demo", NOON - timedelta(minutes=1), "due now")
    await scheduler.book("later", NOON + timedelta(hours=1), "later")
    run = asyncio.create_task(scheduler.run())

    async def woke(agent: str) -> None:
        while agent not in woken and not run.done():  # noqa: ASYNC110 - a list, not an event
            await asyncio.sleep(0.01)

    try:
        with caplog.at_level(logging.WARNING, logger="plane.agents.scheduler"):
            assert await scheduler.due_agents() == {"demo"}
            await asyncio.wait_for(woke("demo"), 10)
            assert [b.agent for b in await scheduler.open()] == ["demo", "later"]
            await clock.advance(timedelta(hours=2))
            await asyncio.wait_for(woke("later"), 10)
            assert not run.done(), "the scheduler ended"
        said = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
        assert len(said) == 1, said
        assert "odd" in said[0] and repr(due) in said[0]
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await db.close()


async def test_a_month_of_bookings_taken_leaves_only_the_open_ones_in_the_store(tmp_path):
    """An agent that books its own next turn every hour: each booking taken
    is gone from the store (no reader reads a taken one again), not a row an
    hour for as long as the plane runs; the newest taken one stays until the
    next is taken (a booking's id is never given twice)."""
    db = await open_db(tmp_path / "plane.db")
    try:
        clock = ManualClock(NOON)
        scheduler = Scheduler(db, clock, wake=lambda agent: None, only_writer=True)
        for _ in range(24 * 30):
            await scheduler.book("demo", clock.now() + timedelta(hours=1), "look again")
            await clock.advance(timedelta(hours=1))
            due = await scheduler.due("demo")
            assert len(due) == 1
            await scheduler.done(due)
        last = await scheduler.book("demo", clock.now() + timedelta(hours=1), "look again")
        assert [b.id for b in await scheduler.open("demo")] == [last.id]
        [(rows,)] = await db.fetchall("SELECT COUNT(*) FROM bookings")
        assert rows == 2
    finally:
        await db.close()


@pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)  # memory: either store's
async def test_weeks_of_bookings_woken_for_leave_the_scheduler_no_bigger(tmp_path):
    """An agent that books its own next turn every hour, each woken for and
    taken: what the running scheduler allocated and still holds after five
    weeks of them is what it held after one (the store's own bounded caches
    full by then), not a booking's worth more for each turn."""
    db = await open_db(tmp_path / "plane.db")
    clock = ManualClock(NOON)
    woke: asyncio.Queue[str] = asyncio.Queue()
    scheduler = Scheduler(db, clock, wake=woke.put_nowait, only_writer=True)
    run = asyncio.create_task(scheduler.run())
    here = [tracemalloc.Filter(True, "*/plane/agents/scheduler.py")]

    async def hours(count: int) -> int:
        for _ in range(count):
            await scheduler.book("demo", clock.now() + timedelta(hours=1), "look again")
            await clock.advance(timedelta(hours=1))
            assert await asyncio.wait_for(woke.get(), 10) == "demo"
            await scheduler.done(await scheduler.due("demo"))
        snapshot = tracemalloc.take_snapshot().filter_traces(here)
        return sum(stat.size for stat in snapshot.statistics("filename"))

    tracemalloc.start()
    try:
        after_a_week = await hours(24 * 7)
        after_five = await hours(24 * 28)
        assert after_five - after_a_week < 4096, (after_a_week, after_five)
    finally:
        tracemalloc.stop()
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await db.close()
