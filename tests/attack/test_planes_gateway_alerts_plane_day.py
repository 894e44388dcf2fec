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
from plane.daemon import fleet
from plane.gateway.keys import Keys
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane, launch
from tests.support.fleet_alerts import drained
from tests.support.gateway_planes import call
from tests.support.scripted_llm import Reply, ScriptedLLM

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
ASKED = {
    "model": "scripted-model",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 10,
}


def config(receiver: Receiver) -> str:
    """aider, a gateway agent of $1 a day, alerting `receiver`."""
    return GATEWAY.replace(
        "aider: {provider: scripted, gateway: {}}",
        "aider: {provider: scripted, gateway: {}, limitUsd: 1}",
    ) + (f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n")


@pytest.fixture
async def plane(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, str]]:
    """A plane of the fleet at 00:30 UTC, its gateway listening, and aider's key."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    text = config(receiver).replace("{anthropic_url}", scripted_llm.anthropic_url)
    clock = ManualClock(AFTER_MIDNIGHT)
    running = await launch(tmp_path, scripted_llm, text, clock, http=("127.0.0.1", 0))
    try:
        yield running, Keys(running.home.gateway_keys).make("aider")
    finally:
        scripted_llm.hang_up()
        await running.stop()


async def test_a_gateway_agents_hold_after_the_clock_stepped_back_names_the_planes_day(
    plane, receiver, postgres_url
):
    running, key = plane
    assert await running.services.ledger.today() == AFTER_MIDNIGHT.date()
    with psycopg.connect(postgres_url) as other:
        other.execute(TOLD_BEFORE)
    await running.clock.set(A_MOMENT_BACK)
    assert running.services.ledger.day() == AFTER_MIDNIGHT.date(), "the plane's day went back"
    running.llm.default_reply = Reply("ok", Usage(input_tokens=1000))  # $1.00 of $1.00: held
    answer = await call(running, key, ASKED)
    assert answer.status_code == 200, answer.text
    await receiver.until_hook("held", WITHIN_S)
    await drained(running)
    assert [h["event"] for h in receiver.hooks()] == ["held"]
