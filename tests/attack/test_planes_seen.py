"""A TUI attached to any plane sees the whole fleet: two planes in this
process on one real PostgreSQL, each running one of two agents. The
operator, on plane B, writes to the agent plane A runs; A answers. B's
clients are told A's lines (the answer, its cost line) and the agent's row
with its spend, at B's next renewal at the latest, each line once; and a
line A commits after one with a larger id is told all the same."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from tests.support.fixtures_plane import launch, scripted_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]  # leases shared out: a few seconds

LEASE_S = 3.0

CONFIG = scripted_config("  demo: {}\n  scout: {}\n", limit_usd="5")


async def shared_out(a, b) -> None:
    while not (a.services.ownership.mine and b.services.ownership.mine):  # noqa: ASYNC110 - the ticks move it
        await asyncio.sleep(0.05)


async def test_a_line_another_plane_writes_reaches_this_planes_clients_once(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    a = await launch(tmp_path / "a", scripted_llm, CONFIG)
    b = await launch(tmp_path / "b", scripted_llm, CONFIG)
    try:
        await asyncio.wait_for(shared_out(a, b), 10 * LEASE_S)
        agent = sorted(a.services.ownership.mine)[0]
        told = b.bus.subscribe()
        await b.send(agent, "hello from plane b")
        lines: list[p.ConversationMessage] = []
        spent = None

        async def until_answered_and_shown() -> None:
            nonlocal spent
            while spent is None or not any(m.kind == "agent" for m in lines):
                event = await told.next()
                if isinstance(event, p.MessageAppended) and event.message.agent == agent:
                    lines.append(event.message)
                if isinstance(event, p.AgentUpdated) and event.agent.name == agent:
                    if event.agent.spend_today_usd > 0 and any(m.kind == "agent" for m in lines):
                        spent = event.agent.spend_today_usd

        await asyncio.wait_for(until_answered_and_shown(), 10 * LEASE_S)
        assert [m.text for m in lines if m.kind == "agent"] == ["ok"]
        assert spent == await a.services.ledger.spend_today(agent)
        await asyncio.sleep(2 * LEASE_S)  # renewals after: nothing told again
        while told.behind:
            event = await told.next()
            if isinstance(event, p.MessageAppended):
                lines.append(event.message)
        assert [i for i, n in Counter(m.id for m in lines).items() if n > 1] == []

        # A line whose transaction commits after one with a larger id (its
        # plane's write waiting, here on the server's clock) is told all the same.
        def slow_line(conn):
            said = a.services.conversation.append_within(conn, agent, "plane", "committed late")
            conn.execute("SELECT pg_sleep(?)", (1.5 * LEASE_S,))
            return said

        late = asyncio.ensure_future(a.db.write(slow_line))
        await asyncio.sleep(LEASE_S / 3)
        quick = await b.services.conversation.append(agent, "plane", "committed at once")
        assert (await late).id < quick.id

        async def until_told(text: str) -> None:
            while True:
                event = await told.next()
                if isinstance(event, p.MessageAppended) and event.message.text == text:
                    return

        await asyncio.wait_for(until_told("committed late"), 10 * LEASE_S)
    finally:
        await b.stop()
        await a.stop()
