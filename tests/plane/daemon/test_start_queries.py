"""What a start asks of the database: the same statements for 3 agents as
for 60. Each agent's waiting messages, told hold and bookings, the day and
the day's spend are read for the whole fleet at once, not agent by agent
(at 100,000 agents, one query each was ~20 s of a start)."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from datetime import timedelta

import pytest

from plane.clock import ManualClock
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
