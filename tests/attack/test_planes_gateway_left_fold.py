"""Attack: a gateway agent (no plane runs it: its own alerts are claimed in
the store the planes share) held by the fleet's ceiling, then by a ceiling
of its own instead, was told nothing of the move: the fleet's resume leaves
it out, so the operator never learned it was still held, by what, until
when. An agent a plane runs is told held in its own sentence then; a
gateway agent is too, once however many planes show the move. Two real
planes on a real PostgreSQL, alerting one real receiver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import settled
from tests.support.gateway_planes import aider_alerting, at_noon, shown, spends
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
OWN = "aider is held: $0.20 spent today, of $0.15 a day."


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Planes A and B on one clock, each with its gateway listening, and aider's key."""
    async with at_noon(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, aider_alerting(receiver)
    ) as planes:
        yield planes


async def test_a_gateway_agent_moved_from_the_fleets_hold_to_its_own_is_told_held_once(
    planes: tuple[RunningPlane, RunningPlane, str], receiver: Receiver
):
    a, b, key = planes
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    await spends(a, key, 200)  # $0.20
    await a.send("aider", "/limit fleet 0.10")
    for subscription in (on_a, on_b):
        await shown(subscription, lambda row: row.hold_reason == "fleet", WITHIN_S)
    await settled((a, b), receiver, "held", WITHIN_S)
    await b.send("aider", "/limit 0.15")  # under the $0.20 it spent: its own ceiling holds it
    for subscription in (on_a, on_b):
        await shown(
            subscription, lambda row: row.status == "held" and row.hold_reason != "fleet", WITHIN_S
        )
    await settled((a, b), receiver, "held", WITHIN_S, count=2)
    told = [(h["event"], h["cause"], h["agent"]) for h in receiver.hooks()]
    assert [t for t in told if t[1] == "agent"] == [("held", "agent", "aider")], told
    [own] = [h for h in receiver.hooks() if h["cause"] == "agent"]
    assert own["text"].startswith(OWN), own["text"]
