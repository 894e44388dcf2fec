"""Attack: a gateway agent (no plane runs it: its own alerts are claimed in
the store the planes share) held by the fleet's ceiling, then by a ceiling
of its own instead, was told nothing of the move: the fleet's resume leaves
it out, so the operator never learned it was still held, by what, until
when. An agent a plane runs is told held in its own sentence then; a
gateway agent is too, once however many planes show the move. Two real
planes on a real PostgreSQL, alerting one real receiver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon.alert_folds import GATHER_S
from plane.daemon.events import Subscription
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import drained
from tests.support.fleet_members import NOON
from tests.support.gateway_planes import call, two_running
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
ASKED = {
    "model": "scripted-model",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 10,
}
OWN = "aider is held: $0.20 spent today, of $0.15 a day."


def config(receiver: Receiver) -> str:
    """aider, a gateway agent of $1 a day, alerting `receiver`."""
    return GATEWAY.replace(
        "aider: {provider: scripted, gateway: {}}",
        "aider: {provider: scripted, gateway: {}, limitUsd: 1}",
    ) + (f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n")


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Planes A and B on one clock, each with its gateway listening, and aider's key."""
    async with two_running(
        tmp_path,
        scripted_llm,
        postgres_url,
        monkeypatch,
        LEASE_S,
        config=config(receiver),
        clock=ManualClock(NOON),
    ) as planes:
        yield planes


async def shown(subscription: Subscription, wanted: Callable[[p.AgentState], bool]) -> None:
    """Until a plane has shown a row of aider that `wanted` accepts."""

    async def one() -> None:
        while (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.name == "aider":
                if wanted(event.agent):
                    return

    await asyncio.wait_for(one(), WITHIN_S)


async def pushed(planes: tuple[RunningPlane, ...], receiver: Receiver, held: int) -> None:
    """Until `held` pushes of a hold have arrived and each plane has told
    what it would (its folds gathered, its queue sent): a second push of
    one event would have come by then."""
    await receiver.until_hook("held", WITHIN_S, count=held)
    await asyncio.sleep(6 * GATHER_S)
    for plane in planes:
        await drained(plane)


async def test_a_gateway_agent_moved_from_the_fleets_hold_to_its_own_is_told_held_once(
    planes: tuple[RunningPlane, RunningPlane, str], receiver: Receiver
):
    a, b, key = planes
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    a.llm.default_reply = Reply("ok", Usage(input_tokens=200))  # $0.20
    assert (await call(a, key, ASKED)).status_code == 200
    await a.send("aider", "/limit fleet 0.10")
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.hold_reason == "fleet")
    await pushed((a, b), receiver, 1)
    await b.send("aider", "/limit 0.15")  # under the $0.20 it spent: its own ceiling holds it
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.status == "held" and row.hold_reason != "fleet")
    await pushed((a, b), receiver, 2)
    told = [(h["event"], h["cause"], h["agent"]) for h in receiver.hooks()]
    assert [t for t in told if t[1] == "agent"] == [("held", "agent", "aider")], told
    [own] = [h for h in receiver.hooks() if h["cause"] == "agent"]
    assert own["text"].startswith(OWN), own["text"]
