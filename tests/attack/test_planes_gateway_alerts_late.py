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

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon.alert_claims import StoreClaims
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import drained, other_claims
from tests.support.fleet_members import NOON
from tests.support.gateway_planes import aider_alerting, one_running, shown, spends
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
TODAY = NOON.date()


@pytest.fixture
async def other(postgres_url: str) -> AsyncIterator[StoreClaims]:
    """The claims of another plane of the fleet, on the same store."""
    async with other_claims(postgres_url) as claims:
        yield claims


@pytest.fixture
async def plane(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, str]]:
    """A plane of the fleet with its gateway listening, and aider's key."""
    config, clock = aider_alerting(receiver), ManualClock(NOON)
    async with one_running(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, config, clock
    ) as (running, key):
        yield running, key


async def test_a_plane_late_to_see_a_gateway_agents_hold_end_leaves_its_next_claimed(
    plane, other, receiver
):
    running, key = plane
    watching = running.bus.subscribe()
    await spends(running, key, 1000)  # $1.00 of $1.00: held
    await shown(watching, lambda row: row.status == "held", WITHIN_S)
    await receiver.until_hook("held", WITHIN_S)
    await drained(running)
    # The other plane sees aider's hold, its resume and its next hold; this one, behind, not yet.
    told, first = await other.agent_told("aider", "held", TODAY, "first")
    assert not told and first is not None
    assert await other.agent_freed("aider", "held", first) is True
    assert await other.agent_told("aider", "held", TODAY, "next") == (True, "next")
    await running.send("aider", "/limit 3")
    await shown(watching, lambda row: row.status != "held", WITHIN_S)
    await spends(running, key, 1500)  # $2.50 of $3.00: amber, told after the resume's claim
    await shown(watching, lambda row: row.spend_level == "warn", WITHIN_S)
    await receiver.until_hook("amber", WITHIN_S)
    await drained(running)
    assert [h["event"] for h in receiver.hooks()] == ["held", "amber"]
    assert await other.agent_freed("aider", "held", "next") is True, "its resume told by none"
