"""A booking the agent made on the plane that ran it, due later, wakes it
when it comes due on the plane that took it over: on a real PostgreSQL,
two real planes, four agents, A running them all and booking one's check
in ten minutes after B started (B's scheduler read the bookings before
it was made), then stopping; B takes every agent. Before, B's scheduler,
asleep with no booking of its own, never heard of it: the agent slept
with its booking due until B's next renewal. Leases here last two
minutes, so no renewal runs but the one the test asks for."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.takeovers import a_running_all, take_over, turns_end

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n}" for n in range(4)]
LATER = AGENTS[1]


async def test_a_booking_made_on_the_plane_that_stopped_wakes_its_agent_in_time_on_the_next(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        await a.scheduler.book(LATER, a.clock.now() + timedelta(minutes=10), "the check")
        await a.stop()  # its leases let go: no plane runs the agents
        _, subscription = await take_over(b, AGENTS)
        await b.quiet()

        await b.clock.advance(timedelta(minutes=10))  # the booking comes due
        assert await turns_end(subscription, [LATER]) == [LATER]
        await b.quiet()
        assert await b.scheduler.open(LATER) == [], "its booking done"
