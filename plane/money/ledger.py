"""The spend ledger: every LLM call, written before anything is said about it.

A call is written **pending**, with an estimated cost, before it is sent; it
is **settled** with the provider's usage and the real cost when the response
arrives. A plane that dies in between finds the call pending at start-up and
marks it **interrupted**, keeping the estimate: a killed plane never
under-counts, and never counts twice. A call that failed with no response is
**failed** and costs nothing (no provider bills a refused request).

A call is charged to the UTC day in which its cost became known: a pending
call counts on the day it was sent, and settling moves it to the day of the
response. The day's sums per agent live in memory for the gate; the table is
the record, and the sums are rebuilt from it for any day the plane has not
seen since it started (a restart).

**The plane's day never goes back.** It is the later of the clock's day and
the latest day the ledger has reached (`plane_day`, written the first time
a day is seen and before anything is charged to it, so it holds across a
restart). A clock that steps back — NTP correcting a clock that ran ahead,
a virtual machine restored from a snapshot, a date set by hand — reopens no
earlier day's budget and grants the day already spent no second one: spend
keeps counting against the later day until the clock passes it, and the
plane says so (in its log, and in the notice of an agent it holds). The
price of that rule is the other direction: a clock that once ran days
ahead keeps the plane on that day until real time reaches it. Budget is
withheld then, never granted twice.

**Failures raise `LedgerError`.** Money that cannot be recorded (or read)
stops whatever was about to spend it; nothing here is ever swallowed.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

import aiosqlite
from aiosqlite import Connection, Row

from plane.clock import Clock, day_of
from plane.db import Database
from plane.errors import LedgerError
from plane.wire.protocol import LedgerEntry, Usage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Charge:
    """What settling a call tells the plane."""

    agent: str
    cost_usd: Decimal
    day: date


@dataclass(frozen=True)
class Interrupted:
    """One agent's calls a plane that died left in flight."""

    calls: int
    estimate_usd: Decimal
    """What they count: their estimates, summed."""


Tell = Callable[[Connection, dict[str, Interrupted]], Awaitable[None]]
"""Says what recovery found, inside recovery's own transaction."""


@dataclass(frozen=True)
class _Recorded:
    """A call as its row holds it, parsed: what closing it needs to know."""

    agent: str
    day: date
    cost_usd: Decimal
    status: str
    price_source: str


class Ledger:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._days: dict[date, dict[str, Decimal]] = {}
        self._latest: date | None = None
        """The latest day reached (None until read from the database)."""
        self._told_back: date | None = None

    async def recover(self, tell: Tell | None = None) -> dict[str, Interrupted]:
        """Mark calls left pending by a plane that died as interrupted, at
        their estimates. Returns, per agent, how many there were and what
        they count. `tell` runs inside the same transaction, so what is said
        about them (the agent's conversation) commits with them or not at all:
        a plane killed again during start-up finds them still pending."""
        cut: dict[str, Interrupted] = {}
        async with self._writing() as tx:
            async with tx.execute(
                "SELECT agent, cost_usd FROM calls WHERE status = 'pending' ORDER BY id"
            ) as cursor:
                rows = list(await cursor.fetchall())
            for row in rows:
                before = cut.get(row["agent"], Interrupted(0, Decimal(0)))
                cut[row["agent"]] = Interrupted(
                    before.calls + 1, before.estimate_usd + Decimal(row["cost_usd"])
                )
            await tx.execute(
                "UPDATE calls SET status = 'interrupted', estimated = 1 WHERE status = 'pending'"
            )
            if tell is not None and cut:
                await tell(tx, cut)
        return cut

    async def today(self) -> date:
        """The plane's day: the later of the clock's and the latest reached.
        A new day is recorded before this returns, so nothing is charged to a
        day a restart could forget."""
        clock_day = day_of(self._clock.now())
        latest = await self._latest_day()
        if clock_day > latest:
            async with self._writing() as tx:
                await tx.execute(
                    "INSERT INTO plane_day (id, day) VALUES (1, ?) ON CONFLICT (id)"
                    " DO UPDATE SET day = excluded.day WHERE excluded.day > plane_day.day",
                    (clock_day.isoformat(),),
                )
            return self._reached(clock_day)
        if clock_day < latest and self._told_back != clock_day:
            self._told_back = clock_day
            log.warning("%s", self.clock_behind())
        return latest

    def day(self) -> date:
        """The plane's day as last known, without a database round trip."""
        clock_day = day_of(self._clock.now())
        return clock_day if self._latest is None else max(clock_day, self._latest)

    def clock_behind(self) -> str | None:
        """What to say while the clock reads a day before the plane's."""
        clock_day = day_of(self._clock.now())
        if self._latest is None or clock_day >= self._latest:
            return None
        return (
            f"The clock moved back to {clock_day}, before {self._latest}, a day already "
            f"counted: spend counts against {self._latest} until the clock passes it."
        )

    async def spend_today(self, agent: str) -> Decimal:
        return (await self._day(await self.today())).get(agent, Decimal(0))

    async def spend_by_agent(self, day: date | None = None) -> dict[str, Decimal]:
        return dict(await self._day(day or await self.today()))

    async def open_call(
        self, agent: str, provider: str, model: str, estimate: Decimal, source: str
    ) -> int:
        now, day = self._clock.now(), await self.today()
        today = await self._day(day)
        async with self._writing() as tx:
            cursor = await tx.execute(
                "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
                " status, estimated) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1)",
                (
                    agent,
                    day.isoformat(),
                    now.isoformat(),
                    provider,
                    model,
                    str(estimate),
                    source,
                ),
            )
        today[agent] = today.get(agent, Decimal(0)) + estimate
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def settle(
        self, call: int, usage: Usage, cost: Decimal, source: str, *, estimated: bool = False
    ) -> Charge:
        now = self._clock.now()
        return await self._close(call, now, "settled", usage, cost, source, estimated)

    async def fail(self, call: int) -> Charge:
        """The call got no response: nothing was bought."""
        recorded = await self._recorded(call)
        return await self._close(
            call, self._clock.now(), "failed", Usage(), Decimal(0), recorded.price_source, False
        )

    async def entries(self, day: date) -> list[LedgerEntry]:
        rows = await self._read("SELECT * FROM calls WHERE day = ? ORDER BY id", day.isoformat())
        return [_entry(row) for row in rows]

    async def _close(
        self,
        call: int,
        now: datetime,
        status: str,
        usage: Usage,
        cost: Decimal,
        source: str,
        estimated: bool,
    ) -> Charge:
        recorded = await self._recorded(call)
        if recorded.status != "pending":
            raise ValueError(f"call {call} is already {recorded.status}")
        sent_day, agent = recorded.day, recorded.agent
        known_day, estimate = await self.today(), recorded.cost_usd
        sent, known = await self._day(sent_day), await self._day(known_day)
        async with self._writing() as tx:
            await tx.execute(
                "UPDATE calls SET day = ?, at = ?, input_tokens = ?, cache_read_tokens = ?,"
                " cache_write_tokens = ?, output_tokens = ?, cost_usd = ?, price_source = ?,"
                " status = ?, estimated = ? WHERE id = ?",
                (
                    known_day.isoformat(),
                    now.isoformat(),
                    usage.input_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    usage.output_tokens,
                    str(cost),
                    source,
                    status,
                    int(estimated),
                    call,
                ),
            )
        sent[agent] = sent.get(agent, Decimal(0)) - estimate
        known[agent] = known.get(agent, Decimal(0)) + cost
        return Charge(agent, cost, known_day)

    async def _recorded(self, call: int) -> _Recorded:
        rows = await self._read(
            "SELECT agent, day, cost_usd, status, price_source FROM calls WHERE id = ?", call
        )
        row = rows[0] if rows else None
        if row is None:
            raise KeyError(f"no call {call} in the ledger")
        return _Recorded(
            agent=row["agent"],
            day=date.fromisoformat(row["day"]),
            cost_usd=Decimal(row["cost_usd"]),
            status=row["status"],
            price_source=row["price_source"],
        )

    async def _day(self, day: date) -> dict[str, Decimal]:
        if day not in self._days:
            rows = await self._read(
                "SELECT agent, cost_usd FROM calls WHERE day = ?", day.isoformat()
            )
            sums: dict[str, Decimal] = defaultdict(Decimal)
            for row in rows:
                sums[row["agent"]] += Decimal(row["cost_usd"])
            # A second reader may have filled it while this one awaited.
            self._days.setdefault(day, dict(sums))
        return self._days[day]

    async def _latest_day(self) -> date:
        if self._latest is None:
            rows = await self._read(
                "SELECT MAX(day) FROM (SELECT MAX(day) AS day FROM calls"
                " UNION ALL SELECT day FROM plane_day)"
            )
            found = rows[0][0] if rows else None
            return self._reached(date.min if found is None else date.fromisoformat(found))
        return self._latest

    def _reached(self, day: date) -> date:
        """Move the latest day reached up to `day` (never down: another
        coroutine may have moved it meanwhile)."""
        self._latest = day if self._latest is None else max(day, self._latest)
        return self._latest

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[aiosqlite.Connection]:
        """A ledger transaction; a database that refuses it is a LedgerError."""
        try:
            async with self._db.transaction() as tx:
                yield tx
        except sqlite3.Error as error:
            raise LedgerError(f"Spend could not be recorded in the ledger ({error}).") from error

    async def _read(self, sql: str, *params: object) -> list[Row]:
        try:
            return await self._db.fetchall(sql, *params)
        except sqlite3.Error as error:
            raise LedgerError(f"The ledger could not be read ({error}).") from error


def _entry(row: Row) -> LedgerEntry:
    return LedgerEntry(
        id=row["id"],
        agent=row["agent"],
        day=date.fromisoformat(row["day"]),
        at=datetime.fromisoformat(row["at"]),
        provider=row["provider"],
        model=row["model"],
        usage=Usage(
            input_tokens=row["input_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            output_tokens=row["output_tokens"],
        ),
        cost_usd=Decimal(row["cost_usd"]),
        price_source=row["price_source"],
        status=row["status"],
        estimated=bool(row["estimated"]),
    )
