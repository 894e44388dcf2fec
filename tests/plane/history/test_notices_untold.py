"""A notice said once per change (a fallback left, `Conversation.forget_today`)
is asked of the store only when it may have been told: an agent's every
call below its fallback's ratio would otherwise write to the store, on
every plane sharing it. Leaving a fallback the same day takes a ceiling
raised or removed, so once known untold it is asked again only after a
ceiling moved (`Ceilings.changes`), on either store, shared or not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.clock import ManualClock, day_of
from plane.history.conversation import Conversation
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 12, 8, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared"])
async def test_a_notice_known_untold_is_asked_again_only_once_a_ceiling_moved(
    tmp_path: Path, shared: bool
) -> None:
    db = await open_db(tmp_path / "plane.db")
    clock = ManualClock(NOON)
    here, there = Conversation(db, clock, shared=shared), Conversation(db, clock, shared=shared)
    day = day_of(NOON)
    try:
        assert not await here.forget_today("demo", "fallback", day, 0)
        assert await there.first_today("demo", "fallback", day)  # told elsewhere meanwhile
        assert not await here.forget_today("demo", "fallback", day, 0), "not asked again"
        assert await here.forget_today("demo", "fallback", day, 1), "a ceiling moved: asked"
        assert not await here.forget_today("demo", "fallback", day, 1)
        assert await here.first_today("demo", "fallback", day)  # told here: known told
        assert await here.forget_today("demo", "fallback", day, 1)
    finally:
        await db.close()
