"""Attack: the fleet's ceiling holds its agents at 23:59 UTC, and its fold is
told after 00:00 UTC (its claim waited on the store across midnight). The
alert said the new day's figures of a hold the day turning had ended
("$0.00 spent today … in 0m"). A fold's held rows whose hold has ended by
then on the plane's clock are not told held: the day's alert says them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from plane.clock import ManualClock
from plane.daemon import fleet
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import launch
from tests.support.fleet_alerts import fleet_config, names, until_rows
from tests.support.fleet_members import runs
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0
BEFORE_MIDNIGHT = datetime(2026, 11, 29, 23, 59, tzinfo=UTC)
CLAIM_WAITS = (
    "SELECT COUNT(*) FROM pg_locks WHERE relation = 'alerts_told'::regclass AND NOT granted"
)


async def claim_waits(url: str) -> None:
    """Until a plane's claim waits to write into `alerts_told`, which the test holds."""
    with psycopg.connect(url, autocommit=True) as watcher:
        async with asyncio.timeout(WITHIN_S):
            while watcher.execute(CLAIM_WAITS).fetchone() == (0,):  # noqa: ASYNC110 - the store
                await asyncio.sleep(0.02)


async def test_a_fleets_hold_told_after_midnight_is_not_told_held(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", 3.0)
    clock = ManualClock(BEFORE_MIDNIGHT)
    plane = await launch(tmp_path, scripted_llm, fleet_config(receiver, FLEET), clock)
    try:
        await asyncio.wait_for(runs(plane, "a000"), WITHIN_S)
        plane.llm.reply("done", usage=Usage(input_tokens=200))
        await plane.turn("a000", "spend")
        watching = plane.bus.subscribe()
        with psycopg.connect(postgres_url) as holding:
            try:
                holding.execute("LOCK TABLE alerts_told IN SHARE MODE")
                await plane.send("a001", "/limit fleet 0.10")
                await until_rows(watching, names(FLEET), lambda row: row.status == "held")
                await claim_waits(postgres_url)
                await clock.advance(timedelta(minutes=2))
            finally:
                holding.rollback()
        await receiver.until_hook("resumed", WITHIN_S)
        assert plane.runtime.notifier is not None
        await plane.runtime.notifier.drained()
    finally:
        scripted_llm.hang_up()
        await plane.stop()
    assert [(h["event"], h["cause"], h["count"]) for h in receiver.hooks()] == [
        ("resumed", "day", FLEET)
    ]
