"""A fleet of many agents on a real plane that alerts a real local receiver
(`tests.support.fixtures_alerts`), and waits on what its rows show.

    plane = await start_plane(fleet_config(receiver, 200))
    await until_rows(subscription, names(200), lambda row: row.status == "held")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from plane.daemon.events import Subscription
from plane.wire import protocol as p
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import scripted_config

WITHIN_S = 20.0


def names(count: int) -> list[str]:
    """The fleet's agents: `a000` … (sorted as they are numbered)."""
    return [f"a{n:03d}" for n in range(count)]


def fleet_config(receiver: Receiver, count: int, *, group: int = 0) -> str:
    """`count` agents of $5 a day each, alerting `receiver` (webhook and
    ntfy); the first `group` of them in the group research ($100 a day)."""
    agents = "".join(f"  {name}: {{}}\n" for name in names(count))
    more = ""
    if group:
        members = ", ".join(names(group))
        more = f"groups:\n  research:\n    limitUsd: 100\n    agents: [{members}]\n"
    notify = (
        f"notify:\n  webhook: {receiver.url}/hook\n  ntfy: {receiver.url}/topic\n  retries: 0\n"
    )
    return scripted_config(agents, limit_usd="5", more=more) + notify


async def until_rows(
    subscription: Subscription, agents: list[str], wanted: Callable[[p.AgentState], bool]
) -> None:
    """Until a row of each of `agents` that `wanted` accepts has been shown."""
    left = set(agents)

    async def all_shown() -> None:
        while left and (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and wanted(event.agent):
                left.discard(event.agent.name)

    await asyncio.wait_for(all_shown(), WITHIN_S)
