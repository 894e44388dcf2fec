"""A plane that stalls (a paused process) with a transaction open on its
lease rows — its fenced writes lock them `FOR SHARE`, a tick of its locks
them updated — does not slow the others down. A healthy plane's tick that
finds the stalled plane's leases run out does not wait on those rows while
it holds its own renewed ones: its own ledger writes, which check their
leases in the database, would queue behind it for as long as the server
lets a lock be waited for. It takes those leases at a later tick instead,
once the stalled transaction is gone (DESIGN.md: one plane stalls, the
others keep their pace)."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from plane.store.fence import FENCE
from plane.store.postgres_links import connect
from tests.support.fleet_members import Member, join

pytestmark = pytest.mark.timeout(60)

AGENTS = ["a", "b"]

HELD = {
    "fenced-writes": "SELECT agent FROM leases WHERE plane = 'A' FOR SHARE",
    "a-tick": "UPDATE leases SET expires_ms = expires_ms, epoch = epoch + 1 WHERE plane = 'A'",
}
"""What the stalled plane A's open transaction holds on its leases' rows."""


async def a_holds_b_and_b_holds_a(url: str) -> tuple[Member, Member]:
    """Planes A and B, each holding one agent's lease (A took both alone,
    then let one go for B to take)."""
    a = await join(url, "A", AGENTS, shared=True)
    b = await join(url, "B", AGENTS, shared=True)
    await a.fleet.tick(first=True)
    await b.fleet.tick(first=True)
    assert (await a.fleet.tick()).mine == {"b"}
    assert (await b.fleet.tick()).gained == {"a"}
    return a, b


def one_row(url: str, sql: str, *params: object) -> tuple[Any, ...]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql, params).fetchone()
        assert row is not None
        return tuple(row)


async def blocked_or_done(url: str, pid: int, tick: asyncio.Future[Any]) -> None:
    """Until a session waits on the lock of the stalled one (`pid`), or `tick` is done."""
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
    while not tick.done() and one_row(url, waiting, pid) == (0,):  # noqa: ASYNC110 - the server's state
        await asyncio.sleep(0.01)


async def gone(url: str, pid: int) -> None:
    """Until the server has ended the session `pid` whose client closed it
    (its locks go with it, a moment after the close returns)."""
    alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s"
    deadline = time.monotonic() + 10
    while one_row(url, alive, pid) != (0,):
        assert time.monotonic() < deadline, f"the server kept session {pid} after its close"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("held", HELD.values(), ids=HELD.keys())
async def test_a_stalled_planes_locked_leases_never_queue_anothers_ledger(postgres_url, held):
    a, b = await a_holds_b_and_b_holds_a(postgres_url)
    try:
        (epoch,) = one_row(postgres_url, "SELECT epoch FROM leases WHERE agent = 'b'")
        # A is paused past its lease, a transaction of its open on the lease's row,
        # on a session with a plane's bounds: the server ends it after BOUND_S idle.
        one_row(postgres_url, "UPDATE leases SET expires_ms = 1 WHERE plane = 'A' RETURNING 1")
        one_row(postgres_url, "UPDATE planes SET seen_ms = 1 WHERE name = 'A' RETURNING 1")
        stalled = connect(postgres_url)
        pid = stalled.info.backend_pid
        try:
            stalled.execute("BEGIN")
            stalled.execute(held)
            ticking = asyncio.ensure_future(b.fleet.tick())
            await blocked_or_done(postgres_url, pid, ticking)
            token, began = FENCE.set(b.ownership.fence("a")), time.monotonic()
            try:
                call = await b.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
            finally:
                FENCE.reset(token)
            print(f"B's call was written in {time.monotonic() - began:.3f} s")
            alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s"
            assert one_row(postgres_url, alive, pid) == (1,), (
                "B's call waited on its own tick until the stalled transaction was ended"
            )
            tick = await ticking
            assert tick.mine == {"a"} and tick.gained == set(), "a lease taken from a locked row"
        finally:
            stalled.close()
        await gone(postgres_url, pid)
        assert one_row(postgres_url, "SELECT agent FROM calls WHERE id = %s", call) == ("a",)

        # The stalled transaction gone, B's next tick takes A's agent: the epoch moved by one.
        tick = await b.fleet.tick()
        assert tick.gained == {"b"} and tick.mine == {"a", "b"}
        assert tick.epochs["b"] == epoch + 1
    finally:
        await a.db.close()
        await b.db.close()
