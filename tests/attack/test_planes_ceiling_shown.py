"""A ceiling the operator sets on one plane is shown at once to the clients
of another, on a real PostgreSQL, with two real planes and a client on the
socket of the one that runs the agent: the agent's row with its new ceiling
(and its new colour), the fleet line's new ceiling, a group's agents' rows.
Leases here last two minutes, so no renewal runs while the test waits:
the notice the plane that stored the change sends is what shows them.
(Before, that plane's clients kept the old ceiling until something else
redrew the row or the line.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path

import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_members import a_and_b
from tests.support.scripted_llm import Reply

pytestmark = pytest.mark.timeout(90)

LEASE_S = 120.0
"""Renewals 40 s apart: none comes while the test waits."""

DEADLINE_S = 10.0
"""How long a client of the plane that did not store the change may wait to see it."""

EIGHT_CENTS = p.Usage(input_tokens=80)
"""$0.08 at the test prices: amber under a ceiling of $0.10 (warnRatio 0.8)."""

CONFIG = scripted_config(
    "  demo: {}\n  scout: {}\n",
    limit_usd="5",
    more="groups:\n  research:\n    limitUsd: 3\n    agents: [scout]\n",
)
"""demo and scout may spend $5 each; scout is in the group research."""


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Plane A, which runs demo and scout (demo has spent $0.08 today), and
    plane B, where the operator types."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    scripted_llm.responder = lambda body, serial: Reply("ok", usage=EIGHT_CENTS)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, DEADLINE_S) as (a, b):
        assert a.services.ownership.owns("demo") and a.services.ownership.owns("scout")
        await a.turn("demo", "hello")
        await a.quiet()
        yield a, b


async def watching(plane: RunningPlane) -> PlaneClient:
    """A client of `plane` as the TUI is: subscribed to what it tells."""
    client = await plane.client()
    await client.request(p.Subscribe())
    return client


async def typed(plane: RunningPlane, text: str) -> None:
    """The operator types `text` in demo's conversation through a client of `plane`."""
    client = await plane.client()
    await client.request(p.Send(agent="demo", text=text))


async def told(client: PlaneClient, wanted: Callable[[p.Event], bool]) -> p.Event:
    """The first event `client` is told that `wanted` accepts, within `DEADLINE_S`."""

    async def first() -> p.Event:
        async for event in client.events():
            if wanted(event):
                return event
        raise AssertionError(f"the connection ended: {client.ended}")

    try:
        return await asyncio.wait_for(first(), DEADLINE_S)
    except TimeoutError:
        pytest.fail(f"the client was not told within {DEADLINE_S} s")


def row_of(agent: str, holds: Callable[[p.AgentState], bool]) -> Callable[[p.Event], bool]:
    return lambda e: isinstance(e, p.AgentUpdated) and e.agent.name == agent and holds(e.agent)


async def test_an_agents_and_the_fleets_ceiling_set_on_another_plane_reach_this_planes_clients(
    planes,
):
    a, b = planes
    client = await watching(a)
    await typed(b, "/limit 0.10")
    event = await told(client, row_of("demo", lambda row: row.limit_usd == Decimal("0.10")))
    assert isinstance(event, p.AgentUpdated)
    assert event.agent.spend_level == "warn"  # $0.08 of $0.10: amber
    await typed(b, "/limit fleet 2.50")
    changed = await told(client, lambda e: isinstance(e, p.FleetChanged))
    assert changed == p.FleetChanged(limit_usd=Decimal("2.50"))


async def test_a_groups_ceiling_set_on_another_plane_shows_its_agents_rows_again(planes):
    a, b = planes
    client = await watching(a)
    await typed(b, "/limit group research 0")
    event = await told(client, row_of("scout", lambda row: row.status == "held"))
    assert isinstance(event, p.AgentUpdated)
    assert event.agent.hold_reason is not None


# ── the rows a fleet's or a group's ceiling holds, on the plane that runs them ──

SPREAD = scripted_config(
    "  ana: {}\n  bob: {}\n  demo: {}\n  scout: {}\n",
    limit_usd="5",
    more="groups:\n  research:\n    limitUsd: 3\n    agents: [bob, scout]\n",
)
"""Four agents who may spend $5 each; bob and scout are the group research."""

B_RUNS = {"ana", "bob"}
"""The agents plane B runs once the fleet is spread (A the others)."""


@pytest.fixture
async def spread(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Plane A, which runs demo and scout ($0.08 spent today each: the
    fleet's $0.16, the group research's $0.08), and plane B, which runs ana
    and bob: A's renewal lets go of its share over half, B's takes it."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    scripted_llm.responder = lambda body, serial: Reply("ok", usage=EIGHT_CENTS)
    async with a_and_b(tmp_path, scripted_llm, SPREAD, DEADLINE_S) as (a, b):
        await a.turn("demo", "hello")
        await a.turn("scout", "hello")
        await a.quiet()
        for plane in (a, b):
            fleet_of = plane.runtime.fleet
            assert fleet_of is not None
            await fleet_of.tick()
        assert b.services.ownership.mine == B_RUNS
        yield a, b


async def rows_told(
    client: PlaneClient, agents: set[str], holds: Callable[[p.AgentState], bool]
) -> None:
    """Until `client` is told a row of each of `agents` that `holds` accepts,
    within `DEADLINE_S`."""
    left = set(agents)

    async def all_told() -> None:
        async for event in client.events():
            if isinstance(event, p.AgentUpdated) and event.agent.name in left:
                if holds(event.agent):
                    left.discard(event.agent.name)
                    if not left:
                        return
        raise AssertionError(f"the connection ended: {client.ended}")

    try:
        await asyncio.wait_for(all_told(), DEADLINE_S)
    except TimeoutError:
        pytest.fail(f"no row of {sorted(left)} was shown as wanted within {DEADLINE_S} s")


async def status_of(plane: RunningPlane, agents: set[str]) -> dict[str, tuple[str, str | None]]:
    """Each of `agents`' status and hold as `plane status` on `plane` says them."""
    client = await plane.client()
    snapshot = (await client.request(p.Status())).snapshot
    return {
        row.name: (row.status, row.hold_reason) for row in snapshot.agents if row.name in agents
    }


def held_by(reason: str) -> Callable[[p.AgentState], bool]:
    return lambda row: row.status == "held" and row.hold_reason == reason


def running_normally(row: p.AgentState) -> bool:
    return row.status == "idle" and row.hold_reason is None


@pytest.mark.parametrize(
    ("ceiling", "holds"),
    [("fleet", B_RUNS), ("group research", {"bob"})],
    ids=["/limit fleet", "/limit group"],
)
async def test_a_ceiling_over_many_agents_set_on_another_plane_redraws_the_rows_it_holds(
    spread, ceiling, holds
):
    """A fleet's (or a group's) ceiling set on A below what it spent holds
    the agents B runs: a TUI on B shows them held, then, the ceiling
    removed on A, running again, as `plane status` on B says. (Before, their
    rows on B kept what they showed until a renewal or a turn redrew them.)"""
    a, b = spread
    reason = ceiling.split()[0]
    client = await watching(b)
    await a.send("demo", f"/limit {ceiling} 0.05")
    await rows_told(client, holds, held_by(reason))
    assert await status_of(b, holds) == dict.fromkeys(holds, ("held", reason))
    await a.send("demo", f"/limit {ceiling} off")
    await rows_told(client, holds, running_normally)
    assert await status_of(b, holds) == dict.fromkeys(holds, ("idle", None))
