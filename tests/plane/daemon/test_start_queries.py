"""What a start asks of the database: the same statements for 3 agents as
for 60. Each agent's waiting messages, told hold and bookings, the day and
the day's spend are read for the whole fleet at once, not agent by agent
(at 100,000 agents, one query each was ~20 s of a start). And only the
agents with something waiting are looked at: the rest of a fleet is not
named to the store at all until its first message or booking."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from datetime import timedelta

import pytest

from plane.clock import ManualClock
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG, NOON, launch


def with_agents(count: int) -> str:
    """Agents that book an ambient turn, on top of the fixture's two."""
    listed = "".join(f"  agent-{n}: {{ambient: {{every_minutes: 600}}}}\n" for n in range(count))
    return CONFIG.replace("agents:\n", "agents:\n" + listed)


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement run on a connection opened from now on."""
    ran: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(ran.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return ran


def shape(sql: str) -> str:
    """The statement without its values: `agent IN (?,?,?)` for any number."""
    sql = re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", " ".join(sql.split()))
    return re.sub(r"\((\?,)*\?\)", "(…)", sql)


async def restarted(root, llm, statements, agents: int) -> Counter[str]:
    """The statements of a restart (on the next day) of a plane whose agents
    each have a message waiting, a hold told and an ambient turn booked."""
    clock = ManualClock(NOON)
    plane = await launch(root, llm, with_agents(agents), clock)
    for n in range(agents):
        await plane.send(f"agent-{n}", "/limit 0")
        await plane.send(f"agent-{n}", "are you there?")
    await plane.quiet()
    await plane.stop()
    statements.clear()
    await clock.advance(timedelta(days=1))
    plane = await launch(root, llm, with_agents(agents), clock)
    try:
        await plane.quiet()
        snapshot = await plane.rows.snapshot()
    finally:
        await plane.stop()
    assert sum(a.waiting for a in snapshot.agents) == agents  # all still there, still held
    return Counter(shape(sql) for sql in statements)


async def test_a_start_asks_the_same_of_the_store_for_60_agents_as_for_3(
    tmp_path, scripted_llm, statements
):
    few = await restarted(tmp_path / "few", scripted_llm, statements, 3)
    many = await restarted(tmp_path / "many", scripted_llm, statements, 60)
    # One agent's worth more would be 57 more of each; a loaded machine may
    # split a read in two or three (workers waking over several turns of the loop).
    grown = {sql: (few[sql], n) for sql, n in many.items() if n > few[sql] + 3}
    assert not grown, grown
    assert sum(many.values()) <= sum(few.values()) + 12


def with_quiet_agents(count: int) -> str:
    """Agents with nothing booked, on top of the fixture's two."""
    listed = "".join(f"  agent-{n}: {{}}\n" for n in range(count))
    return CONFIG.replace("agents:\n", "agents:\n" + listed)


async def test_a_start_looks_only_at_the_agents_something_waits_for(
    tmp_path, scripted_llm, statements
):
    """60 agents; 3 spent their day's limit and were sent a message, which
    waited. The next day's start answers the 3, and names no other agent
    to the store: the other 57 (and the fixture's two) are not looked at."""
    clock = ManualClock(NOON)
    config = with_quiet_agents(60)
    plane = await launch(tmp_path, scripted_llm, config, clock)
    waited = [f"agent-{n}" for n in (7, 30, 59)]
    for agent in waited:
        scripted_llm.reply("spent", usage=Usage(input_tokens=1000))  # $1.00: its whole limit
        await plane.turn(agent, "spend it")
        await plane.send(agent, "are you there?")
    await plane.quiet()
    await plane.stop()
    statements.clear()
    await clock.advance(timedelta(days=1))
    for _ in waited:
        scripted_llm.reply("here")
    plane = await launch(tmp_path, scripted_llm, config, clock)
    try:
        await plane.quiet()
        snapshot = await plane.rows.snapshot()
    finally:
        await plane.stop()
    assert sum(a.waiting for a in snapshot.agents) == 0  # the 3 answered
    asked = [request["messages"][-1]["content"] for request in scripted_llm.requests[-3:]]
    assert all("while you were held] are you there?" in text for text in asked), asked
    named = {
        name for sql in statements for name in re.findall(r"'((?:agent-\d+)|demo|scout)'", sql)
    }
    assert named <= set(waited), sorted(named - set(waited))


async def test_a_start_does_not_look_at_agents_whose_bookings_are_not_due(
    tmp_path, scripted_llm, statements
):
    """60 agents with an ambient turn booked ten hours ahead and nothing else:
    a restart reads no agent's waiting messages or told hold (the scheduler
    wakes each when its turn comes due), and the turn is taken then."""
    clock = ManualClock(NOON)
    plane = await launch(tmp_path, scripted_llm, with_agents(60), clock)
    await plane.quiet()
    await plane.stop()
    statements.clear()
    plane = await launch(tmp_path, scripted_llm, with_agents(60), clock)
    try:
        await plane.quiet()
        one_by_one = r"FROM messages WHERE waiting = 1 AND|FROM holds_told WHERE"
        looked = [sql for sql in statements if re.search(one_by_one, sql)]
        assert not looked, looked
        subscription = plane.bus.subscribe()
        await clock.advance(timedelta(minutes=601))
        await plane.until_turn_ends("agent-17", subscription)
    finally:
        await plane.stop()
