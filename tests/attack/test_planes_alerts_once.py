"""One event, one push, however many planes share the store: two real
planes on a real PostgreSQL, alerting one real receiver. Each plane shows
every agent's row, so each saw every agent turn amber, held or resumed, and
every fleet's, group's or day's fold, and each pushed it: an operator with
two planes got two pushes for one event (three with three). An agent's own
event is pushed by the plane that runs it; a fleet's, a group's or the day's
by the one plane that claims it first in the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from plane.daemon import fleet
from plane.daemon.events import Subscription
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_alerts import settled, until_rows
from tests.support.fleet_members import NOON, a_then_b
from tests.support.looping import read_again
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
"""A renewal a second: the other plane shows a row within one or two."""
WITHIN_S = 6 * LEASE_S


def config(receiver: Receiver) -> str:
    """demo and scout, $5 a day each, in group research, alerting `receiver`."""
    return (
        scripted_config(
            "  demo: {}\n  scout: {}\n",
            limit_usd="5",
            more="groups:\n  research:\n    limitUsd: 100\n    agents: [demo, scout]\n",
        )
        + f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n"
    )


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Plane A, which runs demo, and plane B, which runs scout, on one clock
    (the first plane lets one of its two agents go to the second)."""
    from plane.clock import ManualClock

    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    a, b = await a_then_b(tmp_path, scripted_llm, config(receiver), WITHIN_S, ManualClock(NOON))
    try:
        await asyncio.wait_for(one_each(a, b), WITHIN_S)
        yield (a, b) if a.services.ownership.owns("demo") else (b, a)
    finally:
        scripted_llm.hang_up()
        await b.stop()
        await a.stop()


async def one_each(a: RunningPlane, b: RunningPlane) -> None:
    """Until each plane runs one of the two agents."""
    while not all(len(plane.services.ownership.mine or ()) == 1 for plane in (a, b)):  # noqa: ASYNC110 - the ticks move them
        await asyncio.sleep(0.05)


async def shown(
    subscription: Subscription, agents: set[str], wanted: Callable[[p.AgentState], bool]
) -> None:
    """Until a plane has shown a row of each of `agents` that `wanted` accepts
    (midnight's rows too)."""
    await until_rows(subscription, agents, wanted, days_too=True, within=WITHIN_S)


def pushes(receiver: Receiver, event: str) -> int:
    return sum(h["event"] == event for h in receiver.hooks())


def spent(plane: RunningPlane, usd: int) -> None:
    """The next answer costs `usd` dollars at the scripted price."""
    plane.llm.reply("done", usage=Usage(input_tokens=usd * 1000))


async def test_an_agents_amber_held_and_resumed_are_each_one_push(planes, receiver):
    a, b = planes
    on_b = b.bus.subscribe()
    spent(a, 4)
    await a.turn("demo", "spend")
    await shown(on_b, {"demo"}, lambda row: row.spend_level == "warn")
    await settled(planes, receiver, "amber", WITHIN_S)
    spent(a, 2)
    await a.turn("demo", "spend more")
    await shown(on_b, {"demo"}, lambda row: row.status == "held")
    await settled(planes, receiver, "held", WITHIN_S)
    await b.send("demo", "/limit 20")
    await shown(on_b, {"demo"}, lambda row: row.status != "held")
    await settled(planes, receiver, "resumed", WITHIN_S)
    assert [pushes(receiver, e) for e in ("amber", "held", "resumed")] == [1, 1, 1]


async def test_the_loop_guards_hold_and_its_resume_are_each_one_push(planes, receiver):
    a, b = planes
    on_b = b.bus.subscribe()
    await read_again(a, "demo", range(5))
    await shown(on_b, {"demo"}, lambda row: row.status == "held")
    await settled(planes, receiver, "loop", WITHIN_S)
    a.llm.reply("ok", usage=Usage())  # what waited through the hold, answered
    client = await b.client()
    await client.request(p.PauseAgent(agent="demo", paused=False))
    await shown(on_b, {"demo"}, lambda row: row.status != "held")
    await settled(planes, receiver, "resumed", WITHIN_S)
    assert [pushes(receiver, e) for e in ("loop", "held", "resumed")] == [1, 0, 1]


@pytest.mark.parametrize(
    ("command", "cause"),
    [
        ("/limit fleet 0.10", "fleet"),
        ("/limit fleet 0", "fleet"),
        ("/limit group research 0.10", "group"),
    ],
)
async def test_a_ceiling_over_both_planes_agents_is_one_push(planes, receiver, command, cause):
    a, b = planes
    spent(a, 1)
    await a.turn("demo", "spend")
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    await b.send("scout", command)
    for subscription in (on_a, on_b):
        await shown(subscription, {"demo", "scout"}, lambda row: row.status == "held")
    await settled(planes, receiver, "held", WITHIN_S)
    assert [(h["event"], h["cause"], h["count"]) for h in receiver.hooks()] == [("held", cause, 2)]


async def test_midnight_freeing_both_planes_agents_is_one_push(planes, receiver):
    a, b = planes
    spent(a, 1)
    await a.turn("demo", "spend")
    on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
    await b.send("scout", "/limit fleet 0.10")
    for subscription in (on_a, on_b):
        await shown(subscription, {"demo", "scout"}, lambda row: row.status == "held")
    await settled(planes, receiver, "held", WITHIN_S)
    await a.clock.advance(timedelta(hours=12))  # 00:00 UTC, on both planes' clock
    for subscription in (on_a, on_b):
        await shown(subscription, {"demo", "scout"}, lambda row: row.status != "held")
    await settled(planes, receiver, "resumed", WITHIN_S)
    assert [(h["event"], h["cause"], h["count"]) for h in receiver.hooks()] == [
        ("held", "fleet", 2),
        ("resumed", "day", 2),
    ]
