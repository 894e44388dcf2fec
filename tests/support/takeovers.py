"""Two planes on one real PostgreSQL, the first running all 200 agents (or
those a test names) and the second none: what the tests of a takeover (the
first stops, the second takes every agent at once) and of a surplus let go
(the first holds more than its share) start from. Leases last two minutes,
so no renewal runs but the one a test asks for.

    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.stop()  # its leases let go
        tick = await b.runtime.fleet.tick()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from plane.daemon import fleet
from plane.daemon.events import Subscription
from plane.wire import protocol as p
from tests.support.fixtures_plane import RunningPlane, launch, scripted_config
from tests.support.fleet_members import runs
from tests.support.scripted_llm import ScriptedLLM

AGENTS = [f"agent-{n:03}" for n in range(200)]

LEASE_S = 120.0
"""Renewals 40 s apart: none comes but the test's."""

DEADLINE_S = 30.0


@contextlib.asynccontextmanager
async def a_running_all(
    root: Path,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    agents: list[str] = AGENTS,
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Planes A and B on the store at `url`, A running every one of
    `agents` (started alone, it took them all) and B none, B quiet; both
    stopped once done (the scripted model's answers still held hung up
    first, so no turn waits on one)."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    config = scripted_config("".join(f"  {agent}: {{}}\n" for agent in agents))
    a = await launch(root / "a", llm, config)
    try:
        await asyncio.wait_for(runs(a, agents[-1]), DEADLINE_S)  # alone: it runs them all
        b = await launch(root / "b", llm, config)
    except BaseException:
        await a.stop()
        raise
    try:
        assert not b.services.ownership.mine, "a holds every lease"
        await b.quiet()
        yield a, b
    finally:
        llm.hang_up()
        await b.stop()
        await a.stop()


async def take_over(
    b: RunningPlane, agents: list[str] = AGENTS, first: Callable[[], object] | None = None
) -> tuple[list[str], Subscription]:
    """B's renewal takes every one of `agents`: the agents it woke (a list
    that grows as it wakes more), and a subscription from before it;
    `first`: done before it wakes the first."""
    b_fleet = b.runtime.fleet
    assert b_fleet is not None
    woken: list[str] = []
    wake = b_fleet.wake

    def counted(agent: str) -> None:
        if not woken and first is not None:
            first()
        woken.append(agent)
        wake(agent)

    b_fleet.wake = counted
    subscription = b.bus.subscribe()
    tick = await b_fleet.tick()
    assert tick.gained == frozenset(agents)
    return woken, subscription


async def turns_end(subscription: Subscription, agents: list[str]) -> list[str]:
    """Until a turn of each of `agents` ended: the agents whose turns started
    meanwhile, in order."""
    started: list[str] = []
    left = set(agents)

    async def until_all() -> None:
        while left and (event := await subscription.next()) is not None:
            if isinstance(event, p.TurnStarted):
                started.append(event.agent)
            if isinstance(event, p.TurnFinished):
                left.discard(event.agent)

    try:
        await asyncio.wait_for(until_all(), DEADLINE_S)
    except TimeoutError:
        pytest.fail(f"no turn of {sorted(left)} ended within {DEADLINE_S} s")
    assert not left, "the subscription ended"
    return started


async def until(condition: Callable[[], object], what: str) -> None:
    """Until `condition()` holds, within the deadline (the planes' tasks
    and notices move it); `what` is said if it never does."""
    try:
        async with asyncio.timeout(DEADLINE_S):
            while not condition():  # noqa: ASYNC110 - polled: no event says it
                await asyncio.sleep(0.02)
    except TimeoutError:
        pytest.fail(f"not within {DEADLINE_S} s: {what}")
