"""Attack: on PostgreSQL, the day turns while the fleet's ceiling holds its
agents, and the plane stops while its claim of the day's alert waits on the
store. The alert was cancelled with it, neither sent nor written to the
log (before: nothing at all); now its sentence is logged, as a fold's is."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from plane.clock import ManualClock
from tests.support.fleet_alerts import a000_spends, claim_waits, launch_fleet, names, until_rows
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0
EVENING = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
UNSENT = (
    "alert not sent (the plane stopped): 3 agents have resumed at 00:00 UTC, the new day's"
    f" spend starting from $0.00 ({', '.join(names(FLEET))})."
)


async def logged(caplog: pytest.LogCaptureFixture, message: str) -> None:
    """Until `message` is in the plane's log."""
    async with asyncio.timeout(WITHIN_S):
        while message not in [r.getMessage() for r in caplog.records]:  # noqa: ASYNC110 - a log line
            await asyncio.sleep(0.02)


async def test_the_days_alert_the_plane_stopped_before_it_was_claimed_is_logged(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver, caplog
):
    caplog.set_level(logging.ERROR)
    clock = ManualClock(EVENING)
    plane = await launch_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    )
    stopping: asyncio.Task[None] | None = None
    try:
        await a000_spends(plane)
        watching = plane.bus.subscribe()
        await plane.send("a001", "/limit fleet 0.10")
        await until_rows(watching, names(FLEET), lambda row: row.status == "held")
        await receiver.until_hook("held", WITHIN_S)
        with psycopg.connect(postgres_url) as holding:
            try:
                holding.execute("LOCK TABLE alerts_told IN SHARE MODE")
                await clock.advance(timedelta(hours=2))
                await claim_waits(postgres_url)
                stopping = asyncio.create_task(plane.stop())
                await logged(caplog, UNSENT)
            finally:
                holding.rollback()
    finally:
        scripted_llm.hang_up()
        await (stopping if stopping is not None else plane.stop())
    assert [h["event"] for h in receiver.hooks()] == ["held"]
