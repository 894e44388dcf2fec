"""A cause's rows in `alerts_told` are its own: a group named as the fleet's
or the day's rows are (`fleet`, `day`) is claimed apart from them, so its
hold never takes, nor is kept untold by, the fleet's or the day's claim.
And a plane ends only the hold it claimed: two planes' claims on one real
PostgreSQL, driven in the order a plane seconds behind the other sees them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date

import pytest

from plane.daemon.alert_claims import StoreClaims, agent_key, cause_key
from plane.daemon.alert_folds import Cause
from plane.store.postgres import PostgresDatabase


def test_a_group_named_fleet_or_day_has_rows_of_its_own():
    causes = [
        Cause("fleet"),
        Cause("day"),
        Cause("group", "fleet"),
        Cause("group", "day"),
        Cause("group", "agent"),
        Cause("fleet", model="day"),
        Cause("group", "fleet", "day"),
    ]
    keys = [cause_key(cause) for cause in causes] + [agent_key("held"), agent_key("amber")]
    assert len(set(keys)) == len(keys)


D1, D2 = date(2026, 11, 29), date(2026, 11, 30)


@pytest.fixture
async def two_claims(postgres_url: str) -> AsyncIterator[tuple[StoreClaims, StoreClaims]]:
    """Planes A and B's claims, on one real PostgreSQL store."""
    db = await PostgresDatabase.connect(postgres_url)
    try:
        yield StoreClaims(db, "a"), StoreClaims(db, "b")
    finally:
        await db.close()


async def test_a_plane_late_to_see_a_hold_end_leaves_the_next_days_hold_claimed(two_claims):
    """A told x held by the fleet's ceiling on one day, and its resume, and
    its next hold the day after; B, which claimed the first hold too, sees
    it end only then. B's delete of that first hold took A's row of the
    second: B told a resume already told, and the second hold's resume was
    told by no plane."""
    a, b = two_claims
    fleet = Cause("fleet")
    assert await a.told(fleet, ["x"], {}, D1, {}) == (["x"], [])
    assert await b.told(fleet, ["x"], {}, D1, {}) == ([], [])
    assert await a.told(fleet, [], {"x": D1}, D1, {}) == ([], ["x"])
    assert await a.told(fleet, ["x"], {}, D2, {}) == (["x"], [])
    assert await b.told(fleet, [], {"x": D1}, D2, {}) == ([], []), "B ended A's next hold"
    assert await a.told(fleet, [], {"x": D2}, D2, {}) == ([], ["x"])


async def test_a_plane_late_to_see_an_agent_leave_a_fold_leaves_its_next_hold_claimed(two_claims):
    """The same of an agent that left the fold for a hold of its own: B's
    late delete of the first hold (told nothing) took the row of the next,
    whose resume was then told by no plane."""
    a, b = two_claims
    group = Cause("group", "research")
    assert await a.told(group, ["x"], {}, D1, {}) == (["x"], [])
    assert await b.told(group, ["x"], {}, D1, {}) == ([], [])
    assert await a.told(group, [], {}, D1, {"x": D1}) == ([], [])
    assert await a.told(group, ["x"], {}, D2, {}) == (["x"], [])
    assert await b.told(group, [], {}, D2, {"x": D1}) == ([], [])
    assert await a.told(group, [], {"x": D2}, D2, {}) == ([], ["x"]), "its resume told by none"


async def test_a_hold_standing_when_a_plane_first_showed_it_is_ended_whatever_its_day(two_claims):
    """A hold B never claimed (held when B started) ends on B as before:
    its day unknown there, its row is deleted whichever day it was told."""
    a, b = two_claims
    fleet = Cause("fleet")
    assert await a.told(fleet, ["x"], {}, D1, {}) == (["x"], [])
    assert await b.told(fleet, [], {"x": None}, D2, {}) == ([], ["x"])
    assert await a.told(fleet, [], {"x": D1}, D2, {}) == ([], [])
