"""Planes starting together migrate one after the other (an advisory
lock), and a migration may take long on a large ledger: a plane waiting
for another's migration, on a real PostgreSQL, waits for it and starts,
however long past the bound after which the plane gives up on a query
with no answer (the watchdog, shortened here to a second)."""

from __future__ import annotations

import asyncio
import threading

import psycopg
import pytest

from plane.store import postgres
from plane.store.postgres import MIGRATION_LOCK, PostgresDatabase

pytestmark = pytest.mark.slow  # the other plane's migration takes 3 s

MIGRATING_S = 3.0


async def test_a_plane_waits_out_another_planes_long_migration(bare_postgres_url, monkeypatch):
    monkeypatch.setattr(postgres, "WATCH_S", 1.0)
    holding, done = threading.Event(), threading.Event()

    def migrate_for_long() -> None:
        with psycopg.connect(bare_postgres_url) as conn:  # a transaction: the lock held to its end
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            holding.set()
            conn.execute("SELECT pg_sleep(%s)", (MIGRATING_S,))
        done.set()

    other = threading.Thread(target=migrate_for_long)
    other.start()
    try:
        await asyncio.to_thread(holding.wait, 10)
        db = await PostgresDatabase.connect(bare_postgres_url)
        try:
            assert done.is_set(), "it did not wait for the other plane's migration"
            assert db.unreachable_since is None
            assert (await db.fetchall("SELECT COUNT(*) FROM calls"))[0][0] == 0
        finally:
            await db.close()
    finally:
        await asyncio.to_thread(other.join, 30)
