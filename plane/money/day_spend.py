"""Each agent's spend of a day, in memory: what the gate weighs before every
call, without the store. A day's sums are read once, when the day is first
asked for (the closed calls' from `spend`, one row an agent, and the
estimates of the calls still in flight), on the writer between two
commits, so no commit falls between the read and the sums; after that
each commit moves them (`count`). What the read's own transaction moved
before it (a close in its batch) is written to `spend` first (`WriteNow`):
that close's commit does not move a day not loaded yet.

An agent whose rows of the day do not add up (a row edited while the plane
runs) is left out of the sums and held alone (`unread`, with the sentence
naming the row, as the start says it): its spend is refused until the row
reads again (`reread`), and every other agent's is read and goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from sqlite3 import Connection
from typing import Any

from plane.batched import Shared
from plane.errors import LedgerError, StoreError
from plane.money.stored import sums_apart, sums_of, unreadable_within

Write = Callable[..., Awaitable[Any]]
"""One ledger transaction on the writer (`Ledger._write`): a function of the
connection, what runs once it commits (`then`), and `reading`."""

WriteNow = Callable[[Connection], None]
"""What the writer's transaction moved of the agents' sums so far, written
to `spend` inside it (`DaySums.write_now`)."""

Read = tuple[dict[str, Decimal], dict[str, str]]
"""A day's sums that read, and the agents whose rows do not, each with its sentence."""


class DaySpend:
    """The day's sums of one ledger, by day, then agent."""

    def __init__(self, write: Write, write_now: WriteNow) -> None:
        self._write = write
        self._write_now = write_now
        self.days: dict[date, dict[str, Decimal]] = {}
        """The sums by day read so far (the ledger's gate reads it directly)."""
        self.unread: dict[date, dict[str, str]] = {}
        """By day in memory, the agents whose rows of it (their `spend` row,
        a call in flight) did not add up when the day's sums were read, each
        with the sentence naming the row: left out of the day's sums, and
        held alone until it reads (`reread`)."""
        self._reads: dict[date, Shared[Read]] = {}
        """A day's sums being read: who asks meanwhile waits for that read."""

    def known(self, day: date, agent: str) -> Decimal:
        """`agent`'s spend on `day` as last read, without the store (while it is away)."""
        return self.days.get(day, _NONE_SPENT).get(agent, _ZERO)

    async def of_agent(self, day: date, agent: str) -> Decimal:
        """`agent`'s spend on `day`; the LedgerError naming its row while a
        row of its does not read (`unread`)."""
        sums = await self.of(day)
        if self.unread and agent in self.unread.get(day, _NONE):
            await self.reread(day, agent)
            sums = await self.of(day)
        return sums.get(agent, _ZERO)

    async def readable(self, day: date) -> Read:
        """Each agent's spend on `day` that reads, and the agents held by a
        row of theirs that does not, each with the sentence naming it (read
        again first: a row corrected since frees its agent)."""
        await self.of(day)
        for agent in list(self.unread.get(day, _NONE)):
            try:
                await self.reread(day, agent)
            except LedgerError:
                pass
        unread = dict(self.unread.get(day, _NONE))
        sums = await self.of(day)
        return {a: s for a, s in sums.items() if a not in unread}, unread

    def count(self, day: date, agent: str, amount: Decimal) -> None:
        """Move a day's sum in memory (a day not loaded yet is read from the
        table, which already holds the change, when first asked for)."""
        sums = self.days.get(day)
        if sums is not None:
            sums[agent] = sums.get(agent, _ZERO) + amount

    def keep_from(self, first: date) -> None:
        """At the day's turn, the days before `first` let go: a plane that
        runs for months would otherwise hold each day it ran, its sums, the
        agents it held and its read. Asked for again (a ledger of an old day),
        such a day is read anew from the store, as after `forget`."""
        for kept in (self.days, self.unread, self._reads):
            for day in [day for day in kept if day < first]:
                del kept[day]

    def forget(self) -> None:
        """Read every day's sums from the store again when next asked."""
        self.days.clear()
        self.unread.clear()

    def renamed(self, old: str, new: str) -> None:
        """After the transaction that moved `old`'s rows to `new` committed."""
        for sums in self.days.values():
            if old in sums:
                sums[new] = sums.get(new, _ZERO) + sums.pop(old)
        for unread in self.unread.values():
            if old in unread:
                unread[new] = unread.pop(old)

    async def of(self, day: date) -> dict[str, Decimal]:
        """The day's sums, read once (an agent whose rows do not add up left
        out, and held alone: `unread`)."""
        on = day.isoformat()

        def read(conn: Connection) -> Read:
            self._write_now(conn)
            rows = conn.execute(_DAY_SUMS, (on,)).fetchall()
            sums = sums_of(rows)
            if sums is not None:
                return sums, {}
            sums, apart = sums_apart(rows)
            return sums, {
                agent: str(unreadable_within(conn, on, "spend", agent)) for agent in apart
            }

        def kept(read: Read) -> None:
            sums, unread = read
            if day not in self.days:
                self.days[day] = sums
                if unread:
                    self.unread[day] = unread

        # Until the sums are there when this coroutine runs again: the
        # fleet's tick may forget them (`forget`) between the commit that
        # kept them and this return, and then they are read anew.
        while (sums := self.days.get(day)) is None:
            if day not in self._reads:
                self._reads[day] = Shared(lambda: self._write(read, then=kept, reading=True))
            await self._reads[day].get()
        return sums

    async def reread(self, day: date, agent: str) -> None:
        """`agent`'s sum of `day`, which did not read (`unread`), read again
        on the writer: kept once it reads, and the agent goes on; else the
        LedgerError naming its row (the start's sentence)."""
        on = day.isoformat()

        def read(conn: Connection) -> Decimal:
            self._write_now(conn)
            rows = conn.execute(_AGENTS_DAY_SUMS, (on, agent)).fetchall()
            sums = sums_of(rows)
            if sums is None:
                raise unreadable_within(conn, on, "spend", agent)
            return sums.get(agent, _ZERO)

        def kept(sum_: Decimal) -> None:
            unread = self.unread.get(day)
            if unread is not None and unread.pop(agent, None) is not None:
                if not unread:
                    del self.unread[day]
                if (sums := self.days.get(day)) is not None:
                    sums[agent] = sum_

        try:
            await self._write(read, then=kept, reading=True)
        except StoreError as error:  # still no amount: said as at start
            raise LedgerError(str(error)) from error


_ZERO = Decimal(0)
_NONE: dict[str, str] = {}
_NONE_SPENT: dict[str, Decimal] = {}
_DAY_SUMS = (
    "SELECT agent, cost_usd FROM spend WHERE day = ?1 UNION ALL"
    " SELECT agent, cost_usd FROM calls WHERE status = 'pending' AND day = ?1"
)
"""A day's sums by agent: the closed calls' (`spend`) and those in flight."""
_AGENTS_DAY_SUMS = (
    "SELECT agent, cost_usd FROM spend WHERE day = ?1 AND agent = ?2 UNION ALL SELECT agent,"
    " cost_usd FROM calls WHERE status = 'pending' AND day = ?1 AND agent = ?2"
)
"""`_DAY_SUMS` of one agent."""
