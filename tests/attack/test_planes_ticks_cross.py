"""Two planes back from a pause at once, each with a lease of its own run
out and the other's to take (both under their fair share): their ticks
never wait on each other, so they never deadlock (PostgreSQL would break
one after a second, a tick run again). Each lease run out is taken once,
its epoch moved by one, by one plane."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from plane.store.postgres import NOW_MS
from tests.support.fleet_members import join

pytestmark = pytest.mark.timeout(60)

AGENTS = ["a1", "a2", "b1", "b2", "c"]
"""X holds a1 (run out) and a2, Y b1 (run out) and b2; c is no one's."""

WAITING_ON = "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
"""How many sessions wait on a lock the session `%s` holds."""

CROSSED = (
    "SELECT count(*) FROM pg_stat_activity p, pg_stat_activity q"
    " WHERE p.pid = ANY(pg_blocking_pids(q.pid)) AND q.pid = ANY(pg_blocking_pids(p.pid))"
)
"""Sessions waiting on each other: a deadlock, before the server breaks it."""


def one_row(conn: psycopg.Connection[Any], sql: str, *params: object) -> tuple[Any, ...]:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.slow  # 2.4 s alone, 0.7 of it CPU: the two ticks wait on the server's locks
async def test_two_planes_taking_each_others_run_out_leases_never_deadlock(postgres_url):
    x = await join(postgres_url, "X", AGENTS, shared=True)
    y = await join(postgres_url, "Y", AGENTS, shared=True)
    crossed = False
    try:
        with psycopg.connect(postgres_url, autocommit=True) as look:
            look.execute(
                f"INSERT INTO planes (name, seen_ms) VALUES ('X', {NOW_MS}), ('Y', {NOW_MS})"
            )
            look.execute(
                "INSERT INTO leases (agent, plane, expires_ms, epoch) VALUES"
                f" ('a1', 'X', 1, 1), ('a2', 'X', {NOW_MS} + 60000, 1),"
                f" ('b1', 'Y', 1, 1), ('b2', 'Y', {NOW_MS} + 60000, 1)"
            )
            # Each plane's own fenced writes hold its renewal back: the two ticks meet.
            with psycopg.connect(postgres_url) as writes:
                writes.execute("SELECT agent FROM leases WHERE agent IN ('a2', 'b2') FOR SHARE")
                pid = writes.info.backend_pid
                ticks = [asyncio.ensure_future(m.fleet.tick()) for m in (x, y)]
                while one_row(look, WAITING_ON, pid) != (2,):
                    assert not any(t.done() for t in ticks), "a tick renewed under a fenced write"
                    await asyncio.sleep(0.01)
            while not all(t.done() for t in ticks):
                crossed = crossed or one_row(look, CROSSED) != (0,)
                await asyncio.sleep(0.01)
            on_x, on_y = [await t for t in ticks]
            epochs: dict[str, int] = dict(
                look.execute("SELECT agent, epoch FROM leases").fetchall()
            )
    finally:
        await x.db.close()
        await y.db.close()
    assert not crossed, "the two planes' ticks waited on each other"
    assert not on_x.mine & on_y.mine
    assert {"a2", "b2"} <= on_x.mine | on_y.mine
    assert epochs["a1"] == epochs["b1"] == 2 and epochs["a2"] == epochs["b2"] == 1
