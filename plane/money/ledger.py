"""The spend ledger: every LLM call, written before anything is said about it.

A call is written **pending**, with an estimated cost, before it is sent; it
is **settled** with the provider's usage and the real cost when the response
arrives. A plane that dies in between finds the call pending at start-up and
marks it **interrupted**, keeping the estimate: a killed plane never
under-counts, and never counts twice. A call that failed with no response is
**failed** and costs nothing (no provider bills a refused request).

A call is charged to the UTC day in which its cost became known: a pending
call counts on the day it was sent, and settling moves it to the day of the
response. The day's sums per agent live in memory for the gate; the tables
are the record: `calls`, and `spend`, each agent's sum per day of the calls
no longer pending, kept in the transaction that closes them, so the first
gate check of a day (after a restart) reads one row per agent and the few
calls in flight, not the day's every call.

Every change is one write function, one transaction on the database's
writer, and the sums in memory move only once it has committed.

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
stops whatever was about to spend it; nothing here is ever swallowed. A
call's outcome (settled, failed) that cannot be written because a shared
store is away is tried again until it is back, and past that kept and
written when it is (`plane.money.stranded`): the call was made, and its
row must say what it cost.

**Several planes** (`plane` set): a call is admitted only under the
agent's lease, checked in the statement that writes it — after the wait for
the fleet's row, never before it — at the turn's epoch (`plane.store.fence.FENCE`)
and with a third of the lease still to run by the database's clock; every
later write of the call carries the same fence.

Beside it: each agent's spend of a day in memory, what the gate weighs
(`plane.money.day_spend`); what the fleet, each group and each tag have
spent today (`plane.money.budget_spend`, the ledger's own); the
plane's day (`plane.money.plane_day`); a call's writes and their SQL
(`plane.money.call_writes`); the day's sums a transaction moves
(`plane.money.day_sums`); a `calls` row read (`plane.money.ledger_rows`);
calls counted interrupted (`plane.money.interrupted`); and closes kept
while the store is away (`plane.money.stranded`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable, Collection, Coroutine, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from sqlite3 import Connection, Row
from typing import Any, NamedTuple, TypeVar

from plane.clock import Clock, day_of, stamp
from plane.errors import LeaseLost, LedgerError, StoreError, ledger_refused, unreachable
from plane.money.attribution import Part
from plane.money.budget_spend import BudgetSpend
from plane.money.budgets import (
    Budget,
    FleetFull,
    Full,
    GroupFull,
    TagFull,
    checks,
)
from plane.money.call_writes import OPEN, OPEN_BARE, Admitted, Books, Closing, Opening
from plane.money.day_spend import DaySpend
from plane.money.day_sums import DaySums
from plane.money.interrupted import Interrupted, Tell, interrupt_pending, sweep
from plane.money.ledger_rows import Recorded, entry_of
from plane.money.plane_day import PlaneDay
from plane.money.stored import (
    FLOOR_PRICED,
    amount,
    check_days,
    unreadable_sum,
)
from plane.money.stranded import Stranded
from plane.store.engine import Database, Write
from plane.wire.protocol import LedgerEntry, Usage

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = [
    "Budget",
    "FleetFull",
    "Full",
    "GroupFull",
    "Interrupted",
    "LeaseLost",
    "Ledger",
    "TagFull",
]


class Charge(NamedTuple):
    """What settling a call tells the plane (a tuple: made once a call, where
    a frozen dataclass costs a microsecond; on that path made with
    `tuple.__new__`, without the Python frame of a NamedTuple's `__new__`,
    ~1.6k instructions)."""

    agent: str
    cost_usd: Decimal
    day: date


class Ledger:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        charged: Callable[[str, datetime, Decimal], None] | None = None,
        plane: str | None = None,
        lease_margin_ms: int = 0,
    ) -> None:
        self._db = db
        self._clock = clock
        self._sums = DaySums()
        db.finish_with(self._sums)
        self._spend = DaySpend(self._write, self._sums.write_now)
        """Each agent's spend of a day, in memory: what the gate weighs."""
        self._days = self._spend.days  # read directly on the gate's path
        self._unread = self._spend.unread
        self._plane_day = PlaneDay(clock, self._write, self._read, self._carry_in_flight)
        self._open: dict[int, Recorded] = {}
        """The calls this plane opened and has not closed, as written."""
        self.plane = plane
        """This plane's name, recorded with each call it opens, when several
        planes share the store (None: the store is this plane's alone)."""
        self.lease_margin_ms = lease_margin_ms
        """How much of its lease an agent's plane must still have, by the
        database's clock, for a call of the agent's to be admitted."""
        self.closes = 0
        """How many of this plane's calls have closed (settled, failed, cut)."""
        self._on_close: list[asyncio.Future[None]] = []
        self.stranded = Stranded(db, self._closed_elsewhere)
        """Closes the store refused while it was away, kept until it is back."""
        self._unsummed: set[str] = set()
        """Agents whose call's close was refused for a day's sum that is not
        an amount (`_refused_close`): they open no call until it reads."""
        self.budget_spend = BudgetSpend(
            self._read, self.today, self.spend_by_agent, self._open, plane
        )
        """What the fleet, each group and each tag have spent today."""
        self._books = Books(db, self._sums, self._open, self._spend.count, self._closed, charged)
        """What this ledger's call writes reach of it (`charged`: told (agent,
        when, cost) of each call closed with a cost, once committed: the burn
        rate's feed, `plane.money.burn`)."""

    def store_unreachable_since(self) -> datetime | None:
        """Since when the store cannot be reached (None: it can)."""
        return self._db.unreachable_since

    async def recover(self, tell: Tell | None = None) -> dict[str, Interrupted]:
        """Mark calls left pending by a plane that died as interrupted, at
        their estimates. Returns, per agent, how many there were and what
        they count. `tell` runs inside the same transaction, so what is said
        about them (the agent's conversation) commits with them or not at all:
        a plane killed again during start-up finds them still pending."""

        since = self._days_begun()

        def recover(conn: Connection) -> dict[str, Interrupted]:
            check_days(conn, since)
            return self.sweep_within(conn, None, tell)

        return await self._write(recover)

    async def check_sums(self) -> None:
        """What `recover` refuses at start (`check_days`: the plane's day, the
        latest call's, the days' sums), without its sweep: for a plane of
        several on one store, whose fleet sweeps the calls a stop cut as it
        takes their agents. Their start needs the refusal as much."""
        since = self._days_begun()
        await self._write(lambda conn: check_days(conn, since))

    def _days_begun(self) -> date:
        """The first day whose sums the start looks at (`check_days`)."""
        return self._clock.now().date() - timedelta(days=1)

    def sweep_within(
        self,
        conn: Connection,
        agents: Collection[str] | None,
        tell: Tell | None = None,
        *,
        planes: Collection[str] | None = None,
    ) -> dict[str, Interrupted]:
        """`recover`, as part of a write function, for `agents` only (None:
        all), or the calls opened by `planes`: a plane that takes over agents
        whose plane died sweeps their calls in flight, in the transaction that
        takes their leases."""
        return sweep(conn, agents, tell, planes=planes)

    def today(self, now: datetime | None = None) -> Coroutine[object, object, date]:
        """The plane's day: the later of the clock's and the latest reached
        (the clock read `now`, if given). A new day is recorded before this
        returns, so nothing is charged to a day a restart could forget.
        (`PlaneDay.today`'s coroutine itself, awaited as this one's would be.)"""
        return self._plane_day.today(self.plane, now)

    def _carry_in_flight(self, day: date) -> None:
        """A day reached carries the calls in flight onto it: in memory, once
        committed. The sums of the days before yesterday are let go then (a
        call that closes late closes on the day it was carried to)."""
        for call, recorded in list(self._open.items()):
            if recorded.day < day:
                self._open[call] = recorded._replace(day=day)
                self._spend.count(recorded.day, recorded.agent, -recorded.cost_usd)
                self._spend.count(day, recorded.agent, recorded.cost_usd)
        self._spend.keep_from(day - timedelta(days=1))

    async def _today_text(self, now: datetime) -> tuple[date, str]:
        """`today`, and the day as rows hold it."""
        day = await self.today(now)
        return day, day.isoformat()

    def day(self) -> date:
        """The plane's day as last known, without a database round trip."""
        return self._plane_day.day()

    def days_behind(self) -> tuple[date, date] | None:
        """The clock's day and the plane's, while the clock reads a day before
        the plane's (None: it does not)."""
        return self._plane_day.days_behind()

    def spend_known(self, agent: str) -> Decimal:
        """`agent`'s spend today as last read, without the store (while it is away)."""
        return self._spend.known(self.day(), agent)

    async def spend_today(self, agent: str) -> Decimal:
        """`agent`'s spend today; the LedgerError naming its row while a row
        of its does not read (`plane.money.day_spend`)."""
        return await self._spend.of_agent(await self.today(), agent)

    async def spend_by_agent(self, day: date | None = None) -> dict[str, Decimal]:
        """Each agent's spend on `day`; the LedgerError naming a row that
        does not read, of any agent (a sum of them all would be short)."""
        sums, unread = await self._spend.readable(day or await self.today())
        if unread:
            raise LedgerError(next(iter(unread.values())))
        return sums

    async def day_spend(self, day: date) -> tuple[dict[str, Decimal], dict[str, str]]:
        """Each agent's spend on `day` that reads, and the agents held by a
        row of theirs that does not, each with the sentence naming it."""
        return await self._spend.readable(day)

    def in_flight(self, agent: str) -> Decimal:
        """What `agent`'s calls this plane has in flight count today: their
        estimates, part of its spend today until they settle."""
        day = self.day()
        return sum(
            (r.cost_usd for r in self._open.values() if r.agent == agent and r.day == day),
            Decimal(0),
        )

    def flying(self, agent: str) -> int:
        """How many calls this plane has in flight for `agent`."""
        return sum(r.agent == agent for r in self._open.values())

    async def latest_models(self, agents: Collection[str]) -> dict[str, str]:
        """The model each agent's latest call was sent as (a gateway agent's
        is its client's choice; not the one that answered, where another did)."""
        if not agents:
            return {}
        marks = ",".join("?" * len(agents))
        rows = await self._read(
            "SELECT agent, COALESCE(asked, model) FROM calls WHERE id IN"
            f" (SELECT MAX(id) FROM calls WHERE agent IN ({marks}) GROUP BY agent)",
            *sorted(agents),
        )
        return {row[0]: row[1] for row in rows}

    async def floor_priced_agents(self, day: date) -> set[str]:
        """The agents with a call priced at a floor on `day` (`FLOOR`)."""
        rows = await self._read(
            f"SELECT DISTINCT agent FROM calls WHERE day = ? AND {FLOOR_PRICED}", day.isoformat()
        )
        return {row[0] for row in rows}

    def after_close(self, seen: int) -> asyncio.Future[None]:
        """Done once a call closes after `closes` was `seen` (at once if one
        has): a call held back only by calls in flight is admitted again then
        (`plane.agents.metering`, `plane.gateway.admission`)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.closes != seen:
            done.set_result(None)
        else:  # those given up on (a wait that timed out) are dropped meanwhile
            self._on_close = [waiting for waiting in self._on_close if not waiting.done()]
            self._on_close.append(done)
        return done

    def _closed(self) -> None:
        self.closes += 1
        if not self._on_close:
            return
        waiting, self._on_close = self._on_close, []
        for done in waiting:
            if not done.done():
                done.set_result(None)

    def forget_sums(self) -> None:
        """Read the day's sums from the store again when next asked: agents
        that moved here from another plane bring spend this plane never saw."""
        self._spend.forget()
        self._sums.stale = True

    async def open_call(
        self,
        agent: str,
        provider: str,
        model: str,
        estimate: Decimal,
        source: str,
        *,
        fleet_ceiling: Decimal | None = None,
        group: Budget | None = None,
        tag: Budget | None = None,
        session: str | None = None,
    ) -> int:
        """Write the call pending at `estimate`, before it is sent, with the
        agent's group, and the tag and session a gateway call carried. With
        a ceiling above the agent's (the fleet's, its group's, its tag's) it
        is first admitted, in the same transaction (`plane.money.budgets`):
        the fleet row locked (every plane's admissions queue on it, each for
        the end of one short transaction: the write runs last in its batch),
        each budget's spend today read with every call in flight at its
        estimate, and the call refused (`Full`, nothing written) when one is
        at or over its ceiling. So admissions on all planes together pass a
        ceiling by at most the one call admitted last under it. With several
        planes, the lease is checked after that wait, in the INSERT itself;
        and a call with no ceiling known here is written only while no
        operator has set the fleet's or its group's on another plane (one
        set a moment ago whose notice has not arrived): else it is admitted
        under that one first (`plane.money.budgets.UNSET`)."""
        now = self._clock.now()
        day, day_text = self._plane_day.latest_text  # `today`'s for all but a day's first
        if (now.date() if now.tzinfo is UTC else day_of(now)) != day:  # `day_of`, a call fewer
            day, day_text = await self._today_text(now)
        assert day is not None  # known: a day reached
        if day not in self._days:
            await self._spend.of(day)  # the gate's sum for the day, before it moves
        if self._unread and agent in self._unread.get(day, _NONE):
            await self._spend.reread(day, agent)
        if self._unsummed and agent in self._unsummed:
            await self._summed(agent, day_text, group, tag)
        row: tuple[object, ...] = (
            agent, day_text, stamp(now), provider, model, str(estimate), source,
        )  # fmt: skip
        if (
            fleet_ceiling is None
            and group is None
            and tag is None
            and session is None
            and self.plane is None
        ):  # the most of calls: nothing to admit, nothing more to write
            recorded = (agent, day, estimate, "pending", source, None, None)
            opening = Opening(self._books, row, tuple.__new__(Recorded, recorded), OPEN_BARE)
            admits = False
        else:
            opening, admits = self._opening(
                row, day, estimate, source, fleet_ceiling, group, tag, session
            )
        try:  # `_write`'s body: a coroutine a call fewer
            return await (self._db.put(opening, late=True) if admits else self._db.put(opening))
        except sqlite3.Error as error:
            raise ledger_refused(error) from error
        except StoreError as error:  # a budget's cost no plane wrote (`budgets._spent`)
            raise LedgerError(str(error)) from error

    def _opening(
        self,
        row: tuple[object, ...],
        day: date,
        estimate: Decimal,
        source: str,
        fleet_ceiling: Decimal | None,
        group: Budget | None,
        tag: Budget | None,
        session: str | None,
    ) -> tuple[Opening, bool]:
        """`open_call`'s write of a call with a group, a tag, a session, a
        ceiling above its agent's, or several planes: its row's four more
        values, and what is admitted first (`row`: its first seven); and
        whether a ceiling is checked (the write then runs last in its batch)."""
        agent = row[0]
        row += (self.plane, group.name if group else None, tag.name if tag else None, session)
        admits = (fleet_ceiling is not None or group is not None or tag is not None) and checks(
            fleet_ceiling, group, tag
        )
        tag_name, group_name = tag.name if tag else None, group.name if group else None
        recorded = (agent, day, estimate, "pending", source, tag_name, group_name)
        if not admits and self.plane is None:
            return Opening(self._books, row, tuple.__new__(Recorded, recorded), OPEN), False
        budgets = (fleet_ceiling, group, tag)
        margin, plane = self.lease_margin_ms, self.plane
        return Admitted(
            self._books,
            row,
            tuple.__new__(Recorded, recorded),
            OPEN,
            admits,
            budgets,
            margin,
            plane,
        ), admits

    async def _summed(self, agent: str, on: str, group: Budget | None, tag: Budget | None) -> None:
        """Refuse (`LedgerError`) a call of an agent in `_unsummed` while a
        day's sum its close would add to is not an amount: the call would be
        sent, and what it cost could not be recorded."""
        keys = {
            "spend": agent,
            "group_spend": group.name if group else None,
            "tag_spend": tag.name if tag else None,
        }
        unreadable = await unreadable_sum(self._read, on, keys)
        if unreadable is not None:
            raise LedgerError(str(unreadable))
        self._unsummed.discard(agent)

    def settle(
        self,
        call: int,
        usage: Usage,
        cost: Decimal,
        source: str,
        *,
        estimated: bool = False,
        parts: Sequence[Part] = (),
        counted: Callable[[Decimal], object] | None = None,
        model: str | None = None,
    ) -> Coroutine[object, object, Charge]:
        """Close the call with its cost; `parts`, what that cost is attributed
        to (`plane.money.attribution`), are written in the same transaction.
        `counted` is called with the cost once it is committed, whether or not
        its caller still awaits it: a turn cut while its cost was written
        still counts it. `model`: the model that answered, where the provider
        says another answered than the one the call was opened with. (`_close`'s
        coroutine itself, awaited as `settle`'s would be: one coroutine a call fewer.)"""
        now = self._clock.now()
        return self._close(
            call, now, "settled", usage, cost, source, estimated, parts, counted, model
        )

    async def fail(self, call: int) -> Charge:
        """The call got no response: nothing was bought."""
        return await self._close(
            call, self._clock.now(), "failed", Usage(), Decimal(0), None, False
        )

    async def cut(self, call: int) -> Charge:
        """A call its own plane cut in flight (its lease could have run out
        by the database's clock, `Ownership.within_lease`): it may have been
        billed, so it counts its estimate, interrupted, as the sweep of a
        plane taking the agent would count it. Written under the turn's
        fence: once another plane has taken the agent, its sweep counted the
        call, and this write is refused (`LeaseLost`)."""
        opened = self._open.get(call)
        if opened is None:
            agent, stored = (
                await self._read("SELECT agent, cost_usd FROM calls WHERE id = ?", call)
            )[0]
            try:
                estimate = amount("calls", f"call {call} of {agent}", "cost_usd", stored)
            except StoreError as error:  # edited while the plane runs: said as at start
                raise LedgerError(str(error)) from error
        else:
            estimate = opened.cost_usd
        now = self._clock.now()
        return await self._close(call, now, "interrupted", Usage(), estimate, None, True)

    async def interrupt_open(
        self, agent: str, after: list[Write[Any]] | None = None
    ) -> Interrupted:
        """The operator cut `agent`'s turn: the calls it has in flight get no
        response now, and count their estimates as interrupted (as a stop
        would leave them), never $0. Their estimates are in the day's sums
        already, so the sums in memory do not move. `after`: what the turn
        put that is to be written first (hurried, `Database.expedite`), so
        no call of it opens or closes after the cut."""
        if after:
            self._db.expedite(after)

        def interrupt(conn: Connection) -> tuple[list[int], Interrupted]:
            return interrupt_pending(conn, agent, self._sums)

        def closed(outcome: tuple[list[int], Interrupted]) -> None:
            for call in outcome[0]:
                self._open.pop(call, None)
            self._closed()

        try:
            return (await self._write(interrupt, then=closed))[1]
        except StoreError as error:  # an estimate edited while the plane runs: said as at start
            raise LedgerError(str(error)) from error

    def renamed(self, old: str, new: str) -> None:
        """After the transaction that moved `old`'s rows to `new` committed."""
        self._spend.renamed(old, new)
        for call, recorded in list(self._open.items()):
            if recorded.agent == old:
                self._open[call] = recorded._replace(agent=new)
        if old in self._unsummed:
            self._unsummed.discard(old)
            self._unsummed.add(new)

    async def entries(self, day: date) -> list[LedgerEntry]:
        rows = await self._read("SELECT * FROM calls WHERE day = ? ORDER BY id", day.isoformat())
        return [entry_of(row) for row in rows]

    async def _close(
        self,
        call: int,
        now: datetime,
        status: str,
        usage: Usage,
        cost: Decimal,
        source: str | None,
        estimated: bool,
        parts: Sequence[Part] = (),
        counted: Callable[[Decimal], object] | None = None,
        model: str | None = None,
    ) -> Charge:
        """Close a pending call: its row, and its estimate moved from the day
        it was sent to its cost on the day it became known, in one
        transaction. `source` None keeps the price source recorded; `model`
        None, the model."""
        known_day, known_text = self._plane_day.latest_text  # as `open_call` finds it
        if (now.date() if now.tzinfo is UTC else day_of(now)) != known_day:
            known_day, known_text = await self._today_text(now)
        assert known_day is not None  # known: a day reached
        # The day's sums are not read first: a day not in memory is read from
        # the table, which holds this close once committed (`DaySpend.count`), and a
        # read refused while the store is away would leave the call pending,
        # neither written nor kept for `Stranded.write`.
        opened = self._open.get(call)
        closing = Closing(
            self._books, call, opened, now, known_day, known_text, status, usage, cost, source,
            estimated, parts, counted, model,
        )  # fmt: skip
        started = time.monotonic()
        try:  # the first try in this coroutine: one a call fewer
            recorded = await self._db.put(closing)
        except sqlite3.Error as error:
            if not unreachable(error):
                raise await self._refused_close(opened, known_text, error) from error
            recorded = await self.stranded.patiently(closing, started, error)
        except StoreError as error:  # a day's sum no plane wrote (`DaySums`)
            raise await self._refused_close(opened, known_text, error) from error
        return tuple.__new__(Charge, (recorded.agent, cost, known_day))

    async def _refused_close(
        self, opened: Recorded | None, on: str, error: sqlite3.Error | StoreError
    ) -> LedgerError:
        """What a close the store refused means. When a day's sum it adds to
        (on day `on`: its agent's, group's, tag's) is not an amount, a row
        edited while the plane runs, it is the sentence a start says of that
        row, and the agent opens no call until the row reads (`_summed`)."""
        if opened is not None:
            keys = {"spend": opened.agent, "group_spend": opened.group, "tag_spend": opened.tag}
            unreadable = await unreadable_sum(self._read, on, keys)
            if unreadable is not None:
                self._unsummed.add(opened.agent)
                return LedgerError(str(unreadable))
        return LedgerError(str(error)) if isinstance(error, StoreError) else ledger_refused(error)

    def _closed_elsewhere(self, call: int) -> None:
        """A kept close found its call closed by another plane meanwhile:
        no longer in flight here, and the calls it held back are admitted again."""
        self._open.pop(call, None)
        self._closed()

    async def _write(
        self,
        fn: Callable[[Connection], T],
        then: Callable[[T], object] | None = None,
        *,
        reading: bool = False,
        late: bool = False,
    ) -> T:
        """One ledger transaction; a database that refuses it is a LedgerError."""
        try:
            return await self._db.submit(fn, then, late=late)
        except sqlite3.Error as error:
            raise ledger_refused(error, reading=reading) from error

    async def _read(self, sql: str, *params: object) -> list[Row]:
        try:
            return await self._db.fetchall(sql, *params)
        except sqlite3.Error as error:
            raise LedgerError(f"The ledger could not be read ({error}).") from error


_NONE: dict[str, str] = {}
