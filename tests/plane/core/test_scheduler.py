"""Bookings on each engine (a real SQLite file, a real PostgreSQL): the
ambient turn is booked once."""

import asyncio
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
