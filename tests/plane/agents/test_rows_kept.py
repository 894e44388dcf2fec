"""A fleet's snapshot does the least a row: a row whose figures did not
change is the row it was (so its line is encoded once), the gate is asked
without a wait from figures read once, and the start makes no agent's
workspace before its first turn. On a real plane."""

from __future__ import annotations

import asyncio
import gc
import random
import sqlite3
import threading
from decimal import Decimal
from typing import Any

from plane.wire import protocol as p
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

GROUPED = CONFIG.replace(
    "agents:\n",
    "fleet: {limitUsd: 3}\ngroups:\n  crew: {limitUsd: 2, agents: [demo, scout]}\nagents:\n",
)


async def test_a_row_that_did_not_change_is_the_row_it_was(start_plane: Any) -> None:
    plane = await start_plane()
    first = {row.name: row for row in (await plane.rows.snapshot()).agents}
    again = {row.name: row for row in (await plane.rows.snapshot()).agents}
    assert all(again[name] is first[name] for name in first), "kept, not built again"
    lines = {name: row.line for name, row in again.items()}
    await plane.send("demo", "/limit 0.5")
    after = {row.name: row for row in (await plane.rows.snapshot()).agents}
    assert after["scout"] is first["scout"] and after["scout"].line is lines["scout"]
    assert after["demo"] is not first["demo"]
    assert after["demo"].limit_usd == Decimal("0.5")


async def test_a_row_built_alone_and_in_a_snapshot_is_the_same(start_plane: Any) -> None:
    plane = await start_plane()
    plane.llm.default_reply = Reply("done", usage=p.Usage(input_tokens=100, output_tokens=50))
    await plane.turn("demo", "go")
    alone = await plane.rows.state("demo")
    assert next(r for r in (await plane.rows.snapshot()).agents if r.name == "demo") is alone


async def test_the_gate_s_answer_from_a_snapshot_s_figures_is_its_answer(start_plane: Any) -> None:
    """`Gate.hold_known` (no wait, the figures given) says what `Gate.hold`
    says, over agents' own, their group's and the fleet's ceilings."""
    plane = await start_plane(GROUPED)
    gate, ledger = plane.services.gate, plane.services.ledger
    rng = random.Random(30)
    for spent in sorted(Decimal(rng.randrange(0, 400)) / 100 for _ in range(60)):
        await gate.ceilings.set("demo", rng.choice([None, Decimal(0), Decimal("0.5"), Decimal(4)]))
        fleet = spent + Decimal(rng.randrange(0, 300)) / 100
        group = {"crew": min(fleet, spent + Decimal(rng.randrange(0, 100)) / 100)}
        if more := spent - await ledger.spend_today("demo"):  # demo spends up to `spent`
            call = await ledger.open_call("demo", "p", "m", more, "estimate")
            await ledger.settle(call, p.Usage(), more, "test")
        assert await ledger.spend_today("demo") == spent
        known = rng.random() < 0.9
        asked = await gate.hold(
            "demo", price_known=known, model="m", fleet_spent=fleet, group_spent=group
        )
        given = gate.hold_known(
            "demo", spent=spent, price_known=known, model="m", fleet_spent=fleet,
            group_spent=group, resets_at=gate.resets_at(),
        )  # fmt: skip
        assert figures(given) == figures(asked)


def figures(hold: object) -> object:
    """A hold's figures (a `Full` inside is an exception: equal by its words)."""
    if hold is None:
        return None
    fields = dict(vars(hold))
    full = fields.pop("full", None)
    return type(hold), fields, type(full), str(full), vars(full) if full is not None else None


async def test_no_workspace_is_made_before_the_agent_s_first_turn(start_plane: Any) -> None:
    plane = await start_plane()
    demo, scout = plane.home.workspace("demo"), plane.home.workspace("scout")
    assert not demo.exists() and not scout.exists()
    await plane.turn("demo", "go")
    assert demo.is_dir() and not scout.exists()


async def test_an_agent_that_took_no_turn_is_renamed_with_no_workspace_to_move(
    start_plane: Any,
) -> None:
    plane = await start_plane()
    made = await plane.runtime.api.handle(p.NewAgent(name="poet", model="scripted-model"))
    assert made.agent.name == "poet"
    await plane.runtime.api.handle(p.RenameAgent(agent="poet", new_name="bard"))
    await plane.turn("bard", "go")
    assert plane.home.workspace("bard").is_dir() and not plane.home.workspace("poet").exists()


async def test_what_the_start_built_is_out_of_the_collector_s_sight(start_plane: Any) -> None:
    frozen = gc.get_freeze_count()
    plane = await start_plane()
    assert gc.get_freeze_count() > frozen
    worker = plane.crew.workers["demo"]
    assert not gc.is_tracked(worker) or worker not in gc.get_objects(generation=2)


async def test_a_snapshot_reads_the_clock_a_few_times_not_once_a_row(start_plane, monkeypatch):
    agents = 40
    listed = "".join(f"  extra-{n}: {{}}\n" for n in range(agents))
    plane = await start_plane(CONFIG.replace("agents:\n", "agents:\n" + listed))
    await plane.rows.snapshot()
    read, clock = [], plane.clock
    now = clock.now

    def counted():
        read.append(1)
        return now()

    monkeypatch.setattr(clock, "now", counted)
    await plane.rows.snapshot()
    assert len(read) < agents / 4, f"the clock read {len(read)} times for {agents + 2} rows"


async def test_what_a_worker_keeps_while_it_waits_is_frozen_once_it_settled(start_plane) -> None:
    """Each worker's wait is made once its first work is done, which may be
    after the start returned (at 10,000 agents it is): the plane freezes
    again once every worker has done its first, so the collector's passes
    no longer walk a wait an agent. Here each agent's first work is a turn
    (a message left waiting), held in the provider until the start is over."""
    agents = 40
    listed = "".join(f"  extra-{n}: {{}}\n" for n in range(agents))
    first = await start_plane(CONFIG.replace("agents:\n", "agents:\n" + listed))
    for n in range(agents):
        await first.services.conversation.append(f"extra-{n}", "operator", "hello", waiting=True)
    answer = threading.Event()
    first.llm.default_reply = Reply("hi", until=answer)
    await start_plane(restart=first)
    answer.set()
    settle = next(t for t in asyncio.all_tasks() if t.get_name() == "settle")
    await asyncio.wait_for(settle, 30)
    assert len(first.llm.requests) >= agents, "each first work was a turn"
    waits = [o for o in gc.get_objects() if isinstance(o, asyncio.Future) and not o.done()]
    assert len(waits) < agents, f"{len(waits)} waits in the collector's sight"


async def test_a_message_kept_is_acknowledged_when_its_row_cannot_be_shown(
    start_plane: Any, monkeypatch: Any
) -> None:
    """The store failing a read after the message was written (the row's
    figures): the sender is told it was sent, as it was, and the agent
    answers it; an error would have it sent twice."""
    plane = await start_plane()
    plane.llm.default_reply = "answered"
    failing = plane.services.conversation
    count_waiting = failing.count_waiting

    async def away_once(agent: str) -> int:
        monkeypatch.undo()  # back at once: the agent's turn reads it too
        raise sqlite3.OperationalError("the store went away")

    monkeypatch.setattr(failing, "count_waiting", away_once)
    subscription = plane.bus.subscribe()
    reply = await plane.runtime.api.handle(p.Send(agent="demo", text="hello"))
    assert isinstance(reply, p.SendReply), reply
    assert [m.text for m in reply.messages] == ["hello"]
    assert failing.count_waiting == count_waiting, "the failure was met"
    said = await plane.until_turn_ends("demo", subscription, within=10)
    assert ("agent", "answered") in [(m.kind, m.text) for m in said]
