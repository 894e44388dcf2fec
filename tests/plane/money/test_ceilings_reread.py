"""Reading the ceilings again says what changed, on a real PostgreSQL shared
by two planes' ceilings: the agents whose ceiling as shown changed (its
value, where it comes from, a raise), whether the fleet's did, which
groups' did; and only those, among a thousand agents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.ceilings import Ceilings, Reread
from plane.store.postgres import PostgresDatabase

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOMORROW = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)

AGENTS = {f"agent-{n}": Decimal(5) for n in range(1000)} | {"loose": None}
"""A thousand agents at $5 a day, and one with no ceiling in the file."""

GROUPS = {"research": (Decimal(3), frozenset({"agent-1", "agent-2"}))}


@pytest.fixture
async def here_and_there(postgres_url) -> AsyncIterator[tuple[Ceilings, Ceilings]]:
    """This plane's ceilings, and another plane's on the same store (where
    the operator types), each on its own connection."""
    here_db = await PostgresDatabase.connect(postgres_url)
    there_db = await PostgresDatabase.connect(postgres_url)
    try:
        here, there = Ceilings(here_db, ManualClock(NOON)), Ceilings(there_db, ManualClock(NOON))
        for ceilings in (here, there):
            await ceilings.load(AGENTS, Decimal(50), GROUPS)
        yield here, there
    finally:
        await here_db.close()
        await there_db.close()


async def test_one_agents_ceiling_set_elsewhere_names_that_agent_only(here_and_there):
    here, there = here_and_there
    await there.set("agent-7", Decimal(2))
    assert await here.reload() == Reread(agents=frozenset({"agent-7"}))
    assert here.of("agent-7") == Decimal(2)


async def test_a_value_that_changes_only_where_the_ceiling_comes_from_is_named(here_and_there):
    """The file's $5 set again from the keyboard, and "off" where the file
    had none: the same value, but a row and `plane show` say its source."""
    here, there = here_and_there
    await there.set("agent-3", Decimal(5))
    await there.set("loose", None)
    assert await here.reload() == Reread(agents=frozenset({"agent-3", "loose"}))
    assert (here.source("agent-3"), here.source("loose")) == ("/limit", "/limit")


async def test_a_raise_and_an_ask_made_elsewhere_name_their_agents(here_and_there):
    here, there = here_and_there
    await there.raise_until("agent-1", Decimal(9), TOMORROW, lambda conn: None)
    assert await there.ask("agent-2", Decimal(1))
    assert await here.reload() == Reread(agents=frozenset({"agent-1", "agent-2"}))


async def test_the_fleets_and_a_groups_ceiling_set_elsewhere_are_named(here_and_there):
    here, there = here_and_there
    await there.set_fleet(Decimal("2.50"))
    await there.set_group("research", Decimal(0))
    assert await here.reload() == Reread(fleet=True, groups=frozenset({"research"}))
    assert (here.fleet(), here.groups.ceiling("research")) == (Decimal("2.50"), Decimal(0))


async def test_a_value_set_again_as_it_was_changes_nothing(here_and_there):
    """The fleet's ceiling set from the keyboard to the file's own: nothing
    a client shows changed, nothing is told, and no decision is stale."""
    here, there = here_and_there
    await there.set_fleet(Decimal(50))
    await there.set_group("research", Decimal(3))
    changes = here.changes
    reread = await here.reload()
    assert not reread
    assert here.changes == changes
