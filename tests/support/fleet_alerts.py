"""A fleet of many agents on a real plane that alerts a real local receiver
(`tests.support.fixtures_alerts`), and waits on what its rows show.

    plane = await start_plane(fleet_config(receiver, 200))
    await until_rows(subscription, names(200), lambda row: row.status == "held")

On PostgreSQL, the same fleet on a plane whose leases renew each second:

    async with running_fleet(tmp_path, scripted_llm, receiver, 3, ManualClock(NOON),
                             monkeypatch, postgres_url) as plane:
        await a000_spends(plane)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from plane.clock import ManualClock
from plane.daemon import fleet
from plane.daemon.alert_claims import StoreClaims
from plane.daemon.alert_folds import GATHER_S
from plane.daemon.events import Subscription
from plane.store.postgres import PostgresDatabase
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane, launch, scripted_config
from tests.support.fleet_members import runs
from tests.support.scripted_llm import ScriptedLLM

WITHIN_S = 20.0
LEASE_S = 3.0
"""A renewal a second: a plane takes the fleet's leases within one or two."""
CLAIM_WAITS = (
    "SELECT COUNT(*) FROM pg_locks WHERE relation = 'alerts_told'::regclass AND NOT granted"
)


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
    subscription: Subscription,
    agents: list[str] | set[str],
    wanted: Callable[[p.AgentState], bool],
    *,
    days_too: bool = False,
    within: float = WITHIN_S,
) -> None:
    """Until a row of each of `agents` that `wanted` accepts has been shown;
    `days_too`: the rows of the day turning (`DayRolled`'s snapshot) count
    as well, as midnight shows its rows in one event, not one a row."""
    left = set(agents)

    async def all_shown() -> None:
        while left and (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and wanted(event.agent):
                left.discard(event.agent.name)
            elif days_too and isinstance(event, p.DayRolled):
                left.difference_update(a.name for a in event.snapshot.agents if wanted(a))

    await asyncio.wait_for(all_shown(), within)


async def launch_fleet(
    root: Path,
    llm: ScriptedLLM,
    receiver: Receiver,
    count: int,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> RunningPlane:
    """A plane of `count` agents (`fleet_config`) on the PostgreSQL store at
    `url`, its leases renewed each second (`LEASE_S`), on `clock`."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    return await launch(root, llm, fleet_config(receiver, count), clock)


@contextlib.asynccontextmanager
async def running_fleet(
    root: Path,
    llm: ScriptedLLM,
    receiver: Receiver,
    count: int,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> AsyncIterator[RunningPlane]:
    """`launch_fleet`, stopped once done (the scripted model's streams hung
    up first, so no turn waits on one)."""
    plane = await launch_fleet(root, llm, receiver, count, clock, monkeypatch, url)
    try:
        yield plane
    finally:
        llm.hang_up()
        await plane.stop()


async def a000_spends(plane: RunningPlane) -> None:
    """Once `plane` runs a000 (it took its lease), a000 spends $0.20 in a
    turn (200 input tokens at the scripted price): the fleet's spend today,
    over the $0.10 ceiling the tests then set."""
    await asyncio.wait_for(runs(plane, "a000"), WITHIN_S)
    plane.llm.reply("done", usage=Usage(input_tokens=200))
    await plane.turn("a000", "spend")


async def claim_waits(url: str) -> None:
    """Until a plane's claim waits to write into `alerts_told`, which the
    test holds locked: the alert is then told only once the test lets go."""
    with psycopg.connect(url, autocommit=True) as watcher:
        async with asyncio.timeout(WITHIN_S):
            while watcher.execute(CLAIM_WAITS).fetchone() == (0,):  # noqa: ASYNC110 - the store
                await asyncio.sleep(0.02)


async def drained(plane: RunningPlane) -> None:
    """Until every alert `plane` queued has been sent (or given up on)."""
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()


async def arrived(
    plane: RunningPlane, receiver: Receiver, count: int, within: float = WITHIN_S
) -> list[dict[str, Any]]:
    """Until `count` alerts have arrived at the webhook and `plane` has sent
    all it queued: the alerts arrived."""
    async with asyncio.timeout(within):
        while len(receiver.hooks()) < count:
            receiver.arrived.clear()
            await receiver.arrived.wait()
    await drained(plane)
    return receiver.hooks()


@contextlib.asynccontextmanager
async def other_claims(url: str) -> AsyncIterator[StoreClaims]:
    """The claims of another plane of the fleet, on the store at `url`."""
    db = await PostgresDatabase.connect(url)
    try:
        yield StoreClaims(db, "other")
    finally:
        await db.close()


async def settled(
    planes: tuple[RunningPlane, ...],
    receiver: Receiver,
    event: str,
    within: float,
    *,
    count: int = 1,
) -> None:
    """Until `count` pushes of `event` have arrived and each plane has told
    what it would: its folds gathered (a few `GATHER_S`), its alerts queued
    sent. What a test of pushes "once" counts after, as a second push would
    come by then."""
    await receiver.until_hook(event, within, count=count)
    await asyncio.sleep(6 * GATHER_S)  # a fold tells once its rows stop coming
    for plane in planes:
        await drained(plane)
