"""Attack: on PostgreSQL (claims in `alerts_told`), an agent renamed while
the fleet's ceiling holds it. Its claim stayed under its old name: the
fleet's resume found none under its new name and left it out (3 agents told
resumed of 4). A rename moves its claims; a delete drops them."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.wire import protocol as p
from tests.support.approving import rows
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import a000_spends, drained, names, running_fleet, until_rows
from tests.support.fleet_members import NOON
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0


async def held_by_the_fleet(plane: RunningPlane, receiver: Receiver, agents: list[str]) -> None:
    """a000 spends $0.20, then the fleet's ceiling is set under it: until
    `agents` are held and the fleet's alert has arrived."""
    await a000_spends(plane)
    watching = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet 0.10")
    await until_rows(watching, agents, lambda row: row.hold_reason == "fleet")
    await receiver.until_hook("held")


async def test_an_agent_renamed_while_the_fleet_holds_it_is_told_resumed_by_the_fleet(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    clock = ManualClock(NOON)
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    ) as plane:
        await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model"))
        await held_by_the_fleet(plane, receiver, [*names(FLEET), "made"])
        await plane.runtime.api.handle(p.RenameAgent(agent="made", new_name="scout"))
        watching = plane.bus.subscribe()
        await plane.send("a001", "/limit fleet off")
        await until_rows(watching, [*names(FLEET), "scout"], lambda row: row.status != "held")
        await clock.advance(timedelta(minutes=1))
        await receiver.until_hook("resumed")
        await drained(plane)
    assert [(h["event"], h["count"], h["agents"]) for h in receiver.hooks()] == [
        ("held", FLEET + 1, [*names(FLEET), "made"]),
        ("resumed", FLEET + 1, [*names(FLEET), "scout"]),
    ]


async def test_a_deleted_agents_claims_go_with_it(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, ManualClock(NOON), monkeypatch, postgres_url
    ) as plane:
        await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model"))
        await held_by_the_fleet(plane, receiver, [*names(FLEET), "made"])
        await plane.runtime.api.handle(p.DeleteAgent(agent="made"))
        told = await rows(plane, "SELECT agent FROM alerts_told WHERE cause = 'fleet'")
    assert sorted(agent for (agent,) in told) == names(FLEET)
