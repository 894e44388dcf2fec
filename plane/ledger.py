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
seen since it started (a restart, a clock that jumped).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from aiosqlite import Connection, Row

from plane.clock import Clock, day_of
from plane.protocol import LedgerEntry, Usage
from plane.store import Database


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

    async def recover(self, tell: Tell | None = None) -> dict[str, Interrupted]:
        """Mark calls left pending by a plane that died as interrupted, at
        their estimates. Returns, per agent, how many there were and what
        they count. `tell` runs inside the same transaction, so what is said
        about them (the agent's conversation) commits with them or not at all:
        a plane killed again during start-up finds them still pending."""
        cut: dict[str, Interrupted] = {}
        async with self._db.transaction() as tx:
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

    async def spend_today(self, agent: str) -> Decimal:
        return (await self._day(day_of(self._clock.now()))).get(agent, Decimal(0))

    async def spend_by_agent(self, day: date | None = None) -> dict[str, Decimal]:
        return dict(await self._day(day or day_of(self._clock.now())))

    async def open_call(
        self, agent: str, provider: str, model: str, estimate: Decimal, source: str
    ) -> int:
        now = self._clock.now()
        today = await self._day(day_of(now))
        async with self._db.transaction() as tx:
            cursor = await tx.execute(
                "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source,"
                " status, estimated) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 1)",
                (
                    agent,
                    day_of(now).isoformat(),
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
        rows = await self._db.fetchall(
            "SELECT * FROM calls WHERE day = ? ORDER BY id", day.isoformat()
        )
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
        known_day, estimate = day_of(now), recorded.cost_usd
        sent, known = await self._day(sent_day), await self._day(known_day)
        async with self._db.transaction() as tx:
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
        row = await self._db.fetchone(
            "SELECT agent, day, cost_usd, status, price_source FROM calls WHERE id = ?", call
        )
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
            rows = await self._db.fetchall(
                "SELECT agent, cost_usd FROM calls WHERE day = ?", day.isoformat()
            )
            sums: dict[str, Decimal] = defaultdict(Decimal)
            for row in rows:
                sums[row["agent"]] += Decimal(row["cost_usd"])
            # A second reader may have filled it while this one awaited.
            self._days.setdefault(day, dict(sums))
        return self._days[day]


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
