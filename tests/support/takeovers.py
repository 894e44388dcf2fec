"""Two planes on one real PostgreSQL, the first running all 200 agents and
the second none: what the tests of a takeover (the first stops, the second
takes every agent at once) start from. Leases last two minutes, so no
renewal runs but the one a test asks for.

    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.stop()  # its leases let go
        tick = await b.runtime.fleet.tick()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plane.daemon import fleet
from tests.support.fixtures_plane import RunningPlane, launch, scripted_config
from tests.support.fleet_members import runs
from tests.support.scripted_llm import ScriptedLLM

AGENTS = [f"agent-{n:03}" for n in range(200)]
CONFIG = scripted_config("".join(f"  {agent}: {{}}\n" for agent in AGENTS))

LEASE_S = 120.0
"""Renewals 40 s apart: none comes but the test's."""

DEADLINE_S = 30.0


@contextlib.asynccontextmanager
async def a_running_all(
    root: Path, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch, url: str
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """Planes A and B on the store at `url`, A running every agent (started
    alone, it took them all) and B none, B quiet; both stopped once done."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    a = await launch(root / "a", llm, CONFIG)
    try:
        await asyncio.wait_for(runs(a, AGENTS[-1]), DEADLINE_S)  # alone: it runs them all
        b = await launch(root / "b", llm, CONFIG)
    except BaseException:
        await a.stop()
        raise
    try:
        assert not b.services.ownership.mine, "a holds every lease"
        await b.quiet()
        yield a, b
    finally:
        await b.stop()
        await a.stop()
