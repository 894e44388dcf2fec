"""An agent held by the fleet's ceiling, with a message waiting, whose
hold is lifted on another plane while no plane runs it: the plane that
takes it over answers the message. The notice of the ceiling reaches
that plane before it holds the agent (it wakes only the agents it runs),
and its renewal then finds no ceiling changed (the notice read it): the
agent is woken for its message, as one with work, and its turn starts.
On a real PostgreSQL, two real planes and a third that only sets the
ceiling (as an operator's `/limit fleet off` there), four agents."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon.fleet import tell_ceilings
from plane.money.ceilings import Ceilings
from plane.store.postgres import PostgresDatabase
from tests.support.fleet_members import NOON
from tests.support.takeovers import a_running_all, turns_end, until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n}" for n in range(4)]
HELD = AGENTS[2]


async def test_a_held_agent_freed_elsewhere_during_a_takeover_answers_on_its_new_plane(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        b_fleet, b_ceilings = b.runtime.fleet, b.services.gate.ceilings
        assert b_fleet is not None
        await a.send(AGENTS[0], "/limit fleet 0")  # every agent held
        await a.send(HELD, "are you there?")  # kept, waiting while held
        await a.quiet()
        assert await a.services.conversation.waiting_counts() == {HELD: 1}
        await until(lambda: b_ceilings.fleet() == Decimal(0), "B heard of the ceiling")
        await a.stop()  # its leases let go: no plane runs the agents

        c_store = await PostgresDatabase.connect(postgres_url)
        try:
            c = Ceilings(c_store, ManualClock(NOON), tell=partial(tell_ceilings, c_store, "c"))
            await c.load({})
            await c.set_fleet(None)  # the operator's `/limit fleet off` on plane C
            await until(lambda: b_ceilings.fleet() is None, "B heard the ceiling lifted")
        finally:
            await c_store.close()

        subscription = b.bus.subscribe()
        tick = await b_fleet.tick()
        assert HELD in tick.gained
        assert await turns_end(subscription, [HELD]) == [HELD]
        await b.quiet()
        assert await b.services.conversation.waiting_counts() == {}, "its message answered"
