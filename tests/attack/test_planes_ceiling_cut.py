"""Two planes' ledgers race one fleet ceiling on a real PostgreSQL, one of
them through a proxy that cuts its link while its transaction holds the
fleet's row (every admission waits on it). The cut transaction is rolled
back by the server and tried once more on a new link, which the cut link
refuses; the other plane's admissions go on; once the link is back, the cut
plane admits again. At the end the fleet holds exactly its ceiling: every
call written is one its plane was told was admitted, and no call admitted
is missing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlsplit

import pytest

from plane.clock import ManualClock
from plane.errors import unreachable
from plane.money.ledger import FleetFull, Ledger
from plane.store.postgres import PostgresDatabase
from tests.support.tcp_proxy import TcpProxy, through

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CALL = Decimal("0.10")
CEILING = Decimal(1)


async def admit(ledger: Ledger, n: int) -> int | None:
    """The call's id if admitted; None if the fleet is full. The store being
    away is raised (the caller counts it)."""
    try:
        return await ledger.open_call(
            f"agent-{n}", "p", "m", CALL, "estimate", fleet_ceiling=CEILING
        )
    except FleetFull:
        return None


async def test_a_link_cut_holding_the_fleet_row_admits_nothing_twice_and_nothing_over(
    postgres_url,
):
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        cut_off = await PostgresDatabase.connect(through(postgres_url, proxy.port))
        other = await PostgresDatabase.connect(postgres_url)
        try:
            x = Ledger(cut_off, ManualClock(NOON), plane="x")
            y = Ledger(other, ManualClock(NOON), plane="y")
            first = [await admit(x, 0), await admit(y, 1)]

            def hold_the_row_then_lose_the_link(conn):
                conn.execute("SELECT admitted FROM fleet WHERE id = 1 FOR UPDATE")
                proxy.cut()
                conn.execute("SELECT 1")

            cutting = asyncio.ensure_future(cut_off.write(hold_the_row_then_lose_the_link))
            during = await asyncio.gather(
                *(admit(x, n) for n in range(2, 8)),
                *(admit(y, n) for n in range(8, 12)),
                return_exceptions=True,
            )
            with pytest.raises(Exception) as held:
                await cutting
            assert unreachable(held.value), held.value
            for result in during:  # admitted, refused as full, or refused as away
                assert not isinstance(result, BaseException) or unreachable(result), result
            proxy.resume()
            after = await asyncio.gather(
                *(admit(x, n) for n in range(12, 30)), *(admit(y, n) for n in range(30, 50)),
                return_exceptions=True,
            )  # fmt: skip
            assert not [r for r in after if isinstance(r, BaseException) and not unreachable(r)]
            told = {r for r in [*first, *during, *after] if isinstance(r, int)}
            rows = await other.fetchall("SELECT id, cost_usd FROM calls")
            assert sum(Decimal(cost) for _, cost in rows) == CEILING
            assert len(rows) == len(told)
        finally:
            proxy.resume()
            await cut_off.close()
            await other.close()
