"""A call in flight on a plane that shares its store ends when the plane's
lease could have run out by the database's, unless a renewal moves the
bound on: otherwise a plane cut off from the store would still be calling
for an agent another plane has taken (two planes' calls for one agent in
flight at once, as the provider sees them)."""

from __future__ import annotations

import asyncio
import time

import pytest

from plane.agents.services import Ownership
from plane.errors import LeaseLost


def holding(agent: str, for_s: float) -> Ownership:
    ownership = Ownership("p0")
    now = time.monotonic()
    ownership.renewed(frozenset({agent}), {agent: 1}, now + for_s / 2, now + for_s)
    return ownership


async def test_a_call_past_the_bound_is_cut_and_says_the_lease_ran_out() -> None:
    ownership = holding("a", 0.2)
    cancelled = asyncio.Event()

    async def long_call() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "answered"

    with pytest.raises(LeaseLost, match="p0's lease on a ran out during its call"):
        await asyncio.wait_for(ownership.within_lease("a", long_call()), 10)
    assert cancelled.is_set(), "the call itself was cancelled, not left running"


async def test_a_renewal_during_the_call_lets_it_finish() -> None:
    ownership = holding("a", 0.2)

    async def renewing() -> None:  # its timer comes due before the first bound's
        await asyncio.sleep(0.1)
        now = time.monotonic()
        ownership.renewed(frozenset({"a"}), {"a": 1}, now + 5, now + 10)

    async def call() -> str:
        await asyncio.sleep(0.5)  # longer than the first bound, within the renewed ones
        return "answered"

    renewals = asyncio.ensure_future(renewing())
    assert await ownership.within_lease("a", call()) == "answered"
    await renewals


async def test_a_plane_alone_on_its_store_never_bounds_a_call() -> None:
    alone = Ownership()

    async def call() -> str:
        await asyncio.sleep(0.05)
        return "answered"

    assert await alone.within_lease("a", call()) == "answered"


async def test_a_cut_turn_cancels_its_call_too() -> None:
    ownership = holding("a", 30)
    cancelled = asyncio.Event()

    async def long_call() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    turn = asyncio.ensure_future(ownership.within_lease("a", long_call()))
    await asyncio.sleep(0.05)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_a_call_that_fails_as_it_is_cut_still_ends_as_a_lost_lease() -> None:
    """A connection torn down by the cut may raise its own error: the turn
    still ends as a lost lease's (not a failure it would report)."""
    ownership = holding("a", 0.2)

    async def torn_call() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise ConnectionResetError("the cut closed the connection") from None

    with pytest.raises(LeaseLost):
        await asyncio.wait_for(ownership.within_lease("a", torn_call()), 10)


async def test_a_turn_cut_while_its_call_is_being_cut_for_the_lease_ends_as_cut() -> None:
    """The turn's own cancellation, arriving while the call cut at the bound
    is still ending, is not swallowed: the turn stops (as the operator or a
    stop asked), instead of going on to report a lost lease."""
    ownership = holding("a", 0.1)
    ending = asyncio.Event()

    async def slow_to_end() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            ending.set()
            await asyncio.sleep(0.2)  # its connection closing
            raise

    turn = asyncio.ensure_future(ownership.within_lease("a", slow_to_end()))
    await asyncio.wait_for(ending.wait(), 10)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
