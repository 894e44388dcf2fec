"""Attack: planes on PostgreSQL stopped over midnight. A fleet's hold told
on one day is a row of `alerts_told` per agent; the day turning, seen by a
running plane, forgets them. With no plane running at 00:00 UTC, no plane
saw the day turn: the rows stayed, and the next day the fleet's ceiling
held every agent again and no plane told it, each finding its claim taken
by the day before's (before: no alert at all that day)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from plane.clock import ManualClock
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import a000_spends, launch_fleet, names, until_rows
from tests.support.fleet_members import NOON
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0


async def held_by_the_fleet(plane: RunningPlane, receiver: Receiver, told: int) -> None:
    """a000 spends $0.20, then the fleet's ceiling is set under it: until
    every agent is held and `told` held alerts have arrived in all."""
    await a000_spends(plane)
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet 0.10")
    await until_rows(subscription, names(FLEET), lambda row: row.status == "held")
    async with asyncio.timeout(WITHIN_S):
        while sum(h["event"] == "held" for h in receiver.hooks()) < told:
            receiver.arrived.clear()
            await receiver.arrived.wait()


async def test_a_fleets_hold_the_day_after_planes_stopped_over_midnight_is_told(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    clock = ManualClock(NOON)
    plane = await launch_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    )
    try:
        await held_by_the_fleet(plane, receiver, 1)
    finally:
        await plane.stop()
    await clock.advance(timedelta(days=1))  # no plane runs at 00:00 UTC
    plane = await launch_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    )
    try:
        await held_by_the_fleet(plane, receiver, 2)
    finally:
        scripted_llm.hang_up()
        await plane.stop()
    assert [(h["event"], h["cause"], h["count"]) for h in receiver.hooks()] == [
        ("held", "fleet", FLEET),
        ("held", "fleet", FLEET),
    ]
