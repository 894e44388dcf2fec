"""What a snapshot reads, and what the plane keeps in memory instead of
reading: each agent's waiting count and spend today. A snapshot makes the
same few queries for 2 agents as for 40; the figures in memory are the
table's after writes, after a write that failed, and after a restart."""

import sqlite3
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.errors import LedgerError
from plane.history.conversation import Conversation
from plane.money.ledger import Ledger
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG, NOON
from tests.support.fixtures_postgres import open_db, refuse

WAITING = "SELECT agent, COUNT(*) FROM messages WHERE waiting = 1 GROUP BY agent"


def with_agents(count: int) -> str:
    """The fixture's config, with `count` more agents held by a $0 ceiling
    (a message to them waits)."""
    listed = "".join(f"  held-{n}: {{limitUsd: 0}}\n" for n in range(count))
    return CONFIG.replace("agents:\n", "agents:\n" + listed)


async def snapshot_queries(plane) -> int:
    """Reads and writes one snapshot asks of the database, once warm."""
    db = plane.runtime.db
    await plane.rows.snapshot()  # the first reads what is then kept
    before = db.counts.reads + db.counts.writes
    snapshot = await plane.rows.snapshot()
    assert all(a.waiting == 1 for a in snapshot.agents if a.name.startswith("held-"))
    return db.counts.reads + db.counts.writes - before


async def stop_refusing(db) -> None:
    from plane.store.postgres import PostgresDatabase

    on = " ON messages" if isinstance(db, PostgresDatabase) else ""
    await db.write(lambda conn: conn.execute(f"DROP TRIGGER refuse{on}"))


async def in_table(db) -> dict[str, int]:
    return {agent: int(n) for agent, n in await db.fetchall(WAITING)}


@pytest.mark.parametrize("agents", [2, 40])
async def test_a_snapshot_makes_the_same_few_queries_whatever_the_agents(start_plane, agents):
    plane = await start_plane(with_agents(agents))
    for n in range(agents):
        await plane.send(f"held-{n}", "are you there?")
    await plane.quiet()
    assert await snapshot_queries(plane) <= 2


@pytest.mark.usefixtures("each_store")
async def test_waiting_counts_in_memory_are_the_tables(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    conversation = Conversation(db, ManualClock(NOON))
    questions = [
        await conversation.append(agent, "operator", f"question {n}", waiting=True)
        for agent in ("ada", "bob")
        for n in range(3)
    ]
    await conversation.append("ada", "plane", "not a question")
    assert await conversation.waiting_counts() == await in_table(db) == {"ada": 3, "bob": 3}

    await conversation.end_turn("ada", "", [questions[0].id, questions[0].id], None)
    await conversation.end_turn("bob", "an answer", [q.id for q in questions[3:]], None)
    assert await conversation.waiting_counts() == await in_table(db) == {"ada": 2}
    assert await conversation.count_waiting("bob") == 0

    conversation.renamed("ada", "cy")  # as lifecycle does, after its commit moved the rows
    moved = "UPDATE messages SET agent = 'cy' WHERE agent = 'ada'"
    await db.write(lambda conn: conn.execute(moved))
    assert await conversation.waiting_counts() == await in_table(db) == {"cy": 2}

    # A write that fails moves nothing.
    await refuse(db, "UPDATE", "messages", "refused")
    with pytest.raises(sqlite3.DatabaseError, match="refused"):
        await conversation.end_turn("cy", "never said", [questions[1].id], None)
    await stop_refusing(db)
    await refuse(db, "INSERT", "messages", "refused")
    with pytest.raises(sqlite3.DatabaseError, match="refused"):
        await conversation.append("cy", "operator", "lost", waiting=True)
    assert await conversation.waiting_counts() == await in_table(db) == {"cy": 2}
    await db.close()

    # A restart reads them again, once, from the table.
    db = await open_db(tmp_path / "plane.db")
    conversation = Conversation(db, ManualClock(NOON))
    assert await conversation.waiting_counts() == await in_table(db) == {"cy": 2}
    assert await conversation.count_waiting("cy") == 2
    await db.close()


async def test_rename_and_delete_keep_the_counts_right(start_plane):
    plane = await start_plane(with_agents(1))
    await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model", role="a role"))
    await plane.send("made", "/limit 0")
    await plane.send("made", "first")
    await plane.send("made", "second")
    await plane.quiet()
    conversation, db = plane.services.conversation, plane.runtime.db
    assert (await conversation.waiting_counts())["made"] == 2
    await plane.runtime.api.handle(p.RenameAgent(id=1, agent="made", new_name="renamed"))
    counts = await conversation.waiting_counts()
    assert counts == await in_table(db) and counts["renamed"] == 2 and "made" not in counts
    await plane.runtime.api.handle(p.DeleteAgent(id=2, agent="renamed"))
    counts = await conversation.waiting_counts()
    assert counts == await in_table(db) and "renamed" not in counts


async def spent_in_table(db, day: str) -> dict[str, Decimal]:
    """Each agent's spend on `day` summed from its calls, pending at their estimates."""
    sums: dict[str, Decimal] = {}
    for agent, cost in await db.fetchall("SELECT agent, cost_usd FROM calls WHERE day = ?", day):
        sums[agent] = sums.get(agent, Decimal(0)) + Decimal(cost)
    return sums


@pytest.mark.usefixtures("each_store")
async def test_spend_today_in_memory_is_the_tables(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    ledger = Ledger(db, ManualClock(NOON))
    day = NOON.date().isoformat()
    calls = [
        (await ledger.open_call(agent, "p", "m", Decimal("0.05"), "estimate"), agent)
        for agent in ("ada", "bob")
        for _ in range(3)
    ]
    for call, _ in calls[:4]:
        await ledger.settle(call, Usage(input_tokens=10), Decimal("0.0123"), "table")
    assert await ledger.spend_by_agent() == await spent_in_table(db, day)

    await refuse(db, "UPDATE", "calls", "refused")
    with pytest.raises(LedgerError, match="refused"):
        await ledger.settle(calls[4][0], Usage(), Decimal("0.02"), "table")
    assert await ledger.spend_by_agent() == await spent_in_table(db, day)
    await db.close()

    db = await open_db(tmp_path / "plane.db")
    again = await Ledger(db, ManualClock(NOON)).spend_by_agent()
    assert (
        again
        == await spent_in_table(db, day)
        == {"ada": Decimal("0.0369"), "bob": Decimal("0.1123")}
    )
    await db.close()


@pytest.mark.usefixtures("each_store")
@pytest.mark.parametrize("agents", [2, 40])
async def test_under_a_fleet_ceiling_a_snapshot_reads_the_fleets_spend_once(start_plane, agents):
    """With planes sharing a store, the fleet's spend is read from it (the
    others' calls are not in this plane's sums): once a snapshot, not once
    a row."""
    idle = "".join(f"  idle-{n}: {{}}\n" for n in range(agents))  # the gate asks the fleet of each
    config = with_agents(agents).replace("agents:\n", "agents:\n" + idle)
    plane = await start_plane(config + "fleet: {limitUsd: 50}\n")
    for n in range(agents):
        await plane.send(f"held-{n}", "are you there?")
    await plane.quiet()
    assert await snapshot_queries(plane) <= 3


@pytest.mark.parametrize("agents", [2, 40])
@pytest.mark.parametrize("each_store", ["postgresql"], indirect=True)
async def test_a_snapshot_reads_each_group_once_whatever_its_agents(
    start_plane, agents, each_store
):
    """Several planes' ledgers read a group's spend from the store: once a
    group for a snapshot, not once an agent of it."""
    listed = "".join(f"  g-{n}: {{}}\n" for n in range(agents))
    members = ", ".join(f"g-{n}" for n in range(agents))
    config = CONFIG.replace("agents:\n", "agents:\n" + listed) + (
        f"groups:\n  research: {{limitUsd: 5, agents: [{members}]}}\n"
    )
    plane = await start_plane(config)
    plane.services.ledger.plane = "plane-a"  # as a plane sharing its store reads
    await plane.quiet()
    db = plane.runtime.db
    await plane.rows.snapshot()
    before = db.counts.reads
    await plane.rows.snapshot()
    assert db.counts.reads - before <= 4


async def test_a_snapshot_walks_the_workers_without_looking_each_up_again(start_plane, monkeypatch):
    """Every row comes from one walk over the workers, not a lookup by name
    an agent on top of it (Mapping's own `items()`: a third of a busy
    snapshot's CPU at 10,000 agents)."""
    from plane.agents.workers import Workers

    plane = await start_plane(with_agents(40))
    looked_up = 0
    original = Workers.__getitem__

    def counted(self, agent):
        nonlocal looked_up
        looked_up += 1
        return original(self, agent)

    monkeypatch.setattr(Workers, "__getitem__", counted)
    snapshot = await plane.rows.snapshot()
    assert len(snapshot.agents) > 40
    assert looked_up < 40, f"{looked_up} lookups for {len(snapshot.agents)} rows"
