"""Attack: on PostgreSQL, a plane a step behind another, of a gateway
agent's own hold (its claims in `alerts_told`, `agent held`). This plane
told aider held; the other plane, ahead, saw it resume and be held again
the same day (its own claims), while this plane still showed the first
hold. Seeing that hold end, this plane's delete took the next hold's claim,
whatever hold it was: it told aider resumed a second time, and the next
hold's resume was then told by no plane. Each claim is stamped with its
hold: this plane ends the one it claimed, which is gone, and leaves the
next."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon import fleet
from plane.daemon.alert_claims import StoreClaims
from plane.daemon.events import Subscription
from plane.gateway.keys import Keys
from plane.store.postgres import PostgresDatabase
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane, launch
from tests.support.fleet_alerts import drained
from tests.support.fleet_members import NOON
from tests.support.gateway_planes import call
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
TODAY = NOON.date()
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
async def other(postgres_url: str) -> AsyncIterator[StoreClaims]:
    """The claims of another plane of the fleet, on the same store."""
    db = await PostgresDatabase.connect(postgres_url)
    try:
        yield StoreClaims(db, "other")
    finally:
        await db.close()


@pytest.fixture
async def plane(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, str]]:
    """A plane of the fleet with its gateway listening, and aider's key."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    text = config(receiver).replace("{anthropic_url}", scripted_llm.anthropic_url)
    running = await launch(tmp_path, scripted_llm, text, ManualClock(NOON), http=("127.0.0.1", 0))
    try:
        yield running, Keys(running.home.gateway_keys).make("aider")
    finally:
        scripted_llm.hang_up()
        await running.stop()


async def shown(subscription: Subscription, wanted: Callable[[p.AgentState], bool]) -> None:
    """Until the plane has shown a row of aider that `wanted` accepts."""

    async def one() -> None:
        while (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.name == "aider":
                if wanted(event.agent):
                    return

    await asyncio.wait_for(one(), WITHIN_S)


async def spends(plane: RunningPlane, key: str, tokens: int) -> None:
    """One call of aider's, costing `tokens` thousandths of a dollar."""
    plane.llm.default_reply = Reply("ok", Usage(input_tokens=tokens))
    answer = await call(plane, key, ASKED)
    assert answer.status_code == 200, answer.text


async def test_a_plane_late_to_see_a_gateway_agents_hold_end_leaves_its_next_claimed(
    plane, other, receiver
):
    running, key = plane
    watching = running.bus.subscribe()
    await spends(running, key, 1000)  # $1.00 of $1.00: held
    await shown(watching, lambda row: row.status == "held")
    await receiver.until_hook("held", WITHIN_S)
    await drained(running)
    # The other plane sees aider's hold, its resume and its next hold; this one, behind, not yet.
    told, first = await other.agent_told("aider", "held", TODAY, "first")
    assert not told and first is not None
    assert await other.agent_freed("aider", "held", first) is True
    assert await other.agent_told("aider", "held", TODAY, "next") == (True, "next")
    await running.send("aider", "/limit 3")
    await shown(watching, lambda row: row.status != "held")
    await spends(running, key, 1500)  # $2.50 of $3.00: amber, told after the resume's claim
    await shown(watching, lambda row: row.spend_level == "warn")
    await receiver.until_hook("amber", WITHIN_S)
    await drained(running)
    assert [h["event"] for h in receiver.hooks()] == ["held", "amber"]
    assert await other.agent_freed("aider", "held", "next") is True, "its resume told by none"
