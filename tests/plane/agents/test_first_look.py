"""A start looks only at the agents something waits for: a message, a
booking, a hold told (tests/plane/daemon/test_start_queries.py counts what
it asks of the store). What waited through a restart is answered all the
same, on each store; the others wait for their first message."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plane.clock import ManualClock
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG, NOON

pytestmark = pytest.mark.usefixtures("each_store")


def with_quiet_agents(count: int) -> str:
    """Agents with nothing booked, on top of the fixture's two."""
    listed = "".join(f"  agent-{n}: {{}}\n" for n in range(count))
    return CONFIG.replace("agents:\n", "agents:\n" + listed)


def asked(llm) -> list[str]:
    """What each call to the model was last told, in order."""
    return [request["messages"][-1]["content"] for request in llm.requests]


async def test_what_waited_through_a_restart_is_answered_and_nothing_else_runs(start_plane):
    plane = await start_plane(with_quiet_agents(20))
    plane.llm.reply("spent", usage=Usage(input_tokens=1000))  # $1.00: its whole day
    await plane.turn("agent-3", "spend it")
    await plane.send("agent-3", "are you there?")  # held by its ceiling: it waits
    await plane.scheduler.book("agent-11", NOON + timedelta(hours=1), "look again")
    await plane.quiet()
    calls = len(plane.llm.requests)
    plane.llm.reply("here")
    plane.llm.reply("looked")
    plane = await start_plane(restart=plane, clock=ManualClock(NOON + timedelta(days=1)))
    await plane.quiet()
    told = asked(plane.llm)[calls:]
    assert len(told) == 2, told
    assert any(text.endswith("while you were held] are you there?") for text in told), told
    assert any("look again" in text for text in told), told
    snapshot = await plane.rows.snapshot()
    assert sum(a.waiting for a in snapshot.agents) == 0
    plane.llm.reply("hello")  # an agent not looked at answers its first message
    said = await plane.turn("agent-5", "hi")
    assert [m.text for m in said if m.kind == "agent"] == ["hello"]
