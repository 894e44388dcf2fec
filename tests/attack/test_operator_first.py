"""The operator ahead of the agents' traffic: a `/limit 0` typed while a
thousand calls wait for the store binds before the agent's next admission.

The store's writer is held inside a write (a slow disk), a thousand calls
of another agent are queued behind it, and the operator sends `/limit 0`
over the real socket. Nothing is timed: the gate is asked while every one
of those writes still waits, and after they are all through, the agent
has taken no turn and made no call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from decimal import Decimal

from plane.money.gate import AtCeiling
from plane.wire import protocol as p
from tests.support.fixtures_plane import NOON

QUEUED = 1000


async def until(check: Callable[[], bool]) -> None:
    """Until `check()` holds: what the plane does next is awaited, never timed."""
    for _ in range(20_000):
        if check():
            return
        await asyncio.sleep(0.001)
    raise TimeoutError("the plane never got there")


async def test_limit_zero_binds_before_a_thousand_queued_calls(start_plane):
    plane = await start_plane()
    services, db = plane.services, plane.db
    await services.ledger.open_call("scout", "scripted", "scripted-model", Decimal(0), "estimate")
    entered, release = threading.Event(), threading.Event()
    before = db.counts.writes

    def stall(conn):
        entered.set()
        release.wait(60)

    stalled = asyncio.ensure_future(db.write(stall))
    assert await asyncio.to_thread(entered.wait, 20)
    calls = [
        asyncio.ensure_future(
            services.ledger.open_call(
                "scout", "scripted", "scripted-model", Decimal("0.01"), "estimate"
            )
        )
        for _ in range(QUEUED)
    ]
    await until(lambda: db.counts.writes >= before + 1 + QUEUED)  # the stall, then the calls
    queued = db.counts.writes
    operator = await plane.client()
    limit = asyncio.ensure_future(operator.request(p.Send(agent="demo", text="/limit 0")))
    await until(lambda: db.counts.writes > queued)  # the plane read it: its first write waits

    worker = plane.crew.workers["demo"]
    hold = await worker.hold()  # the gate the agent's next turn asks, every write still queued
    assert isinstance(hold, AtCeiling) and hold.ceiling == 0
    assert not calls[-1].done()
    other = await plane.client()
    message = asyncio.ensure_future(other.request(p.Send(agent="demo", text="Go on.")))
    await until(lambda: db.counts.writes > queued + 1)

    release.set()
    await asyncio.gather(stalled, *calls)
    reply, sent = await limit, await message
    await plane.quiet()
    assert not reply.refused
    assert sent.messages[0].held
    assert services.gate.ceilings.of("demo") == 0
    entries = await services.ledger.entries(NOON.date())
    assert [e for e in entries if e.agent == "demo"] == []
    assert plane.llm.requests == []
