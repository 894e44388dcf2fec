"""A plane's renewal of its leases never waits on its own writes while it
holds rows they want. Each fenced write locks its agent's lease row to its
commit (plane/store/postgres.py), and one transaction carries several
writes: a renewal that locked agent a's row and waited for b's, held by
such a transaction, which then asked for a's, made each wait for the other
until PostgreSQL ended one of them (a second later, the write's batch or
the tick run again). The renewal passes over a row its plane's writes hold
and renews it a moment later."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from plane.store.postgres_links import connect
from tests.support.fleet_members import join

pytestmark = pytest.mark.timeout(60)

SHARE = "SELECT agent FROM leases WHERE agent = %s FOR SHARE"
"""A fenced write's check of its agent's lease, held to its commit."""
WAITING_ON = "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
CROSSED = (
    "SELECT count(*) FROM pg_stat_activity p, pg_stat_activity q"
    " WHERE p.pid = ANY(pg_blocking_pids(q.pid)) AND q.pid = ANY(pg_blocking_pids(p.pid))"
)
"""Sessions waiting on each other: a deadlock, before the server breaks it."""


def one_row(url: str, sql: str, *params: object) -> tuple[Any, ...]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql, params).fetchone()
        assert row is not None
        return tuple(row)


async def test_a_renewal_and_its_planes_writes_never_wait_on_each_other(postgres_url):
    a = await join(postgres_url, "A", ["a", "b"], shared=True)
    try:
        assert (await a.fleet.tick(first=True)).mine == {"a", "b"}
        expiry = "SELECT expires_ms FROM leases WHERE agent = 'a'"
        (before,) = one_row(postgres_url, expiry)
        writes = connect(postgres_url)  # the plane's writer, its bounds and all
        try:
            writes.execute("BEGIN")
            writes.execute(SHARE, ("b",))  # a write for b, its transaction open
            pid = writes.info.backend_pid
            ticking = asyncio.ensure_future(a.fleet.tick())
            # The renewal either waits on b's row, holding a's, or has renewed a.
            while one_row(postgres_url, WAITING_ON, pid) == (0,):
                if one_row(postgres_url, expiry) != (before,):
                    break
                assert not ticking.done(), "b renewed under its write's lock"
                await asyncio.sleep(0.01)
            # The same transaction's write for a, while the sessions are watched.
            second = asyncio.ensure_future(asyncio.to_thread(writes.execute, SHARE, ("a",)))
            crossed = False
            while not second.done():
                crossed = crossed or one_row(postgres_url, CROSSED) != (0,)
                await asyncio.sleep(0.01)
            assert not crossed, "the renewal and the plane's own writes waited on each other"
            second.result()
            writes.execute("COMMIT")
        finally:
            writes.close()
        tick = await ticking
        assert tick.mine == {"a", "b"}
        renewed = "SELECT count(*) FROM leases WHERE plane = 'A' AND expires_ms > %s"
        assert one_row(postgres_url, renewed, before) == (2,), "both leases renewed"
    finally:
        await a.db.close()
