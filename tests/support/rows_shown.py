"""A row the plane shows its clients, waited for: the first `AgentUpdated`
of an agent that says what the test wants, within a deadline.

    subscription = plane.bus.subscribe()
    await plane.send("demo", "/limit fleet 0.10")
    await row_shown(subscription, "scout", lambda row: row.status == "held")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from plane.daemon.events import Subscription
from plane.wire import protocol as p

WITHIN_S = 10.0


async def row_shown(
    subscription: Subscription,
    agent: str,
    wanted: Callable[[p.AgentState], bool],
    within: float = WITHIN_S,
) -> p.AgentState:
    """The first row of `agent` shown on `subscription` that `wanted` accepts."""

    async def first() -> p.AgentState:
        while (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.name == agent:
                if wanted(event.agent):
                    return event.agent
        raise AssertionError("the subscription ended")

    try:
        return await asyncio.wait_for(first(), within)
    except TimeoutError:
        pytest.fail(f"no row of {agent} was shown as wanted within {within} s")
