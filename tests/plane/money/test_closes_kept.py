"""A call's close the shared store refused for longer than the ledger waits
(`SETTLE_PATIENCE_S`) is kept, and written at its cost once the store is
back: the call does not stay pending at its estimate for as long as the
plane lives. On a real PostgreSQL, through a proxy that cuts the link."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlsplit

import pytest

from plane.clock import ManualClock
from plane.errors import LedgerError
from plane.money import stranded as stranded_module
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase
from plane.wire.protocol import Usage
from tests.support.fleet_members import join
from tests.support.tcp_proxy import TcpProxy, through

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=100, output_tokens=10)
BACK_S = 10.0
"""Within this of the link's return, the store's connections are open again."""


@pytest.fixture
async def cut_off(postgres_url: str) -> AsyncIterator[tuple[TcpProxy, PostgresDatabase, Ledger]]:
    """A ledger whose store is reached through a proxy the test can cut."""
    server_port = urlsplit(postgres_url).port
    assert server_port is not None
    with TcpProxy(server_port) as proxy:
        db = await PostgresDatabase.connect(through(postgres_url, proxy.port))
        try:
            yield proxy, db, Ledger(db, ManualClock(NOON))
        finally:
            proxy.resume()
            await db.close()


async def settle_while_away(ledger: Ledger, proxy: TcpProxy, monkeypatch) -> int:
    """A call opened, then its settle (at $0.25, the estimate $0.10) refused
    for longer than the ledger waits."""
    monkeypatch.setattr(stranded_module, "SETTLE_PATIENCE_S", 0.6)
    call = await ledger.open_call("demo", "p", "m", Decimal("0.10"), "estimate")
    proxy.cut()
    with pytest.raises(LedgerError, match="could not be recorded"):
        await ledger.settle(call, USAGE, Decimal("0.25"), "table")
    assert ledger.spend_known("demo") == Decimal("0.10"), "meanwhile its estimate counts"
    return call


async def back(ledger: Ledger, proxy: TcpProxy) -> int:
    """The link restored; what `Stranded.write` wrote once the store answers."""
    proxy.resume()
    deadline = time.monotonic() + BACK_S
    while (written := await ledger.stranded.write()) == 0:
        assert time.monotonic() < deadline, "the kept close was never written"
        await asyncio.sleep(0.2)
    return written


async def test_a_close_refused_past_the_ledgers_patience_is_written_when_the_store_is_back(
    cut_off, monkeypatch
) -> None:
    proxy, db, ledger = cut_off
    call = await settle_while_away(ledger, proxy, monkeypatch)
    assert await ledger.stranded.write() == 0, "kept while the store is away"

    assert await back(ledger, proxy) == 1
    [(status, cost, tokens)] = await db.fetchall(
        "SELECT status, cost_usd, input_tokens FROM calls WHERE id = ?", call
    )
    assert (status, Decimal(cost), tokens) == ("settled", Decimal("0.25"), 100)
    assert ledger.spend_known("demo") == Decimal("0.25")
    assert ledger.in_flight("demo") == 0
    assert await ledger.recover() == {}, "nothing left pending for a sweep to count again"
    [(spent,)] = await db.fetchall("SELECT cost_usd FROM spend WHERE agent = 'demo'")
    assert Decimal(spent) == Decimal("0.25")
    assert await ledger.stranded.write() == 0, "written once"


async def test_a_kept_close_whose_call_another_plane_swept_meanwhile_is_left_as_swept(
    cut_off, monkeypatch, postgres_url: str
) -> None:
    proxy, db, ledger = cut_off
    call = await settle_while_away(ledger, proxy, monkeypatch)
    other = await PostgresDatabase.connect(postgres_url)  # not through the proxy
    try:
        assert await Ledger(other, ManualClock(NOON)).recover() != {}  # it took the agent
    finally:
        await other.close()

    proxy.resume()
    deadline = time.monotonic() + BACK_S
    while True:  # until the store answers this plane again
        try:
            await db.fetchall("SELECT 1")
            break
        except Exception:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
    held = ledger.after_close(ledger.closes)  # a call crowded out by calls in flight waits so
    assert await ledger.stranded.write() == 0
    [(status, cost)] = await db.fetchall("SELECT status, cost_usd FROM calls WHERE id = ?", call)
    assert (status, Decimal(cost)) == ("interrupted", Decimal("0.10")), "counted once, as swept"
    assert ledger.in_flight("demo") == 0
    assert held.done(), "no longer in flight: what it crowded out is admitted again"
    assert await ledger.stranded.write() == 0, "not tried again"


async def test_a_gateway_calls_kept_close_is_written_at_the_planes_next_tick(
    postgres_url: str, monkeypatch
) -> None:
    """A gateway agent's call is under no lease: no other plane sweeps it
    while its plane lives, so without the kept close it stayed pending, at
    its estimate, until the plane restarted."""
    server_port = urlsplit(postgres_url).port
    assert server_port is not None
    with TcpProxy(server_port) as proxy:
        plane = await join(through(postgres_url, proxy.port), "p1", [])
        try:
            await plane.fleet.tick(first=True)
            call = await settle_while_away(plane.ledger, proxy, monkeypatch)
            proxy.resume()
            deadline = time.monotonic() + BACK_S
            while True:  # the tick fails until the store answers again
                try:
                    await plane.fleet.tick()
                    break
                except Exception:
                    assert time.monotonic() < deadline, "the store never answered again"
                    await asyncio.sleep(0.2)
            [(status, cost)] = await plane.db.fetchall(
                "SELECT status, cost_usd FROM calls WHERE id = ?", call
            )
            assert (status, Decimal(cost)) == ("settled", Decimal("0.25"))
        finally:
            proxy.resume()
            await plane.db.close()


async def test_a_close_put_again_after_its_commit_landed_is_done_and_counted_once(
    cut_off, postgres_url: str
) -> None:
    """The link lost a COMMIT's answer, not the COMMIT: the close, put again
    once the store is back, finds the row as it would leave it. It is done,
    its cost counted once; it was a bare `ValueError` ("already settled"),
    with the money recorded and the turn or the client's call failed anyway."""
    proxy, db, ledger = cut_off
    call = await ledger.open_call("demo", "p", "m", Decimal("0.10"), "estimate")
    proxy.cut()
    settling = asyncio.ensure_future(ledger.settle(call, USAGE, Decimal("0.25"), "table"))
    await asyncio.sleep(0.2)  # its first try failed with the link
    other = await PostgresDatabase.connect(postgres_url)  # what that try's COMMIT left
    try:
        await other.write(
            lambda conn: conn.execute(
                "UPDATE calls SET status = 'settled', cost_usd = '0.25', price_source = 'table'"
                " WHERE id = ?",
                (call,),
            )
        )
        await other.write(
            lambda conn: conn.execute(
                "INSERT INTO spend (day, agent, cost_usd) VALUES ('2026-11-29', 'demo', '0.25')"
            )
        )
    finally:
        await other.close()
    proxy.resume()

    charge = await asyncio.wait_for(settling, BACK_S)
    assert charge.cost_usd == Decimal("0.25")
    assert ledger.in_flight("demo") == 0
    assert ledger.spend_known("demo") == Decimal("0.25")
    [(spent,)] = await db.fetchall("SELECT cost_usd FROM spend WHERE agent = 'demo'")
    assert Decimal(spent) == Decimal("0.25"), "counted once"


async def test_a_close_after_the_sums_were_forgotten_is_kept_while_the_store_is_away(
    cut_off, monkeypatch
) -> None:
    """With several planes the fleet's tick forgets the day's sums every few
    seconds (`Ledger.forget_sums`). A close then read them first, and with
    the store away that read failed: the call stayed pending at its estimate,
    neither written nor kept, for as long as its plane held the agent."""
    proxy, db, ledger = cut_off
    monkeypatch.setattr(stranded_module, "SETTLE_PATIENCE_S", 0.6)
    call = await ledger.open_call("demo", "p", "m", Decimal("0.10"), "estimate")
    ledger.forget_sums()
    proxy.cut()
    with pytest.raises(LedgerError, match="could not be recorded"):
        await ledger.settle(call, USAGE, Decimal("0.25"), "table")

    assert await back(ledger, proxy) == 1
    [(status, cost)] = await db.fetchall("SELECT status, cost_usd FROM calls WHERE id = ?", call)
    assert (status, Decimal(cost)) == ("settled", Decimal("0.25"))
    assert await ledger.spend_today("demo") == Decimal("0.25")
    assert ledger.in_flight("demo") == 0
