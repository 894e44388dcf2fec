"""Turns an agent booked for itself (`schedule_turn`).

Bookings are rows in the database, so they survive restarts. When one comes
due the scheduler wakes the agent's worker, which takes the turn through the
same gate as a message from the operator: an agent held over its ceiling
keeps its bookings, deferred, and takes them when the hold ends.

Each agent's open bookings are read with those of every agent asking in the
same moment (`plane.batched`): a fleet's workers starting together make one
query, not one each.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from sqlite3 import Connection, Row

from plane.batched import Batched, agents_in
from plane.clock import Clock, read_stamp
from plane.store.engine import Database
from plane.store.odd_rows import LeftAside

log = logging.getLogger(__name__)

REREAD_S = (0.5, 30.0)
"""While the bookings cannot be read (the store away, say), they are read
again after the first of these many seconds, doubling up to the second."""


@dataclass(frozen=True)
class Booking:
    id: int
    agent: str
    due: datetime
    note: str
    booked_at: datetime
    ambient: bool = False


class Scheduler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        wake: Callable[[str], None],
        *,
        only_writer: bool = False,
    ) -> None:
        """`only_writer`: no other plane books in this store (SQLite, whose
        home is locked), so what `due` read is remembered until this one books."""
        self._db = db
        self._clock = clock
        self._wake = wake
        self._changed = asyncio.Event()
        self._quiet: dict[str, datetime | None] | None = {} if only_writer else None
        """Per agent, when its next open booking comes due (None: it has none),
        as `due` last read it: a worker asks before and after every turn, and
        most agents have no booking at all."""
        self._booked = 0
        """Bookings made or forgotten: a read overtaken by one is not remembered."""
        self._open_of: Batched[str, list[Booking]] = Batched(self._read_open, missing=[])
        self._reading = True
        """`run` is reading the bookings and waking their agents (or has not started)."""
        self._sleeps_until: datetime | None = None
        """When `run` asleep wakes: the next booking's due (None: none is open)."""
        self._left_aside = LeftAside("bookings")

    async def book(self, agent: str, due: datetime, note: str, *, ambient: bool = False) -> Booking:
        now = self._clock.now()
        row = (agent, due.isoformat(), note, now.isoformat(), int(ambient))
        booked = await self._db.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO bookings (agent, due, note, booked_at, ambient)"
                    " VALUES (?, ?, ?, ?, ?)",
                    row,
                ).lastrowid
            )
        )
        self.forget(agent)
        self._changed.set()
        assert booked is not None
        return Booking(booked, agent, due, note, now, ambient)

    async def keep_ambient(self, agent: str, every: timedelta, note: str) -> None:
        """Make sure the agent's next ambient turn is booked: one at a time, so
        a long hold defers one turn rather than piling up a backlog. Looked
        for and booked in one transaction, so two callers book one turn, due
        `every` after it was asked for; looked for first among its open
        bookings, so a restart with the turns already booked writes nothing."""
        now = self._clock.now()  # when it was asked for, not when the look ended
        row = (agent, (now + every).isoformat(), note, now.isoformat())
        if any(booking.ambient for booking in await self.open(agent)):
            return

        def keep(conn: Connection) -> bool:
            cursor = conn.execute(
                "INSERT INTO bookings (agent, due, note, booked_at, ambient)"
                " SELECT ?1, ?2, ?3, ?4, 1 WHERE NOT EXISTS (SELECT 1 FROM bookings"
                " WHERE agent = ?1 AND ambient = 1 AND done = 0)",
                row,
            )
            return cursor.rowcount == 1

        if await self._db.write(keep):
            self.forget(agent)
            self._changed.set()

    async def open(self, agent: str | None = None) -> list[Booking]:
        """Open bookings, soonest first: `agent`'s, or everyone's."""
        if agent is not None:
            return list(await self._open_of.get(agent))
        rows = await self._db.fetchall("SELECT * FROM bookings WHERE done = 0 ORDER BY due, id")
        return self._readable(rows)

    async def due_agents(self) -> set[str]:
        """The agents with a booking due now, in one query for the fleet: a
        start looks at these first; one due later is woken by `run` then.
        In a fleet, read at each renewal too: a booking another plane made
        after `run` last read them (for an agent this plane may have taken
        over since) coming due before `run` wakes, `run` reads them again,
        and wakes its agent when it comes due, not at a renewal after."""
        now = self._clock.now()
        rows = await self._db.fetchall("SELECT id, agent, due FROM bookings WHERE done = 0")
        due = set()
        upcoming: datetime | None = None
        for row in rows:
            try:
                when = read_stamp(row["due"])
            except (TypeError, ValueError) as error:
                self._left_aside(row["id"], row["agent"], error)
                continue
            if when <= now:
                due.add(row["agent"])
            elif upcoming is None or when < upcoming:
                upcoming = when
        asleep_until = self._sleeps_until
        if upcoming is not None and (asleep_until is None or upcoming < asleep_until):
            self._changed.set()  # `run` reads them again
        return due

    async def _read_open(self, agents: list[str]) -> dict[str, list[Booking]]:
        narrow, params = agents_in(agents)
        rows = await self._db.fetchall(
            f"SELECT * FROM bookings WHERE done = 0 AND {narrow} ORDER BY due, id", *params
        )
        found: dict[str, list[Booking]] = {}
        for booking in self._readable(rows):
            found.setdefault(booking.agent, []).append(booking)
        return found

    def _readable(self, rows: list[Row]) -> list[Booking]:
        """The bookings of `rows`; a row no plane writes (a store edited by
        hand: a time that is none, or no time zone's) is left aside, and said
        in the log once: it would otherwise fail every read, and no booking
        would come due again."""
        bookings = []
        for row in rows:
            try:
                bookings.append(_booking(row))
            except (TypeError, ValueError) as error:
                self._left_aside(row["id"], row["agent"], error)
        return bookings

    async def due(self, agent: str) -> list[Booking]:
        now = self._clock.now()
        if self._quiet is not None and agent in self._quiet:
            until = self._quiet[agent]
            if until is None or until > now:
                return []
        booked = self._booked
        bookings = await self.open(agent)
        due = [b for b in bookings if b.due <= now]
        if self._quiet is not None and not due and booked == self._booked:
            self._quiet[agent] = min((b.due for b in bookings), default=None)
        return due

    def forget(self, agent: str) -> None:
        """Its bookings changed (booked, moved by a rename): `due` reads them again."""
        self._booked += 1
        if self._quiet is not None:
            self._quiet.pop(agent, None)

    async def done(self, bookings: list[Booking]) -> None:
        """The bookings taken, marked done, and the taken ones gone from the
        store: nothing reads a taken booking again, and an agent booking its
        next turn each hour would otherwise leave a row an hour for as long as
        the plane runs. The newest row stays, taken or not: SQLite gives a
        new row the largest id plus one, and a booking's id, once woken for,
        is never given again (`run`)."""
        if not bookings:
            return
        ids = [(b.id,) for b in bookings]

        def taken(conn: Connection) -> None:
            conn.executemany("UPDATE bookings SET done = 1 WHERE id = ?", ids)
            conn.execute(_FORGET_TAKEN)

        await self._db.write(taken)

    async def run(self) -> None:
        """Wake each agent when a booking of its comes due; forever. The
        bookings woken for and still open are remembered (so each wakes its
        agent once), and only those: a taken booking's id is never given
        again, and a plane that runs for months would otherwise keep one a
        turn."""
        woken: set[int] = set()
        wait, most = REREAD_S
        while True:
            self._changed.clear()
            self._reading = True
            try:
                bookings = await self.open()
            except sqlite3.Error as error:  # StoreFault too: a failed read ends no booking
                log.warning("the bookings could not be read (%s); again in %g s", error, wait)
                await asyncio.sleep(wait)
                wait = min(wait * 2, most)
                continue
            wait = REREAD_S[0]
            woken &= {b.id for b in bookings}
            pending = [b for b in bookings if b.id not in woken]
            now = self._clock.now()
            for booking in (b for b in pending if b.due <= now):
                woken.add(booking.id)
                self._wake(booking.agent)
            upcoming = [b.due for b in pending if b.due > now]
            self._sleeps_until = min(upcoming) if upcoming else None
            self._reading = False
            await self._sleep(self._sleeps_until)

    def caught_up(self) -> bool:
        """Whether every booking due by the clock's present has woken its
        agent: `run` asleep, no booking made since it read them, and the one
        it sleeps until not due yet. False too while it wakes, however long
        the store takes to answer: a worker idle then may be about to be woken."""
        if self._reading or self._changed.is_set():
            return False
        until = self._sleeps_until
        return until is None or self._clock.now() < until

    async def _sleep(self, until: datetime | None) -> None:
        """Until `until` or a new booking, whichever comes first."""
        waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._changed.wait())]
        if until is not None:
            waits.append(asyncio.ensure_future(self._clock.sleep_until(until)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            # Waited for, not awaited: awaiting a cancelled wait raises a
            # CancelledError that cannot be told from the scheduler's own,
            # and a plane's stop that lands here would be swallowed with it.
            await asyncio.wait(waits)


def _booking(row: Row) -> Booking:
    return Booking(
        id=row["id"],
        agent=row["agent"],
        due=read_stamp(row["due"]),
        note=row["note"],
        booked_at=read_stamp(row["booked_at"]),
        ambient=bool(row["ambient"]),
    )


_FORGET_TAKEN = "DELETE FROM bookings WHERE done = 1 AND id < (SELECT MAX(id) FROM bookings)"
"""The taken bookings but the newest row (its id is never given again)."""
