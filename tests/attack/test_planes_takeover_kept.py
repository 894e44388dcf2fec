"""The rows a plane builds for the agents it takes over at once are kept
until the fleet moves again: once shown, they are frozen out of the
cyclic collector's sight, as the start's rows are. (Before, every full
pass of the collector walked them: at two planes of 5,000 agents each,
~90,000 objects a plane, a pass every two or three steady renewals, each
the longest a renewal held the event loop, 60–90 ms.) On a real
PostgreSQL, two real planes, 200 agents, a move of 100 counted as many
(`KEPT_MOVES`). Leases here last two minutes, so no renewal runs but the
one the test asks for."""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path

import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from tests.support.fixtures_plane import RunningPlane
from tests.support.takeovers import AGENTS, DEADLINE_S, a_running_all

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def rows_in_sight(plane: str) -> set[str]:
    """The agents whose rows as `plane`'s the cyclic collector still walks."""
    return {o.name for o in gc.get_objects() if isinstance(o, p.AgentState) and o.plane == plane}


async def shown_as(b: RunningPlane, agents: list[str]) -> str:
    """B's renewal takes every agent; until each row is shown as B's: B's name."""
    b_fleet = b.runtime.fleet
    assert b_fleet is not None
    subscription = b.bus.subscribe()
    tick = await b_fleet.tick()
    assert tick.gained == frozenset(agents)
    left = set(agents)

    async def until_all() -> None:
        while left and (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.plane == b_fleet.name:
                left.discard(event.agent.name)

    await asyncio.wait_for(until_all(), DEADLINE_S)
    assert not left, "the subscription ended"
    return b_fleet.name


async def test_the_rows_of_a_takeover_are_kept_out_of_the_collectors_sight(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    monkeypatch.setattr(fleet, "KEPT_MOVES", len(AGENTS) // 2)
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.stop()  # its leases let go: no plane runs the agents
        name = await shown_as(b, AGENTS)
        await b.quiet()
        deadline = time.monotonic() + DEADLINE_S
        while (seen := rows_in_sight(name)) and time.monotonic() < deadline:  # noqa: ASYNC110 - frozen by the show's task, no event
            await asyncio.sleep(0.2)
        assert not seen, f"{len(seen)} rows of the agents taken still walked by the collector"
