"""A plane that takes over many agents at once (the other plane stopped)
wakes only those with something to do: on a real PostgreSQL, two real
planes, 200 agents, three of them with a message sent while no plane ran
them (or one with a booking due). Those are answered; the others are not
woken to find nothing (before, each was: at 10,000 agents, most of a
takeover's CPU), and one of them sent a message afterwards answers it as
usual, as one booked for later takes its turn when it comes due. Leases
here last two minutes, so no renewal runs but the one the test asks for."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.takeovers import a_running_all, take_over, turns_end

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

WAITING = ["agent-007", "agent-100", "agent-199"]
"""The agents sent a message while no plane ran them."""
IDLE = "agent-042"
"""An agent taken with nothing waiting, sent a message afterwards."""
DUE = "agent-013"
"""An agent whose booking came due while no plane ran it."""
LATER = "agent-150"
"""An agent whose booking comes due after the takeover."""


async def test_a_takeover_wakes_only_the_agents_with_a_message_waiting(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.stop()  # its leases let go: no plane runs the agents
        for agent in WAITING:  # kept, waiting for whichever plane takes them
            await b.send(agent, f"are you there, {agent}?")
        woken, subscription = await take_over(b)
        started = await turns_end(subscription, WAITING)
        await b.quiet()
        assert await b.services.conversation.waiting_counts() == {}, "every message answered"
        assert sorted(started) == WAITING, "a turn of each agent with a message, and no other"
        assert sorted(woken) == WAITING, "the agents with nothing to do left idle"

        said = await b.turn(IDLE, "and you?")  # taken idle: a message wakes it as usual
        assert [m for m in said if m.kind == "agent"], f"{IDLE} answered nothing"
        assert await b.services.conversation.waiting_counts() == {}


async def test_a_takeover_wakes_an_agent_whose_booking_is_due_and_the_later_one_in_time(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.stop()  # its leases let go: no plane runs the agents
        now = b.clock.now()
        await b.scheduler.book(DUE, now, "the check due")  # due with no plane to run it
        await b.scheduler.book(LATER, now + timedelta(minutes=10), "the check later")
        woken, subscription = await take_over(b)
        assert await turns_end(subscription, [DUE]) == [DUE]
        await b.quiet()
        assert sorted(woken) == [DUE], "the agents with nothing to do left idle"
        assert await b.scheduler.due(DUE) == [], "its booking done"

        await b.clock.advance(timedelta(minutes=10))  # the later booking comes due
        assert await turns_end(subscription, [LATER]) == [LATER]
        await b.quiet()
        assert await b.scheduler.open(LATER) == [], "its booking done"
