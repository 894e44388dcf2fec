"""The checks on a call's status and on a part's kind, as comparisons (the
last schema step): SQLite built a temporary table of an IN list at every
row it wrote. The same rules on every store; a file made before the step
upgrades with its rows as they were."""

import sqlite3
from functools import partial

import pytest

from plane.store.migrations import MIGRATIONS, sqlite_own
from plane.store.postgres_dialect import ddl
from tests.support.fixtures_postgres import open_db
from tests.support.old_stores import sqlite_before

pytestmark = pytest.mark.usefixtures("each_store")
sqlite_only = pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)

CALL = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status)"
    " VALUES (?, '2026-11-29', 't', 'p', 'm', ?, 'table', ?)"
)
SETTLE = "UPDATE calls SET cost_usd = ?, status = ? WHERE id = ? AND status = 'pending'"
PART = (
    "INSERT INTO call_parts (call, part, tool, mcp_server, input_tokens, cost_usd)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


STEP = next(n for n, script in enumerate(MIGRATIONS) if "writable_schema" in script)
"""The step that rewrites the checks (its index: the schema before it is `MIGRATIONS[:STEP]`)."""


def write(sql: str, values: tuple[object, ...], conn: sqlite3.Connection) -> None:
    conn.execute(sql, values)


def lists_built(conn: sqlite3.Connection, sql: str, values: int) -> int:
    """How many temporary tables SQLite builds to run `sql` once."""
    ops = [row[1] for row in conn.execute("EXPLAIN " + sql, (1,) * values)]
    return ops.count("OpenEphemeral")


@sqlite_only
async def test_a_file_from_before_upgrades_with_its_rows_and_builds_no_list(tmp_path):
    path = tmp_path / "plane.db"
    old = sqlite_before(path, STEP)
    rows = [("demo", "0.000000123456789", "settled"), ("scout", "0.05", "pending")]
    old.executemany(CALL, rows)
    old.execute(PART, (1, "tool", "search", None, 120, "0.0001"))
    old.commit()
    # Before the step, each write of a call or a part built its list.
    assert lists_built(old, SETTLE, 3) == lists_built(old, CALL, 3) == 1
    assert lists_built(old, PART, 6) == 1
    old.close()

    db = await open_db(path)
    await db.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT agent, cost_usd, status FROM calls ORDER BY id").fetchall() == rows
    assert conn.execute("SELECT call, part, tool FROM call_parts").fetchall() == [
        (1, "tool", "search")
    ]
    assert lists_built(conn, SETTLE, 3) == lists_built(conn, CALL, 3) == 0
    assert lists_built(conn, PART, 6) == 0
    conn.close()


async def test_a_status_or_a_part_outside_the_rules_is_still_refused(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        for status in ("pending", "settled", "interrupted", "failed"):
            await db.write(partial(write, CALL, ("demo", "0.01", status)))
        for part in ("prompt", "messages", "tool", "output"):
            await db.write(partial(write, PART, (1, part, None, None, 1, "0")))
        with pytest.raises(sqlite3.Error, match=r"(?i)check"):
            await db.write(lambda conn: conn.execute(CALL, ("demo", "0.01", "paid")))
        with pytest.raises(sqlite3.Error, match=r"(?i)check"):
            await db.write(lambda conn: conn.execute(PART, (1, "tools", None, None, 1, "0")))
        with pytest.raises(sqlite3.Error, match=r"(?i)check"):
            await db.write(lambda conn: conn.execute("UPDATE calls SET status = 'Settled'"))
        counted = await db.fetchall("SELECT status, COUNT(*) FROM calls GROUP BY status")
        assert sorted(tuple(row) for row in counted) == [
            ("failed", 1), ("interrupted", 1), ("pending", 1), ("settled", 1)
        ]  # fmt: skip
    finally:
        await db.close()


def test_the_step_is_sqlites_own_and_postgresql_has_nothing_to_do():
    assert sqlite_own(MIGRATIONS[STEP])
    assert ddl(MIGRATIONS[STEP]) == []
    assert [n for n, script in enumerate(MIGRATIONS) if sqlite_own(script)] == [STEP]
