"""A fleet's or a group's ceiling typed on one plane tells the other planes
once, not once for each agent they run, on a real PostgreSQL with two real
planes: the ceilings' own notice wakes the agents there. Before, the plane
where it was typed also sent one notice for every agent another plane ran:
at 10,000 agents on two planes, 5,000 notices for a `/limit fleet` (even
one that only reads it), each a read of the agent's settings on the plane
that heard it, and `/limit fleet` took 45 s to answer there, `plane
status` 10 s on the other plane."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import psycopg
import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_members import a_and_b

pytestmark = pytest.mark.timeout(90)

LEASE_S = 120.0
"""Renewals 40 s apart: none comes while the test listens."""

CONFIG = scripted_config(
    "  demo: {}\n  scout: {}\n",
    limit_usd="5",
    more="groups:\n  research:\n    limitUsd: 3\n    agents: [scout]\n",
)
MARK = "the test's mark"
"""A notice sent through plane B's store after the command's reply: B's
writes commit in order, so every notice the command sent comes before it."""


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Plane A, which runs demo and scout, and plane B, where the operator types."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10.0) as (a, b):
        assert a.services.ownership.owns("demo") and a.services.ownership.owns("scout")
        yield a, b


async def notices_of(b: RunningPlane, url: str, text: str) -> list[str]:
    """Every notice on the fleet's channel while `text` is typed on plane B."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as listening:
        await listening.execute(f"LISTEN {fleet.CHANNEL}")
        client = await b.client()
        await client.request(p.Send(agent="demo", text=text))
        await b.db.write(partial(fleet.notice, MARK))
        heard: list[str] = []
        async with asyncio.timeout(20):
            async for notice in listening.notifies():
                if notice.payload == MARK:
                    return heard
                heard.append(notice.payload)
    raise AssertionError("unreachable")


@pytest.mark.parametrize("text", ["/limit fleet 2.50", "/limit fleet", "/limit group research 1"])
async def test_a_fleets_or_a_groups_ceiling_tells_the_other_planes_once(planes, postgres_url, text):
    _, b = planes
    heard = await notices_of(b, postgres_url, text)
    assert not {"demo", "scout"} & set(heard), f"{text}: one notice an agent: {heard}"
    assert len(heard) <= 1, heard  # the ceilings' own notice, when one changed
