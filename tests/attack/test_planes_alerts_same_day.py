"""Attack: on PostgreSQL (its claims in `alerts_told`), a plane a step
behind another: the other claimed a001's hold by the fleet's ceiling first,
then saw it resume and be held again, the same day, while this plane still
showed the first hold. Lifting the fleet's ceiling, this plane ended the
hold it had found claimed by naming its day, which was the next hold's too:
it told a001 resumed a second time, and took the claim of the next hold,
whose resume the other plane then could not tell. Each hold is stamped:
this plane ends the one it found, which is gone, and leaves the next."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon.alert_claims import StoreClaims
from plane.daemon.alert_folds import Cause, Told
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import (
    a000_spends,
    arrived,
    names,
    other_claims,
    running_fleet,
    until_rows,
)
from tests.support.fleet_members import NOON
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FLEET = 3
WITHIN_S = 20.0
FLEETS = Cause("fleet")
TODAY = NOON.date()


@pytest.fixture
async def other(postgres_url: str) -> AsyncIterator[StoreClaims]:
    """The claims of another plane of the fleet, on the same store."""
    async with other_claims(postgres_url) as claims:
        yield claims


async def alerts(plane: RunningPlane, receiver: Receiver, count: int) -> list[tuple[str, list]]:
    """Until `count` alerts have arrived at the webhook: each one's event and agents."""
    return [(h["event"], h["agents"]) for h in await arrived(plane, receiver, count, WITHIN_S)]


async def test_a_plane_late_to_see_a_hold_end_leaves_the_same_days_next_hold_claimed(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver, other
):
    clock = ManualClock(NOON)
    async with running_fleet(
        tmp_path, scripted_llm, receiver, FLEET, clock, monkeypatch, postgres_url
    ) as plane:
        await a000_spends(plane)
        watching = plane.bus.subscribe()
        first = await other.told(FLEETS, ["a001"], "first", {}, TODAY, {})
        assert first == Told(["a001"], [], {"a001": "first"})
        await plane.send("a002", "/limit fleet 0.10")
        await until_rows(watching, names(FLEET), lambda row: row.hold_reason == "fleet")
        assert await alerts(plane, receiver, 1) == [("held", ["a000", "a002"])]
        # The other plane sees a001 resume and be held again; this one, behind, does not yet.
        resumed = await other.told(FLEETS, [], "", {"a001": "first"}, TODAY, {})
        held_again = await other.told(FLEETS, ["a001"], "next", {}, TODAY, {})
        assert (resumed.freed, held_again.held) == (["a001"], ["a001"])
        await clock.advance(timedelta(minutes=1))
        await plane.send("a002", "/limit fleet off")
        await until_rows(watching, names(FLEET), lambda row: row.status != "held")
        told = await alerts(plane, receiver, 2)
        ended = await other.told(FLEETS, [], "", {"a001": "next"}, TODAY, {})
    assert told == [("held", ["a000", "a002"]), ("resumed", ["a000", "a002"])]
    assert ended.freed == ["a001"], "the next hold's resume was told by no plane"
