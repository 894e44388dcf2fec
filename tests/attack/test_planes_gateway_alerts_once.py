"""A gateway agent's alerts, once however many planes share the store: two
real planes on a real PostgreSQL, each with its gateway on a real port,
alerting one real receiver. No plane runs a gateway agent (its client makes
its calls, through any plane), so every plane that showed its row turn
held, resumed or amber pushed it: two planes, two pushes for one event. The
plane whose claim in the store takes the event pushes it; a hold after a
resume is a new event, pushed once again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from plane.daemon.events import Subscription
from plane.wire import protocol as p
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import settled
from tests.support.gateway_planes import aider_alerting, at_noon, shown, spends
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Planes A and B on one clock, each with its gateway listening, and aider's key."""
    async with at_noon(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, aider_alerting(receiver)
    ) as planes:
        yield planes


async def freed(subscription: Subscription) -> None:
    """Until a plane has shown the day turning free aider."""

    async def one() -> None:
        while (event := await subscription.next()) is not None:
            if isinstance(event, p.DayRolled) and any(
                row.name == "aider" and row.status != "held" for row in event.snapshot.agents
            ):
                return

    await asyncio.wait_for(one(), WITHIN_S)


def pushes(receiver: Receiver) -> list[str]:
    return [h["event"] for h in receiver.hooks()]


async def test_a_gateway_agents_hold_resume_and_hold_again_are_each_one_push(planes, receiver):
    a, b, key = planes
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    await spends(a, key, 1000)  # $1.00 of $1.00
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.status == "held", WITHIN_S)
    await settled((a, b), receiver, "held", WITHIN_S)
    assert pushes(receiver) == ["held"]
    await b.send("aider", "/limit 3")
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.status != "held", WITHIN_S)
    await settled((a, b), receiver, "resumed", WITHIN_S)
    assert pushes(receiver) == ["held", "resumed"]
    await spends(b, key, 1500)  # $2.50 of $3.00: amber
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.spend_level == "warn", WITHIN_S)
    await settled((a, b), receiver, "amber", WITHIN_S)
    await spends(a, key, 1000)  # $3.50 of $3.00: held again, the same day
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.status == "held", WITHIN_S)
    await settled((a, b), receiver, "held", WITHIN_S)
    assert pushes(receiver) == ["held", "resumed", "amber", "held"]


async def test_midnight_freeing_a_gateway_agent_is_one_push(planes, receiver):
    a, b, key = planes
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    await spends(b, key, 1000)  # $1.00 of $1.00
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.status == "held", WITHIN_S)
    await settled((a, b), receiver, "held", WITHIN_S)
    await a.clock.advance(timedelta(hours=12))  # 00:00 UTC, on both planes' clock
    for subscription in (on_a, on_b):
        await freed(subscription)
    await settled((a, b), receiver, "resumed", WITHIN_S)
    assert pushes(receiver) == ["held", "resumed"]
