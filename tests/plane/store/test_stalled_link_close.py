"""A link to PostgreSQL that stops forwarding without closing (a stalled
proxy, a half-open partition) holds up nothing that is being stopped: a
read cancelled on it ends at once (psycopg would cancel it on the server,
through another connection the dead link never answers, and wait 5 s and
5 s more), and closing the store gives the writes in flight a bound, then
cuts the link (not the watchdog's 12 s and a reconnect's timeout more)."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import psycopg
import pytest

from plane.errors import StoreFault
from plane.store.postgres import PostgresDatabase
from tests.support.tcp_proxy import TcpProxy, through

QUICK_S = 3.0
"""Well under psycopg's cancel (5 s, then 5 s more) and the watchdog (12 s)."""


async def on_the_link(proxy: TcpProxy) -> None:
    """Until what was sent last is held by the stalled proxy."""
    while proxy.stalled_bytes == 0:  # noqa: ASYNC110 - the proxy's thread counts them
        await asyncio.sleep(0.01)


async def test_a_read_cancelled_on_a_stalled_link_ends_at_once_and_the_link_comes_back(
    postgres_url,
):
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        db = await PostgresDatabase.connect(through(postgres_url, proxy.port), migrate=False)
        try:
            proxy.stall()
            reading = asyncio.ensure_future(db.fetchall("SELECT 1"))
            await on_the_link(proxy)
            started = time.monotonic()
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading
            assert time.monotonic() - started < QUICK_S
            proxy.resume()
            assert (await db.fetchall("SELECT 7"))[0][0] == 7
        finally:
            proxy.resume()
            await db.close()


async def test_closing_on_a_stalled_link_cuts_the_write_in_flight_after_its_grace_and_keeps_nothing(
    postgres_url,
):
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        db = await PostgresDatabase.connect(through(postgres_url, proxy.port), migrate=False)
        proxy.stall()
        writing = db.submit(
            lambda conn: conn.execute(
                "INSERT INTO messages (agent, at, kind, text) VALUES ('a', 'now', 'plane', ?)",
                ("written on a stalled link",),
            )
        )
        await on_the_link(proxy)
        started = time.monotonic()
        await db.close(grace_s=0.5)
        assert time.monotonic() - started < 0.5 + QUICK_S
        with pytest.raises(StoreFault) as failed:
            await writing
        assert failed.value.unreachable
    with psycopg.connect(postgres_url) as conn:
        kept = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE text = 'written on a stalled link'"
        ).fetchone()
    assert kept == (0,)
