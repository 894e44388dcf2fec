"""Attack: on PostgreSQL, a plane whose clock stepped back a moment across
00:00 UTC (23:59:50 after 00:00:30): its day stays the new one, as its
ledger's does (`plane.money.plane_day`). The fleet's hold claimed then
named the clock's date, the day before: the fleet's hold another plane had
told that day, whose end no plane saw, was not taken over as a day
before's is, and the new day's hold was told by no plane. Each claim names
the plane's day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from plane.clock import ManualClock
from tests.support.fleet_alerts import a000_spends, drained, names, running_fleet, until_rows
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0
AFTER_MIDNIGHT = datetime(2026, 11, 30, 0, 0, 30, tzinfo=UTC)
A_MOMENT_BACK = AFTER_MIDNIGHT - timedelta(seconds=40)
TOLD_BEFORE = (
    "INSERT INTO alerts_told (cause, agent, day, plane)"
    " SELECT 'fleet', agent, '2026-11-29', 'other' FROM unnest(%s::text[]) AS told (agent)"
)
"""The fleet's hold of its agents, told by another plane the day before; no
plane saw it end."""


async def test_the_fleets_hold_after_the_clock_stepped_back_names_the_planes_day(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    clock = ManualClock(AFTER_MIDNIGHT)
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    ) as plane:
        await a000_spends(plane)
        with psycopg.connect(postgres_url) as other:
            other.execute(TOLD_BEFORE, (names(FLEET),))
        await clock.set(A_MOMENT_BACK)
        assert plane.services.ledger.day() == AFTER_MIDNIGHT.date(), "the plane's day went back"
        watching = plane.bus.subscribe()
        await plane.send("a002", "/limit fleet 0.10")
        await until_rows(watching, names(FLEET), lambda row: row.hold_reason == "fleet")
        await receiver.until_hook("held", WITHIN_S)
        await drained(plane)
    assert [(h["event"], h["agents"]) for h in receiver.hooks()] == [("held", names(FLEET))]
