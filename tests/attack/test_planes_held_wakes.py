"""A steady renewal leaves asleep the agents a ceiling holds still, each
with a message waiting: on a real PostgreSQL, a real plane running every
agent, held by `/limit fleet 0`, by each agent's own `/limit 0`, or by
their group's `/limit group research 0`. Before, each was woken at every
renewal, asked the gate, found itself held and slept again: at 10,000
agents, most of ten CPU-seconds every renewal, for nothing. The fleet's
ceiling lifted on another plane's connection with its notice lost (no
plane told) frees them all the same: the plane's next renewal reads the
ceilings again, wakes them, and they answer what waited."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plane.daemon import fleet
from plane.money.ceilings import Ceilings
from plane.store.postgres import PostgresDatabase
from tests.support.fixtures_plane import RunningPlane, launch, scripted_config
from tests.support.fleet_members import runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n:03}" for n in range(6)]

DEADLINE_S = 30.0


async def until_told(plane: RunningPlane, agents: list[str]) -> None:
    """Until each of `agents` has been told of its hold (its look found it held)."""
    async with asyncio.timeout(DEADLINE_S):
        while await plane.services.conversation.told_holds() != set(agents):  # noqa: ASYNC110 - the store's
            await asyncio.sleep(0.02)


async def until_answered(plane: RunningPlane) -> None:
    """Until no message waits for any agent."""
    async with asyncio.timeout(DEADLINE_S):
        while await plane.services.conversation.waiting_counts():  # noqa: ASYNC110 - the store's
            await asyncio.sleep(0.02)


async def hold_fleet(plane: RunningPlane) -> None:
    await plane.send(AGENTS[0], "/limit fleet 0")


async def lift_fleet(ceilings: Ceilings) -> None:
    await ceilings.set_fleet(None)


async def hold_each(plane: RunningPlane) -> None:
    for agent in AGENTS:
        await plane.send(agent, "/limit 0")


async def lift_each(ceilings: Ceilings) -> None:
    for agent in AGENTS:
        await ceilings.set(agent, None)


async def hold_group(plane: RunningPlane) -> None:
    await plane.send(AGENTS[0], f"/limit group {GROUP} 0")


async def lift_group(ceilings: Ceilings) -> None:
    await ceilings.set_group(GROUP, None)


GROUP = "research"
GROUPS = f"groups:\n  {GROUP}:\n    limitUsd: 1000\n    agents: [{', '.join(AGENTS)}]\n"
"""Every agent in one group (agents.yaml's `groups:`)."""

CEILINGS = {
    "the fleet's": (hold_fleet, lift_fleet),
    "each agent's own": (hold_each, lift_each),
    "their group's": (hold_group, lift_group),
}
"""How the agents are held (on the plane), and how the hold is lifted (on another's connection)."""


@pytest.mark.parametrize(("hold", "lift"), CEILINGS.values(), ids=CEILINGS.keys())
async def test_a_renewal_leaves_agents_held_still_asleep_and_wakes_them_once_freed(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url, hold, lift
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", 120.0)  # no renewal but the test's
    agents = "".join(f"  {n}: {{}}\n" for n in AGENTS)
    a = await launch(tmp_path / "a", scripted_llm, scripted_config(agents, more=GROUPS))
    other = await PostgresDatabase.connect(postgres_url, migrate=False)
    try:
        await asyncio.wait_for(runs(a, AGENTS[-1]), DEADLINE_S)
        renewals = a.runtime.fleet
        assert renewals is not None
        await hold(a)
        for agent in AGENTS:
            await a.send(agent, f"are you there, {agent}?")
        await until_told(a, AGENTS)
        await a.quiet()
        await renewals.tick()  # the ceiling's change read: everyone woken once more
        await a.quiet()

        woken: list[str] = []
        wake = renewals.wake

        def counted(agent: str) -> None:
            woken.append(agent)
            wake(agent)

        renewals.wake = counted
        await renewals.tick()
        await a.quiet()
        assert woken == [], "agents held still, woken to find the same hold"
        assert set(await a.services.conversation.waiting_counts()) == set(AGENTS)

        # Lifted on another plane's connection, and no plane told: the renewal reads it.
        await lift(Ceilings(other, a.services.clock))
        await renewals.tick()
        assert sorted(woken) == AGENTS, "the agents freed, woken by the renewal"
        await until_answered(a)
    finally:
        scripted_llm.hang_up()
        await a.stop()
        await other.close()
