"""A renewal reads what waits for each agent once: the wake (which agents
have something to do) and the rows of what the other planes said are given
the same read, made before the lines are (a row never says a question
answered before its answer is shown). On a real PostgreSQL, a real plane of
100 agents, nothing waiting. (Before, each made its own: at 10,000 agents,
every waiting message read twice a renewal.) Leases here last two minutes,
so no renewal runs but the test's."""

from __future__ import annotations

from pathlib import Path

import pytest

from plane.daemon import fleet
from tests.support.fixtures_plane import launch, scripted_config

pytestmark = pytest.mark.timeout(120)

AGENTS = [f"agent-{n:03}" for n in range(100)]
CONFIG = scripted_config("".join(f"  {agent}: {{}}\n" for agent in AGENTS))

LEASE_S = 120.0
"""Renewals 40 s apart: none comes but the test's."""

MOST_READS = 4
"""The reads a renewal with nothing to do costs the plane's store, each once
for the whole fleet: what waits for each agent, the holds told, the bookings
due (the wake's), and the lines written since the last renewal (the rows').
The leases and the ceilings are read on the ticks' own connection."""


async def test_a_renewal_reads_what_waits_for_each_agent_once(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    plane = await launch(tmp_path / "a", scripted_llm, CONFIG)
    try:
        assert plane.runtime.fleet is not None
        await plane.runtime.fleet.tick()  # the first after start: the lines read from here on
        await plane.quiet()
        reads = plane.db.counts.reads
        tick = await plane.runtime.fleet.tick()
        await plane.quiet()
        assert tick.mine == frozenset(AGENTS)
        assert plane.db.counts.reads - reads <= MOST_READS
    finally:
        await plane.stop()
