"""Attack: a shared ceiling (a group's, the fleet's) well above what a call
really costs, but below the most one call of the plane's own may cost (every
output token its request allows), on each engine.

A call in flight counts at that most until it settles, so the agents of the
group cannot all fly at once: the others wait for it. Before, each of them was
told it was held ("its group's calls today come to $1.09 of $1.00 with those
in flight; it answers at 00:00 UTC") while $0.08 had been spent: a false hold.
Now a call held back only by calls in flight waits for them and goes, no hold
is told, and every message is answered. The guarantees stay: agents racing at
the ceiling end the day at most one call over it, and a ceiling of zero set
while a call waits stops it."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.usefixtures("each_store"), pytest.mark.timeout(120)]

AGENTS = ["r0", "r1", "r2"]
CEILING = Decimal(1)
PER_AGENT = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 50\n") + "".join(
    f"  {name}: {{tools: []}}\n" for name in AGENTS
)
IN_GROUP = PER_AGENT + f"groups:\n  research:\n    limitUsd: {CEILING}\n    agents: [r0, r1, r2]\n"
IN_FLEET = PER_AGENT + f"fleet:\n  limitUsd: {CEILING}\n"
SHARED = {"a group's": IN_GROUP, "the fleet's": IN_FLEET}
"""The three agents under one ceiling of $1, shared two ways."""

TURN = Usage(input_tokens=60, output_tokens=10)
"""$0.08 a call at the test prices."""
TURN_COST = Decimal("0.08")


async def conversation(plane, agent: str) -> list[tuple[str, str]]:
    rows = await plane.db.fetchall(
        "SELECT kind, text FROM messages WHERE agent = ? ORDER BY id", agent
    )
    return [(kind, text) for kind, text in rows]


async def spent(plane) -> Decimal:
    rows = await plane.db.fetchall("SELECT cost_usd FROM calls WHERE status <> 'failed'")
    return sum((Decimal(cost) for (cost,) in rows), Decimal(0))


@pytest.mark.parametrize("config", SHARED.values(), ids=SHARED.keys())
async def test_agents_under_a_ceiling_one_calls_most_passes_are_answered_and_never_told_held(
    start_plane, config: str
) -> None:
    plane = await start_plane(config)
    most = plane.services.pricer.estimate(
        "scripted-model", 0, plane.services.config.defaults.max_output_tokens
    )
    assert most > CEILING > 3 * TURN_COST, "one call may cost more than the ceiling; three do not"
    plane.llm.default_reply = Reply("done", usage=TURN, delay_s=0.3)
    await asyncio.gather(*(plane.send(name, f"hello {name}") for name in AGENTS))
    await plane.quiet()
    for name in AGENTS:
        said = await conversation(plane, name)
        told = [text for kind, text in said if kind == "plane"]
        assert told == [], f"{name} was told a hold with {await spent(plane)} spent: {told}"
        assert ("agent", "done") in said, f"{name}'s message was not answered: {said}"
    assert await spent(plane) == 3 * TURN_COST
    assert not await plane.services.conversation.waiting_counts()
    assert {(await plane.rows.state(name)).status for name in AGENTS} == {"idle"}


RACERS = [f"r{n}" for n in range(8)]
RACING_CEILING = Decimal(3)
"""About three calls' most: several fly at once, and the day ends on the ceiling."""
RACING = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 50\n") + "".join(
    f"  {name}: {{tools: []}}\n" for name in RACERS
)
RACING_SHARED = {
    "a group's": RACING
    + f"groups:\n  research:\n    limitUsd: {RACING_CEILING}\n    agents: [{', '.join(RACERS)}]\n",
    "the fleet's": RACING + f"fleet:\n  limitUsd: {RACING_CEILING}\n",
}
DEAR_TURN = Usage(input_tokens=200, output_tokens=100)
"""$0.40 a call at the test prices."""


@pytest.mark.parametrize("config", RACING_SHARED.values(), ids=RACING_SHARED.keys())
async def test_agents_racing_at_a_shared_ceiling_end_the_day_at_most_one_call_over(
    start_plane, config: str
) -> None:
    plane = await start_plane(config)
    plane.llm.default_reply = Reply("done", usage=DEAR_TURN, delay_s=0.1)
    for round_ in range(4):  # $3.20 asked for a round: past the ceiling in the first
        await asyncio.gather(*(plane.send(name, f"round {round_}") for name in RACERS))
        await plane.quiet()
    total = await spent(plane)
    assert RACING_CEILING <= total <= RACING_CEILING + Decimal("0.4"), total
    states = [await plane.rows.state(name) for name in RACERS]
    assert {s.status for s in states} == {"held"}
    for name in RACERS:
        for kind, text in await conversation(plane, name):
            if kind == "plane":  # a hold told says what was spent, nothing in flight
                assert "has spent" in text and "in flight" not in text, text


async def r0_in_flight(plane):
    """r0 sent a message, its call in flight for a second (answered slowly);
    the bus subscribed before, to wait for its turn's end."""
    arrived = threading.Event()

    def answer(body: dict, serial: int) -> Reply:
        arrived.set()
        return Reply("slow", usage=TURN, delay_s=1.0)

    plane.llm.responder = answer
    first = plane.bus.subscribe()
    await plane.send("r0", "the slow one")
    assert await asyncio.to_thread(arrived.wait, 10)
    return first


async def test_a_ceiling_of_zero_set_while_a_call_waits_stops_it(start_plane) -> None:
    plane = await start_plane(IN_GROUP)
    first = await r0_in_flight(plane)
    await plane.send("r1", "and me")  # its call waits for r0's
    await plane.send("r2", "/limit group research 0")
    await plane.until_turn_ends("r0", first)
    await plane.quiet()
    assert len(plane.llm.requests) == 1, "no call sent once the group's ceiling is zero"
    told = [text for kind, text in await conversation(plane, "r1") if kind == "plane"]
    assert len(told) == 1 and "paused" in told[0], told
    assert (await plane.services.conversation.waiting_counts()).get("r1") == 1


@pytest.mark.parametrize("config", SHARED.values(), ids=SHARED.keys())
async def test_the_fleets_rows_show_no_agent_held_while_a_call_flies(start_plane, config) -> None:
    """A snapshot's rows, built from figures read once for all, weigh the
    ceiling as the gate does: the calls in flight hold no row."""
    plane = await start_plane(config)
    first = await r0_in_flight(plane)
    rows = {row.name: row for row in (await plane.rows.snapshot()).agents}
    assert (rows["r0"].status, rows["r1"].status, rows["r2"].status) == ("working", "idle", "idle")
    await plane.until_turn_ends("r0", first)


async def test_a_turn_cut_while_its_call_waits_sends_and_counts_nothing(start_plane) -> None:
    plane = await start_plane(IN_GROUP)
    first = await r0_in_flight(plane)
    waiting = plane.bus.subscribe()
    await plane.send("r1", "and me")  # its call waits for r0's
    async with asyncio.timeout(10):
        while not plane.crew.workers["r1"].working:  # noqa: ASYNC110 - the worker's
            await asyncio.sleep(0.02)
    client = await plane.client()
    assert isinstance(await client.request(p.Interrupt(agent="r1")), p.OkReply)
    await plane.until_turn_ends("r1", waiting, within=5)
    await plane.until_turn_ends("r0", first)
    await plane.quiet()
    assert len(plane.llm.requests) == 1, "the waiting call was never sent"
    assert await plane.db.fetchall("SELECT id FROM calls WHERE agent = 'r1'") == []
    assert await plane.services.ledger.spend_today("r1") == 0
