"""A plane that takes over many agents at once (the other plane stopped)
shows their rows to its clients from a few reads of the store, not from
reads of each agent's: on a real PostgreSQL, two real planes, 200 agents.
(Before, each row moved was built from reads of its own: at 10,000 agents
the operator watched thousands of reads trickle the rows in.) Leases here
last two minutes, so no renewal runs but the one the test asks for."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plane.daemon.events import Subscription
from plane.wire import protocol as p
from tests.support.takeovers import AGENTS, DEADLINE_S, a_running_all

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

MOST_READS = 20
"""The reads a takeover of the 200 rows may cost: a few for them all
(the day's spend, the fleet's, the waiting counts, what the agents
woken look for), far fewer than one a row."""


async def every_row_says(subscription: Subscription, plane: str) -> None:
    """Until a row of every agent says `plane` runs it."""
    left = set(AGENTS)

    async def until_all() -> None:
        while left and (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.plane == plane:
                left.discard(event.agent.name)

    try:
        await asyncio.wait_for(until_all(), DEADLINE_S)
    except TimeoutError:
        pytest.fail(f"{len(left)} rows did not say {plane} runs them within {DEADLINE_S} s")
    assert not left, "the subscription ended"


async def test_a_takeover_of_200_agents_shows_their_rows_from_a_few_reads(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        assert b.runtime.fleet is not None
        subscription = b.bus.subscribe()
        await a.stop()  # its leases let go
        reads = b.db.counts.reads
        tick = await b.runtime.fleet.tick()
        assert tick.gained == frozenset(AGENTS)
        await every_row_says(subscription, b.runtime.fleet.name)
        await b.quiet()
        assert b.db.counts.reads - reads <= MOST_READS
