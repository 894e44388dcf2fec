"""A plane taking over sweeps the calls a dead plane left in flight, each
counted at its estimate (an interrupt does the same with an agent's). The
plane it thought dead may be settling one at that moment (it was stalled,
not dead): the call must count once, at what the settle or the cut said,
never at both. The cut read the calls in flight, then marked them; a
settle committed between the two was counted by the settle and again, at
its estimate, in the cut's sums."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from plane.money.day_sums import DaySums
from plane.money.interrupted import interrupt_pending, sweep
from plane.store.postgres import PostgresDatabase

pytestmark = pytest.mark.timeout(60)

PENDING = (
    "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status, plane)"
    " VALUES ('demo', '2026-11-29', '', 'p', 'm', '0.50', 'table', 'pending', 'A') RETURNING id"
)
WAITING = (
    "SELECT COUNT(*) FROM pg_stat_activity"
    " WHERE wait_event_type = 'Lock' AND query LIKE %s AND datname = current_database()"
)


async def waiting_on_a_row(url: str) -> None:
    """Until a transaction waits for a row of `calls` another holds."""
    with psycopg.connect(url, autocommit=True) as watcher:
        for _ in range(400):
            if watcher.execute(WAITING, ("%calls%",)).fetchone() != (0,):
                return
            await asyncio.sleep(0.025)
    raise AssertionError("the cut never reached the call another transaction held")


def swept(conn) -> int:
    """A takeover's sweep of plane A's calls in flight: how many it counted."""
    return sum(cut.calls for cut in sweep(conn, None, planes=["A"]).values())


def interrupted(conn) -> int:
    """An interrupt of demo's calls in flight (`Ledger.interrupt_open`): how many it counted."""
    sums = DaySums()
    calls, cut = interrupt_pending(conn, "demo", sums)
    sums.write(conn)
    assert len(calls) == cut.calls
    return cut.calls


@pytest.mark.parametrize("cut_by", [swept, interrupted])
async def test_a_call_settled_as_it_is_cut_counts_once(postgres_url, cut_by):
    db = await PostgresDatabase.connect(postgres_url)
    try:
        call = (await db.write(lambda conn: conn.execute(PENDING).fetchone()))[0]
        with psycopg.connect(postgres_url) as settling:  # plane A, back: its close in flight
            settling.execute("SELECT id FROM calls WHERE id = %s FOR UPDATE", (call,))
            cutting = asyncio.create_task(db.write(cut_by))
            await waiting_on_a_row(postgres_url)
            settling.execute(
                "UPDATE calls SET status = 'settled', cost_usd = '0.20'"
                " WHERE id = %s AND status = 'pending'",
                (call,),
            )
            settling.commit()
            counted = await cutting
        rows = await db.fetchall("SELECT status, cost_usd FROM calls WHERE id = ?", call)
        assert [tuple(r) for r in rows] == [("settled", "0.20")]
        assert counted == 0, "a call counted at its estimate and settled"
        assert await db.fetchall("SELECT * FROM spend WHERE agent = 'demo'") == []
    finally:
        await db.close()
