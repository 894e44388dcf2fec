"""A task of the plane's life (the scheduler, the forecasts' watch) that fails
on an error nobody foresaw is said in plane.log and started again, rather
than leaving the plane without it, silently, until a restart."""

import asyncio
import logging
from datetime import timedelta

from plane.wire.protocol import Usage

FAILED = "the plane's scheduler task failed; started again in 0.5 s"


async def test_a_scheduler_that_fails_is_said_and_started_again_and_bookings_come_due(
    start_plane, caplog
):
    plane = await start_plane()
    # A row no plane writes (a store edited by hand): its due is not a time.
    await plane.runtime.db.write(
        lambda conn: conn.execute(
            "INSERT INTO bookings (agent, due, note, booked_at) VALUES"
            " ('demo', 'not a time', 'broken', 'then')"
        )
    )
    with caplog.at_level(logging.ERROR, logger="plane.daemon.server"):
        # Booked: the scheduler reads the bookings again, and meets the row.
        await plane.scheduler.book("demo", plane.clock.now() + timedelta(hours=1), "the check")
        await asyncio.wait_for(said(caplog, FAILED), 10)
    await plane.runtime.db.write(
        lambda conn: conn.execute("DELETE FROM bookings WHERE note = 'broken'")
    )
    plane.llm.reply("Checked.", usage=Usage(input_tokens=10))
    turns = plane.bus.subscribe()
    await plane.clock.advance(timedelta(hours=2))
    said_in_turn = await plane.until_turn_ends("demo", turns)
    plane.bus.unsubscribe(turns)
    assert [m.text for m in said_in_turn if m.kind == "agent"] == ["Checked."]


async def said(caplog, text: str) -> None:
    while text not in [r.getMessage() for r in caplog.records]:  # noqa: ASYNC110 - a log line
        await asyncio.sleep(0.02)
