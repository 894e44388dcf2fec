"""A cause's rows in `alerts_told` are its own: a group named as the fleet's
or the day's rows are (`fleet`, `day`) is claimed apart from them, so its
hold never takes, nor is kept untold by, the fleet's or the day's claim.
And a plane ends only the hold it claimed: two planes' claims on one real
PostgreSQL, driven in the order a plane seconds behind the other sees them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest

from plane.daemon.alert_claims import StoreClaims, agent_key, cause_key
from plane.daemon.alert_folds import Cause, Told
from plane.store import open_store
from plane.store.migrations import MIGRATIONS
from plane.store.postgres import PostgresDatabase
from tests.support.old_stores import postgres_before, sqlite_before


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


@pytest.mark.parametrize("next_day", [D2, D1], ids=["the-day-after", "the-same-day"])
async def test_a_plane_late_to_see_a_hold_end_leaves_the_next_hold_claimed(two_claims, next_day):
    """A told x held by the fleet's ceiling, and its resume, and its next
    hold (the day after, or the same day); B, which claimed the first hold
    too, sees it end only then. B's delete of that first hold took A's row
    of the second: B told a resume already told, and the second hold's
    resume was told by no plane."""
    a, b = two_claims
    fleet = Cause("fleet")
    assert await a.told(fleet, ["x"], "a1", {}, D1, {}) == Told(["x"], [], {"x": "a1"})
    assert await b.told(fleet, ["x"], "b1", {}, D1, {}) == Told([], [], {"x": "a1"})
    assert await a.told(fleet, [], "a2", {"x": "a1"}, D1, {}) == Told([], ["x"], {})
    assert await a.told(fleet, ["x"], "a3", {}, next_day, {}) == Told(["x"], [], {"x": "a3"})
    late = await b.told(fleet, [], "b2", {"x": "a1"}, next_day, {})
    assert late == Told([], [], {}), "B ended A's next hold"
    assert await a.told(fleet, [], "a4", {"x": "a3"}, next_day, {}) == Told([], ["x"], {})


@pytest.mark.parametrize("next_day", [D2, D1], ids=["the-day-after", "the-same-day"])
async def test_a_plane_late_to_see_an_agent_leave_a_fold_leaves_its_next_hold_claimed(
    two_claims, next_day
):
    """The same of an agent that left the fold for a hold of its own: B's
    late delete of the first hold (told nothing) took the row of the next,
    whose resume was then told by no plane."""
    a, b = two_claims
    group = Cause("group", "research")
    assert await a.told(group, ["x"], "a1", {}, D1, {}) == Told(["x"], [], {"x": "a1"})
    assert await b.told(group, ["x"], "b1", {}, D1, {}) == Told([], [], {"x": "a1"})
    assert await a.told(group, [], "a2", {}, D1, {"x": "a1"}) == Told([], [], {})
    assert await a.told(group, ["x"], "a3", {}, next_day, {}) == Told(["x"], [], {"x": "a3"})
    assert await b.told(group, [], "b2", {}, next_day, {"x": "a1"}) == Told([], [], {})
    resumed = await a.told(group, [], "a4", {"x": "a3"}, next_day, {})
    assert resumed == Told([], ["x"], {}), "its resume told by none"


async def test_a_hold_standing_when_a_plane_first_showed_it_is_ended_whichever_it_is(two_claims):
    """A hold B never claimed (held when B started) ends on B as before:
    its stamp unknown there, its row is deleted whichever hold it is."""
    a, b = two_claims
    fleet = Cause("fleet")
    assert await a.told(fleet, ["x"], "a1", {}, D1, {}) == Told(["x"], [], {"x": "a1"})
    assert await b.told(fleet, [], "b1", {"x": None}, D2, {}) == Told([], ["x"], {})
    assert await a.told(fleet, [], "a2", {"x": "a1"}, D2, {}) == Told([], [], {})


@pytest.mark.parametrize("what", ["held", "amber"])
async def test_a_plane_late_to_see_an_agents_event_end_leaves_its_next_claimed(two_claims, what):
    """A gateway agent's own hold (or amber), told by A, then its end, then
    the next the same day; B, which claimed the first too, sees it end only
    then. B's delete took A's row of the next: B told a resume already
    told, and the next one's resume was told by no plane."""
    a, b = two_claims
    assert await a.agent_told("aider", what, D1, "a1") == (True, "a1")
    assert await b.agent_told("aider", what, D1, "b1") == (False, "a1")
    assert await a.agent_freed("aider", what, "a1") is True
    assert await a.agent_told("aider", what, D1, "a2") == (True, "a2")
    assert await b.agent_freed("aider", what, "a1") is False, "B ended A's next"
    assert await a.agent_freed("aider", what, "a2") is True, "its resume told by none"


async def test_an_agents_event_standing_when_a_plane_first_showed_it_is_ended_whichever(
    two_claims,
):
    """An event B never claimed (so when B started) ends on B as before."""
    a, b = two_claims
    assert await a.agent_told("aider", "held", D1, "a1") == (True, "a1")
    assert await b.agent_freed("aider", "held", None) is True
    assert await a.agent_freed("aider", "held", "a1") is False


STAMPED = next(n for n, script in enumerate(MIGRATIONS) if "alerts_told ADD COLUMN hold" in script)
"""The step that stamps each claim with its hold (the schema before it is
`MIGRATIONS[:STAMPED]`)."""
OLD_CLAIM = "INSERT INTO alerts_told (cause, agent, day, plane) VALUES ('fleet', 'x', ?, 'a')"


async def test_a_hold_claimed_before_holds_were_stamped_is_ended_whichever_it_is(
    bare_postgres_url: str, tmp_path: Path
):
    """A shared store an older plane told x held in: the plane that opens
    it takes the step; the hold it finds claimed has no stamp, and is ended
    whichever hold it is, once."""
    with postgres_before(bare_postgres_url, STAMPED) as old:
        old.execute(OLD_CLAIM, (D1.isoformat(),))
    db = await open_store(bare_postgres_url, tmp_path / "plane.db")
    try:
        a, b = StoreClaims(db, "a"), StoreClaims(db, "b")
        fleet = Cause("fleet")
        assert await b.told(fleet, ["x"], "b1", {}, D1, {}) == Told([], [], {"x": None})
        assert await b.told(fleet, [], "b2", {"x": None}, D1, {}) == Told([], ["x"], {})
        assert await a.told(fleet, [], "a1", {"x": None}, D1, {}) == Told([], [], {})
    finally:
        await db.close()


async def test_a_plane_file_from_before_holds_were_stamped_takes_the_step(tmp_path: Path):
    """A SQLite file (one plane, no claims) takes the step too: its rows
    kept, each with no stamp."""
    path = tmp_path / "plane.db"
    old = sqlite_before(path, STAMPED)
    old.execute(OLD_CLAIM, (D1.isoformat(),))
    old.commit()
    old.close()
    db = await open_store(None, path)
    try:
        rows = await db.fetchall("SELECT cause, agent, day, plane, hold FROM alerts_told")
        assert [tuple(row) for row in rows] == [("fleet", "x", D1.isoformat(), "a", None)]
    finally:
        await db.close()
