"""Closing the PostgreSQL store with a read in flight, then opening it again
at once in the same process (a plane restarted on the same event loop):
the new connections work, the read in flight ends, and close is bounded."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from plane.store.postgres import PostgresDatabase
from plane.store.postgres_links import CLOSE_WAIT_S


async def reopened_reads(url: str) -> list[int]:
    again = await PostgresDatabase.connect(url, migrate=False)
    try:
        return [(await again.fetchall("SELECT ?", n))[0][0] for n in range(5)]
    finally:
        await again.close()


async def test_a_read_in_flight_at_close_lets_the_store_open_again_at_once(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    reading = asyncio.ensure_future(db.fetchall("SELECT pg_sleep(0.3), 7"))
    await asyncio.sleep(0.05)  # the read is on the link
    await db.close()
    assert await reopened_reads(postgres_url) == [0, 1, 2, 3, 4]
    assert reading.done(), "close waited for the read in flight"
    assert (await reading)[0][1] == 7


async def test_a_read_longer_than_the_close_allows_is_cut_and_fails(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    reading = asyncio.ensure_future(db.fetchall("SELECT pg_sleep(30)"))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    await db.close()
    assert time.monotonic() - started < CLOSE_WAIT_S + 2
    with pytest.raises(sqlite3.Error):
        await reading
    assert await reopened_reads(postgres_url) == [0, 1, 2, 3, 4]
    with pytest.raises(sqlite3.Error, match="closed"):
        await db.fetchall("SELECT 1")
