"""The shared store goes away and comes back, on a real PostgreSQL: a
restart (`pg_ctl restart -m fast`), a crash (SIGKILL), a link that stops
forwarding (a proxy between one plane and the server). Every connection is
opened again by itself; while it cannot be, the store says since when it is
away; a lock held by a plane cut off is let go within a bounded time."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlsplit

import pytest

from plane.clock import ManualClock
from plane.errors import StoreFault
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase
from tests.support.tcp_proxy import TcpProxy, through

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BOUND_S = 3.0
"""plane.store.postgres_links.BOUND_S with the default lease (15 s)."""
BACK_S = 10.0
"""Within this of the server's return, a connection is open again (the
backoff's most is 2 s)."""
GIVE_UP_S = 20.0
"""Within this an operation with no answer is given up (the watchdog: 8 s)."""


def unreachable(error: BaseException) -> bool:
    return bool(getattr(error, "unreachable", False))


def insert(conn, text: str = "x"):
    return conn.execute(
        "INSERT INTO messages (agent, at, kind, text) VALUES ('a', 'now', 'plane', ?)", (text,)
    ).rowcount


@pytest.mark.slow  # a server of its own (initdb), restarted and killed: ~7 s of a worker
async def test_every_connection_comes_back_after_a_restart_and_a_crash(postgres_cluster):
    db = await PostgresDatabase.connect(postgres_cluster.url)
    try:
        assert await db.write(insert) == 1
        await asyncio.to_thread(postgres_cluster.restart)
        # The writer and the reader find their links broken, and open new ones at once.
        assert await db.write(insert) == 1
        assert (await db.fetchall("SELECT COUNT(*) FROM messages"))[0][0] == 2
        assert db.unreachable_since is None

        await asyncio.to_thread(postgres_cluster.kill)
        with pytest.raises(StoreFault, match="the store is unreachable since") as raised:
            await db.write(insert)
        assert unreachable(raised.value)
        with pytest.raises(StoreFault, match="the store is unreachable since"):
            await db.fetchall("SELECT 1")
        since = db.unreachable_since
        assert since is not None
        started = time.monotonic()
        with pytest.raises(StoreFault):  # refused at once while it is away: no queue forms
            await db.write(insert)
        assert time.monotonic() - started < 1

        await asyncio.to_thread(postgres_cluster.up)
        deadline = time.monotonic() + BACK_S
        while True:
            try:
                assert await db.write(insert) == 1
                break
            except StoreFault:
                assert time.monotonic() < deadline, "the writer never came back"
                await asyncio.sleep(0.1)
        assert (await db.fetchall("SELECT COUNT(*) FROM messages"))[0][0] == 3
        assert db.unreachable_since is None
    finally:
        await db.close()


@pytest.mark.slow  # the server's bound and the watchdog are waited out: ~18 s
async def test_a_plane_cut_off_holding_the_fleet_row_stalls_the_others_for_a_bounded_time(
    postgres_url,
):
    """One plane's link stops forwarding while its transaction holds the
    fleet's row (every admission waits on it). The server ends that session
    after `BOUND_S` idle in its transaction; the other plane's admissions go
    on within a few seconds, not hours; the cut-off plane finds its store
    unreachable (its watchdog), and comes back once the link does."""
    server_port = int(urlsplit(postgres_url).port or 5432)
    with TcpProxy(server_port) as proxy:
        cut_off = await PostgresDatabase.connect(through(postgres_url, proxy.port))
        other = await PostgresDatabase.connect(postgres_url)
        try:
            ledger = Ledger(other, ManualClock(NOON))

            def hold_the_row_then_lose_the_link(conn):
                conn.execute("UPDATE fleet SET admitted = admitted + 1 WHERE id = 1")
                proxy.stall()
                conn.execute("SELECT 1")  # never answered

            holding = asyncio.ensure_future(cut_off.write(hold_the_row_then_lose_the_link))
            while proxy.stalled_bytes == 0:  # noqa: ASYNC110 - the proxy's thread counts them
                await asyncio.sleep(0.01)
            started = time.monotonic()
            for _ in range(10):
                await asyncio.wait_for(
                    ledger.open_call("b", "p", "m", Decimal("0.01"), "estimate",
                                     fleet_ceiling=Decimal(100)),
                    timeout=30,
                )  # fmt: skip
            waited = time.monotonic() - started
            print(f"the other plane waited {waited:.1f} s (bound {BOUND_S:.0f} s)")
            assert waited < 3 * BOUND_S + 2

            with pytest.raises(StoreFault) as raised:
                await asyncio.wait_for(holding, timeout=GIVE_UP_S)
            assert unreachable(raised.value)
            assert cut_off.unreachable_since is not None

            proxy.resume()
            deadline = time.monotonic() + BACK_S
            while True:
                try:
                    await cut_off.write(insert)
                    break
                except StoreFault:
                    assert time.monotonic() < deadline, "the cut-off plane never came back"
                    await asyncio.sleep(0.1)
            assert cut_off.unreachable_since is None
        finally:
            proxy.resume()
            await asyncio.wait_for(cut_off.close(), 30)
            await other.close()
