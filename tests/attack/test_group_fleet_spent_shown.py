"""Attack: a shared ceiling (a group's, the fleet's) with one call in flight
whose estimate (the most it may cost) passes it, on each engine.

No agent is held then: the ceiling weighs what was spent. But what a user
read as spent counted the call at its estimate: `plane status` showed
`group research $1.07 of $1.00`, `/limit group research` and `/limit fleet`
`$1.07 spent today …, of $1.00 a day.`, while $0.08 had been spent: a
breach that was none. Now each says what was spent, the call in flight apart
(`$0.08 of $1.00 (+$0.99 in flight)`), and once it settles the figures
include it."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import pytest

from plane.wire.protocol import Usage
from plane.wire.words import usd
from tests.support.command import plane_cli_async
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.usefixtures("each_store"), pytest.mark.timeout(120)]

EACH = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 50\n") + "".join(
    f"  {name}: {{tools: []}}\n" for name in ("r0", "r1")
)
IN_GROUP = EACH + "groups:\n  research:\n    limitUsd: 1\n    agents: [r0, r1]\n"
IN_FLEET = EACH + "fleet:\n  limitUsd: 1\n"

TURN = Usage(input_tokens=60, output_tokens=10)
"""$0.08 a call at the test prices."""


async def in_flight(plane) -> Decimal:
    """The calls in flight's estimates, as the ledger holds them."""
    rows = await plane.db.fetchall("SELECT cost_usd FROM calls WHERE status = 'pending'")
    return sum((Decimal(cost) for (cost,) in rows), Decimal(0))


async def r0_held_in_flight(plane, release: threading.Event):
    """r1's call settled ($0.08), then r0's in flight until `release` is set."""
    plane.llm.default_reply = Reply("done", usage=TURN)
    await plane.turn("r1", "first")
    arrived = threading.Event()

    def answer(body: dict, serial: int) -> Reply:
        arrived.set()
        return Reply("slow", usage=TURN, until=release)

    plane.llm.responder = answer
    first = plane.bus.subscribe()
    await plane.send("r0", "the slow one")
    assert await asyncio.to_thread(arrived.wait, 10)
    return first


async def said(plane, command: str) -> str:
    return (await plane.send("r1", command))[-1].text


async def group_line(plane) -> str:
    status = (await plane_cli_async(plane.home.root, "status")).stdout.splitlines()
    [line] = [line for line in status if line.startswith("  group research")]
    return line


async def test_a_groups_spent_says_its_call_in_flight_apart(start_plane) -> None:
    plane = await start_plane(IN_GROUP)
    release = threading.Event()
    first = await r0_held_in_flight(plane, release)
    flying = await in_flight(plane)
    assert flying > 1, "the call in flight passes the group's ceiling at its estimate"
    try:
        apart = f"(+{usd(flying)} in flight)"
        assert f"  $0.08 of $1.00 {apart}  " in await group_line(plane)
        assert await said(plane, "/limit group research") == (
            f"$0.08 spent today by group research {apart}, of $1.00 a day."
        )
        snapshot = await plane.rows.snapshot()
        [group] = snapshot.groups
        assert (group.spend_today_usd, group.in_flight_usd) == (Decimal("0.08"), flying)
    finally:
        release.set()
    await plane.until_turn_ends("r0", first)
    await plane.quiet()
    assert "  $0.16 of $1.00  " in await group_line(plane)
    assert await said(plane, "/limit group research") == (
        "$0.16 spent today by group research, of $1.00 a day."
    )


async def test_the_fleets_spent_says_its_call_in_flight_apart(start_plane) -> None:
    plane = await start_plane(IN_FLEET)
    release = threading.Event()
    first = await r0_held_in_flight(plane, release)
    flying = await in_flight(plane)
    try:
        assert await said(plane, "/limit fleet") == (
            f"$0.08 spent today by the fleet (+{usd(flying)} in flight), of $1.00 a day."
        )
    finally:
        release.set()
    await plane.until_turn_ends("r0", first)
    await plane.quiet()
    assert await said(plane, "/limit fleet") == "$0.16 spent today by the fleet, of $1.00 a day."
