"""The calls priced at a floor are found through their own index on a
store several planes share: each plane of a fleet asks for them at every
renewal, and through the index by day a busy agent's whole day was read to
find none. A plane on its own asks once, at start, and its calls do not pay
for the index's condition."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from plane.daemon.gateway_agents import FLOORED
from plane.money.stored import FLOOR_PRICED
from plane.store.postgres import PostgresDatabase
from plane.wire.words import FLOOR
from tests.support.fixtures_postgres import open_db

pytestmark = pytest.mark.usefixtures("each_store")

ONE_AGENTS = f"SELECT DISTINCT agent FROM calls WHERE day = '2026-11-29' AND {FLOOR_PRICED}"
"""The ledger's `floor_priced_agents`, its day written in."""


def test_the_condition_names_the_floor_s_words():
    assert FLOOR_PRICED == f"price_source LIKE '%{FLOOR}'"


def a_busy_day(conn: sqlite3.Connection) -> None:
    """Two agents' 2,000 calls of a day, one of them priced at a floor, and
    the planner told so (`ANALYZE`)."""
    conn.executemany(
        "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status)"
        " VALUES (?, '2026-11-29', '', 'p', 'm', '0.01', ?, 'settled')",
        [("ab"[n % 2], f"table, {FLOOR}" if n == 7 else "table") for n in range(2000)],
    )
    conn.execute("ANALYZE calls")


async def test_the_floor_priced_calls_are_read_through_their_index(tmp_path: Path):
    db = await open_db(tmp_path / "plane.db")
    try:
        await db.write(a_busy_day)
        if isinstance(db, PostgresDatabase):

            def plans(conn: sqlite3.Connection) -> list[str]:
                found = []
                for sql, params in ((ONE_AGENTS, ()), (FLOORED, ("2026-11-29", ["a", "b"]))):
                    found.append(" ".join(r[0] for r in conn.execute(f"EXPLAIN {sql}", params)))
                return found

            for plan in await db.write(plans):
                assert "calls_floor_priced" in plan, plan
        else:  # one plane, which asks once, at start: its calls pay no condition

            def indexes(conn: sqlite3.Connection) -> list[str]:
                return [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]

            assert "calls_by_day" in await db.write(indexes)
            assert "calls_floor_priced" not in await db.write(indexes)
    finally:
        await db.close()


async def test_a_literal_percent_reaches_the_store_as_written(tmp_path: Path):
    """With values to bind or none, through the writer and the reader: a
    statement without values sent `%%` where it said `%`, so the index above,
    made by such a statement, was not the condition its readers state."""
    db = await open_db(tmp_path / "plane.db")
    try:
        said = "SELECT '100%' || 'x', ? || '%'"

        def written(conn: sqlite3.Connection) -> list[tuple[str, ...]]:
            bare = conn.execute("SELECT '100%' || 'x'").fetchone()
            bound = conn.execute(said, ("5",)).fetchone()
            return [tuple(bare), tuple(bound)]

        assert await db.write(written) == [("100%x",), ("100%x", "5%")]
        assert [tuple(r) for r in await db.fetchall("SELECT '100%' || 'x'")] == [("100%x",)]
        assert [tuple(r) for r in await db.fetchall(said, "5")] == [("100%x", "5%")]
    finally:
        await db.close()
