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
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from plane.money.gate import AtCeiling
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG, NOON, RunningPlane

QUEUED = 1000


async def until(check: Callable[[], bool]) -> None:
    """Until `check()` holds: what the plane does next is awaited, never timed."""
    for _ in range(20_000):
        if check():
            return
        await asyncio.sleep(0.001)
    raise TimeoutError("the plane never got there")


async def stall_writer(db: Any) -> tuple[asyncio.Future[None], threading.Event]:
    """The store's writer held inside a write (a slow disk) until the event
    is set: the write's future, and the event."""
    entered, release = threading.Event(), threading.Event()

    def stall(conn: object) -> None:
        entered.set()
        release.wait(60)

    stalled = asyncio.ensure_future(db.write(stall))
    assert await asyncio.to_thread(entered.wait, 20)
    return stalled, release


@dataclass
class Queued:
    """The store's writer held inside a write (a slow disk) and a thousand
    calls of another agent queued behind it."""

    before: int
    """The writes counted before the stall."""
    calls: list[asyncio.Future[object]]
    release: threading.Event
    stalled: asyncio.Future[None]

    @classmethod
    async def behind_a_stalled_writer(cls, plane: RunningPlane) -> Queued:
        db, ledger = plane.db, plane.services.ledger
        before = db.counts.writes
        stalled, release = await stall_writer(db)
        estimate = Decimal("0.01")
        calls: list[asyncio.Future[object]] = [
            asyncio.ensure_future(
                ledger.open_call("scout", "scripted", "scripted-model", estimate, "estimate")
            )
            for _ in range(QUEUED)
        ]
        await until(lambda: db.counts.writes >= before + 1 + QUEUED)  # the stall, then the calls
        return cls(before, calls, release, stalled)

    async def let_go(self) -> None:
        self.release.set()
        await asyncio.gather(self.stalled, *self.calls)


async def test_limit_zero_binds_before_a_thousand_queued_calls(start_plane):
    plane = await start_plane()
    services, db = plane.services, plane.db
    await services.ledger.open_call("scout", "scripted", "scripted-model", Decimal(0), "estimate")
    queue = await Queued.behind_a_stalled_writer(plane)
    calls = queue.calls
    # The operator's writes counted, not all of them: the plane's own (a
    # scheduler's, a notice's) may be made meanwhile on a loaded machine.
    operators = db.counts.operators
    operator = await plane.client()
    limit = asyncio.ensure_future(operator.request(p.Send(agent="demo", text="/limit 0")))
    await until(lambda: db.counts.operators > operators)  # the plane read it: its write waits

    worker = plane.crew.workers["demo"]
    hold = await worker.hold()  # the gate the agent's next turn asks, every write still queued
    assert isinstance(hold, AtCeiling) and hold.ceiling == 0
    assert not calls[-1].done()
    other = await plane.client()
    message = asyncio.ensure_future(other.request(p.Send(agent="demo", text="Go on.")))
    await until(lambda: db.counts.operators > operators + 1)

    await queue.let_go()
    reply, sent = await limit, await message
    await plane.quiet()
    assert not reply.refused
    assert sent.messages[0].held
    assert services.gate.ceilings.of("demo") == 0
    entries = await services.ledger.entries(NOON.date())
    assert [e for e in entries if e.agent == "demo"] == []
    assert plane.llm.requests == []


async def test_a_cut_turn_is_told_ahead_of_a_thousand_queued_writes(start_plane):
    """The operator interrupts a turn while the writer is held and a
    thousand of another agent's writes wait. The cut (its call in flight
    counted, the notice, the turn's end) is the operator's, taken ahead of
    them: the notice is in the store before any of the thousand. Ordered,
    not timed: the first of the agents' writes holds the writer until the
    notice is asked for (or for 10 s, which fails the order)."""
    plane = await start_plane(CONFIG.replace("limitUsd: 1", "limitUsd: 9"))
    services, db = plane.services, plane.db
    plane.llm.stall("Half an ans", seconds=30)
    events = plane.bus.subscribe()
    await plane.send("demo", "a question cut mid-answer")
    while not isinstance(await asyncio.wait_for(events.next(), 10), p.TextDelta):
        pass
    plane.bus.unsubscribe(events)
    stalled, release = await stall_writer(db)
    operators = db.counts.operators
    told = threading.Event()

    def first_of_the_agents(conn: object) -> None:
        told.wait(10)  # until the notice is asked for: it then commits next

    def message(n: int) -> Callable[[Any], object]:
        return lambda conn: conn.execute(
            "INSERT INTO messages (agent, at, kind, text) VALUES ('scout', ?, 'agent', ?)",
            (NOON.isoformat(), f"queued {n}"),
        )

    queued = [asyncio.ensure_future(db.write(first_of_the_agents))]
    queued += [asyncio.ensure_future(db.write(message(n))) for n in range(QUEUED)]
    operator = await plane.client()
    cut = asyncio.ensure_future(operator.request(p.Interrupt(agent="demo")))
    await until(lambda: db.counts.operators > operators)  # the cut: queued, ahead of them
    release.set()
    await until(lambda: db.counts.operators > operators + 1)  # the notice asked for
    told.set()
    await asyncio.gather(cut, stalled, *queued)

    [entry] = [e for e in await services.ledger.entries(NOON.date()) if e.agent == "demo"]
    assert entry.status == "interrupted"
    history = await services.conversation.history("demo", limit=10)
    notice = history[-1]
    assert notice.kind == "plane" and "interrupted" in notice.text.lower()
    others = await services.conversation.history("scout", limit=QUEUED)
    assert len(others) == QUEUED
    assert notice.id < min(m.id for m in others), "told after the agents' writes"


async def test_a_turn_cut_while_its_cost_is_written_is_told_with_that_cost(start_plane):
    """The model has answered and the call's cost waits for the store (the
    writer held) when the operator cuts the turn. The cost is written ahead
    of the cut, so the call is settled, not counted at its estimate; the
    notice said the turn cost $0.00, because the turn, cut while it waited,
    never added the cost it was writing."""
    plane = await start_plane(CONFIG.replace("limitUsd: 1", "limitUsd: 9"))
    services, db = plane.services, plane.db
    answer = threading.Event()
    plane.llm.reply("answered", usage=Usage(input_tokens=10, output_tokens=5), until=answer)
    await plane.send("demo", "a question whose answer is being paid for")
    await until(lambda: len(plane.llm.requests) == 1)  # its call opened, in flight
    stalled, release = await stall_writer(db)
    writes = db.counts.writes
    answer.set()
    await until(lambda: db.counts.writes > writes)  # its cost, queued behind the stall
    operators = db.counts.operators
    operator = await plane.client()
    cut = asyncio.ensure_future(operator.request(p.Interrupt(agent="demo")))
    await until(lambda: db.counts.operators > operators)
    release.set()
    await asyncio.gather(cut, stalled)

    [entry] = [e for e in await services.ledger.entries(NOON.date()) if e.agent == "demo"]
    assert (entry.status, entry.cost_usd) == ("settled", Decimal("0.02"))
    notice = (await services.conversation.history("demo", limit=10))[-1]
    assert notice.text == "Interrupted by the operator. The cut-off turn cost $0.02."
    assert notice.cost_usd == Decimal("0.02")
