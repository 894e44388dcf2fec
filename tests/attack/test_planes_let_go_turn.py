"""A plane that holds more than its share lets idle agents go, and no
agent's work is done twice or lost on the way: on a real PostgreSQL, two
real planes, four agents. A runs all of them, B none; A's renewal finds it
holds two over its share. Leases here last two minutes, so no renewal
runs but the test's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import psycopg
import pytest

from plane.wire import protocol as p
from tests.support.takeovers import DEADLINE_S, a_running_all, turns_end, until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n}" for n in range(4)]
SENT = AGENTS[0]
"""The first agent A asks about, and so the first it lets go."""


async def test_an_agent_sent_a_message_as_its_lease_is_let_go_is_answered_once(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    """An agent found idle can be sent a message the next moment, before
    its lease is let go: its turn must not start on the plane letting it
    go, or its call would be in flight there while the plane that takes the
    agent sweeps it and answers the message again (two planes on one agent,
    the message's work bought twice). The order is driven by a lock the
    test holds: A asks whether `agent-0` is idle, the operator writes to it,
    and A's let-go waits on the test's lock on the leases (which no turn's
    write needs) until `agent-0` has looked at its work."""
    release = threading.Event()
    scripted_llm.reply("answered", until=release)  # the first call, in flight until released
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        a_fleet, b_fleet = a.runtime.fleet, b.runtime.fleet
        assert a_fleet is not None and b_fleet is not None
        sending: list[asyncio.Task[list[p.ConversationMessage]]] = []
        with psycopg.connect(postgres_url) as locker:
            asked = a_fleet.idle

            def idle(agent: str) -> bool:
                """Idle as asked; then, before A lets it go, a message for it."""
                found = asked(agent)
                if agent == SENT and not sending:
                    locker.execute("LOCK TABLE leases IN SHARE MODE")  # A's let-go waits
                    sending.append(asyncio.create_task(a.send(SENT, "are you there?")))
                return found

            a_fleet.idle = idle
            renewing = asyncio.create_task(a_fleet.tick())
            await until(lambda: bool(sending), "A asked whether the agents were idle")
            await sending[0]
            workers = a.crew.workers
            # Its look done on A: a turn started (its call in flight), or none.
            await until(lambda: scripted_llm.requests or workers.idle(SENT), f"{SENT} looked on A")
            locker.commit()  # A lets go of its surplus now
            a_tick = await renewing
        assert len(a_tick.mine) == 2, "A keeps its share"
        b_tick = await b_fleet.tick()  # B takes its share: the agents A let go
        assert SENT not in b_tick.cut, f"{SENT}'s call was in flight on A as A let it go"
        release.set()
        waiting = b.services.conversation.waiting_counts
        async with asyncio.timeout(DEADLINE_S):
            while await waiting():  # noqa: ASYNC110 - the planes' turns move it
                await asyncio.sleep(0.02)
        await a.quiet()
        await b.quiet()
        said = await b.services.conversation.history(SENT, 20)
        assert [m.text for m in said if m.kind == "agent"] == ["answered"], "answered once"
        assert len(scripted_llm.requests) == 1, "its work bought once"


async def test_an_agent_with_a_turn_in_flight_is_not_let_go_and_its_turn_ends_once_there(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    """A's surplus is let go among its idle agents only: `agent-0`, its
    call in flight, stays A's, which answers it once; B takes the next two,
    and sweeps nothing. A message then sent through A to one B took is
    answered by B."""
    release = threading.Event()
    scripted_llm.reply("answered", until=release)
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        a_fleet, b_fleet = a.runtime.fleet, b.runtime.fleet
        assert a_fleet is not None and b_fleet is not None
        on_a = a.bus.subscribe()
        await a.send(SENT, "are you there?")
        await until(lambda: bool(scripted_llm.requests), f"{SENT}'s call in flight")
        a_tick = await a_fleet.tick()
        assert a_tick.mine == frozenset({SENT, AGENTS[3]}), "the busy agent kept, idle ones let go"
        b_tick = await b_fleet.tick()
        assert b_tick.gained == frozenset(AGENTS[1:3])
        assert b_tick.cut == {}, "no call in flight where a lease was let go"
        release.set()
        assert await turns_end(on_a, [SENT]) == [SENT]

        on_b = b.bus.subscribe()
        await a.send(AGENTS[1], "and you?")  # through the plane that let it go
        assert await turns_end(on_b, [AGENTS[1]]) == [AGENTS[1]]
        await a.quiet()
        await b.quiet()
        assert await b.services.conversation.waiting_counts() == {}
        for agent, answer in [(SENT, "answered"), (AGENTS[1], "ok")]:
            said = await b.services.conversation.history(agent, 20)
            assert [m.text for m in said if m.kind == "agent"] == [answer], f"{agent} answered once"


async def test_a_hold_told_where_a_let_go_agent_runs_now_is_not_told_again_through_its_old_plane(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    """`agent-0` looked at its hold on A (none), A let it go, and B, which
    took it, told its hold (the fleet paused). A message sent through A
    finds the hold told already: A reads what was told again once its
    agents changed, and says it no second time."""
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        a_fleet, b_fleet = a.runtime.fleet, b.runtime.fleet
        assert a_fleet is not None and b_fleet is not None
        a.crew.workers.wake(SENT)  # it looks at its hold on A: none
        await a.quiet()
        await a_fleet.tick()  # A lets it go
        assert SENT in (await b_fleet.tick()).gained
        await b.send(AGENTS[1], "/limit fleet 0")  # every agent held
        await b.send(SENT, "and now?")  # its hold told, by B
        a_ceilings = a.services.gate.ceilings
        await until(lambda: a_ceilings.fleet() == 0, "A heard of the ceiling")
        await a.send(SENT, "still there?")
        await a.quiet()
        await b.quiet()
        said = await a.services.conversation.history(SENT, 20)
        paused = [m.text for m in said if m.kind == "plane" and "is paused" in m.text]
        assert len(paused) == 1, [(m.kind, m.text) for m in said]
