"""Attack: on PostgreSQL, a plane whose clock stepped back a moment across
00:00 UTC (23:59:50 after 00:00:30): its day stays the new one, as its
ledger's does (`plane.money.plane_day`). A gateway agent's hold claimed
then named the clock's date, the day before: the hold of it another plane
had told that day, whose end no plane saw, was not taken over as a day
before's is, and the new day's hold was told by no plane. Each claim names
the plane's day."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from plane.clock import ManualClock
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import drained
from tests.support.gateway_planes import aider_alerting, one_running, spends
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
AFTER_MIDNIGHT = datetime(2026, 11, 30, 0, 0, 30, tzinfo=UTC)
A_MOMENT_BACK = AFTER_MIDNIGHT - timedelta(seconds=40)
TOLD_BEFORE = (
    "INSERT INTO alerts_told (cause, agent, day, plane)"
    " VALUES ('agent held', 'aider', '2026-11-29', 'other')"
)
"""aider's hold, told by another plane the day before; no plane saw it end."""


@pytest.fixture
async def plane(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, str]]:
    """A plane of the fleet at 00:30 UTC, its gateway listening, and aider's key."""
    config, clock = aider_alerting(receiver), ManualClock(AFTER_MIDNIGHT)
    async with one_running(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, config, clock
    ) as (running, key):
        yield running, key


async def test_a_gateway_agents_hold_after_the_clock_stepped_back_names_the_planes_day(
    plane, receiver, postgres_url
):
    running, key = plane
    assert await running.services.ledger.today() == AFTER_MIDNIGHT.date()
    with psycopg.connect(postgres_url) as other:
        other.execute(TOLD_BEFORE)
    await running.clock.set(A_MOMENT_BACK)
    assert running.services.ledger.day() == AFTER_MIDNIGHT.date(), "the plane's day went back"
    await spends(running, key, 1000)  # $1.00 of $1.00: held
    await receiver.until_hook("held", WITHIN_S)
    await drained(running)
    assert [h["event"] for h in receiver.hooks()] == ["held"]
