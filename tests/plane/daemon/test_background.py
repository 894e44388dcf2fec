"""A task of the plane's life (the scheduler, the forecasts' watch) that fails
on an error nobody foresaw is said in plane.log and started again, rather
than leaving the plane without it, silently, until a restart."""

import asyncio
import logging
from datetime import timedelta

from plane.agents.scheduler import Booking
from plane.wire.protocol import Usage

FAILED = "the plane's scheduler task failed; started again in 0.5 s"


async def test_a_scheduler_that_fails_is_said_and_started_again_and_bookings_come_due(
    start_plane, caplog, monkeypatch
):
    plane = await start_plane()
    scheduler = plane.scheduler
    reading = scheduler.open

    async def fails_once(agent: str | None = None) -> list[Booking]:
        """A bug nobody foresaw, met once by the scheduler's read."""
        monkeypatch.setattr(scheduler, "open", reading)
        raise RuntimeError("a bug nobody foresaw")

    monkeypatch.setattr(scheduler, "open", fails_once)
    with caplog.at_level(logging.ERROR, logger="plane.daemon.server"):
        # Booked: the scheduler reads the bookings again, and meets the bug.
        await scheduler.book("demo", plane.clock.now() + timedelta(hours=1), "the check")
        await asyncio.wait_for(said(caplog, FAILED), 10)
    plane.llm.reply("Checked.", usage=Usage(input_tokens=10))
    turns = plane.bus.subscribe()
    await plane.clock.advance(timedelta(hours=2))
    said_in_turn = await plane.until_turn_ends("demo", turns)
    plane.bus.unsubscribe(turns)
    assert [m.text for m in said_in_turn if m.kind == "agent"] == ["Checked."]


async def said(caplog, text: str) -> None:
    while text not in [r.getMessage() for r in caplog.records]:  # noqa: ASYNC110 - a log line
        await asyncio.sleep(0.02)
