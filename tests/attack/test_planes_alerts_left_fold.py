"""Attack: on PostgreSQL (its claims in `alerts_told`), an agent held by the
fleet's ceiling, then by its own instead (still held: told held by its
own, as the fleet's resume leaves it out), then freed. The
fleet's claim of it stayed: the fleet's next hold that day left it out of
its alert (2 agents told held of 3). The claim of an agent that leaves a
fold for another hold is released with it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from plane.clock import ManualClock
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import a000_spends, arrived, names, running_fleet, until_rows
from tests.support.fleet_members import NOON
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0


async def alerts(plane: RunningPlane, receiver: Receiver, count: int) -> list[tuple[str, str]]:
    """Until `count` alerts have arrived at the webhook: each one's event and cause."""
    return [(h["event"], h["cause"]) for h in await arrived(plane, receiver, count, WITHIN_S)]


async def test_an_agent_that_left_the_fleets_hold_for_its_own_is_told_in_its_next(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
):
    clock = ManualClock(NOON)
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    ) as plane:
        await a000_spends(plane)
        watching = plane.bus.subscribe()
        await plane.send("a002", "/limit fleet 0.10")
        await until_rows(watching, names(FLEET), lambda row: row.hold_reason == "fleet")
        await alerts(plane, receiver, 1)
        await plane.send("a001", "/limit 0")  # its own ceiling holds it now
        await until_rows(watching, ["a001"], lambda row: row.hold_reason not in (None, "fleet"))
        await alerts(plane, receiver, 2)
        await clock.advance(timedelta(minutes=1))
        await plane.send("a002", "/limit fleet off")
        await until_rows(watching, ["a000", "a002"], lambda row: row.status != "held")
        await alerts(plane, receiver, 3)
        await plane.send("a001", "/limit 5")
        await until_rows(watching, ["a001"], lambda row: row.status != "held")
        await alerts(plane, receiver, 4)
        await clock.advance(timedelta(minutes=1))
        await plane.send("a002", "/limit fleet 0.10")
        await until_rows(watching, names(FLEET), lambda row: row.hold_reason == "fleet")
        told = await alerts(plane, receiver, 5)
    assert told == [
        ("held", "fleet"),
        ("held", "agent"),
        ("resumed", "fleet"),
        ("resumed", "agent"),
        ("held", "fleet"),
    ]
    held = receiver.hooks()[-1]
    assert (held["count"], held["agents"]) == (FLEET, names(FLEET))
