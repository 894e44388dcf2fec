"""Attack: an agent renamed while it is held, then freed. Its alerts follow
it under its new name: its own resume, and a fleet's resume counts and
names it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import fleet_config, names, until_rows

FLEET = 3


async def made(plane: RunningPlane, name: str) -> None:
    """An agent made at the plane (one from agents.yaml is renamed there)."""
    await plane.runtime.api.handle(p.NewAgent(name=name, model="scripted-model"))


async def test_an_agent_renamed_while_held_by_its_ceiling_is_told_resumed(start_plane, receiver):
    plane = await start_plane(fleet_config(receiver, FLEET))
    await made(plane, "made")
    subscription = plane.bus.subscribe()
    await plane.send("made", "/limit 0")
    await until_rows(subscription, ["made"], lambda row: row.status == "held")
    await receiver.until_hook("held")
    await plane.runtime.api.handle(p.RenameAgent(agent="made", new_name="scout"))
    await plane.send("scout", "/limit 20")
    await until_rows(subscription, ["scout"], lambda row: row.status != "held")
    await receiver.until_hook("resumed")
    assert [(h["event"], h["agent"]) for h in receiver.hooks()] == [
        ("held", "made"),
        ("resumed", "scout"),
    ]


@pytest.mark.slow
async def test_an_agent_renamed_while_the_fleet_holds_it_is_told_with_the_fleet(
    start_plane, receiver
):
    plane = await start_plane(fleet_config(receiver, FLEET))
    await made(plane, "made")
    plane.llm.reply("done", usage=Usage(input_tokens=200))
    await plane.turn("a000", "spend")
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet 0.10")
    await until_rows(subscription, [*names(FLEET), "made"], lambda row: row.status == "held")
    await receiver.until_hook("held")
    await plane.runtime.api.handle(p.RenameAgent(agent="made", new_name="scout"))
    await plane.send("a001", "/limit fleet off")
    await until_rows(subscription, [*names(FLEET), "scout"], lambda row: row.status != "held")
    await plane.clock.advance(timedelta(minutes=1))
    await receiver.until_hook("resumed")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    assert [(h["event"], h["count"], h["agents"]) for h in receiver.hooks()] == [
        ("held", FLEET + 1, [*names(FLEET), "made"]),
        ("resumed", FLEET + 1, [*names(FLEET), "scout"]),
    ]
