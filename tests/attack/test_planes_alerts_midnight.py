"""Attack: the fleet's ceiling holds its agents at 23:59 UTC, and its fold is
told after 00:00 UTC (its claim waited on the store across midnight). The
alert said the new day's figures of a hold the day turning had ended
("$0.00 spent today … in 0m"). A fold's held rows whose hold has ended by
then on the plane's clock are not told held: the day's alert says them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from plane.clock import ManualClock
from tests.support.fleet_alerts import (
    a000_spends,
    claim_waits,
    drained,
    names,
    running_fleet,
    until_rows,
)
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0
BEFORE_MIDNIGHT = datetime(2026, 11, 29, 23, 59, tzinfo=UTC)


async def test_a_fleets_hold_told_after_midnight_is_not_told_held(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    clock = ManualClock(BEFORE_MIDNIGHT)
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    ) as plane:
        await a000_spends(plane)
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
        await drained(plane)
    assert [(h["event"], h["cause"], h["count"]) for h in receiver.hooks()] == [
        ("resumed", "day", FLEET)
    ]
