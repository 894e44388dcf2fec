"""The plane's day, which never goes back: the later of the clock's day and
the latest day the ledger has reached (`plane_day`, written the first time
a day is seen and before anything is charged to it, so it holds across a
restart). The ledger's module docstring says why (`plane.money.ledger`).

Reaching a new day carries the plane's calls still in flight onto it, in the
transaction that records it; the ledger is told once it commits (`carry`),
to move its sums in memory the same way."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import date, datetime, timedelta
from sqlite3 import Connection, Row

from plane.batched import Shared
from plane.clock import Clock, day_of

log = logging.getLogger("plane.money.ledger")
"""The ledger's log, as it was before the day had a module of its own: what
an operator's log filter names."""

Write = Callable[[Callable[[Connection], None], Callable[[None], object]], Awaitable[None]]
"""The ledger's transaction: a write function, and what its commit changes in memory."""

Read = Callable[[str], Awaitable[list[Row]]]
"""The ledger's read of the store."""


class PlaneDay:
    """The plane's day, for one ledger: given its clock, its transaction and
    its read (whose failures are the ledger's), and told to `carry` its
    calls in flight onto a day reached."""

    def __init__(
        self, clock: Clock, write: Write, read: Read, carry: Callable[[date], None]
    ) -> None:
        self._clock = clock
        self._write = write
        self._read = read
        self._carry = carry
        self.latest: date | None = None
        """The latest day reached (None until read from the database)."""
        self.latest_text: tuple[date | None, str] = (None, "")
        """`latest` and its text as rows hold it, made once a day, not twice a
        call (`date.isoformat` is ~3k instructions): one tuple, replaced whole."""
        self._told_back: date | None = None
        self._reaching: dict[date, Shared[date]] = {}
        """A day being reached: a fleet's workers asking at once for the first
        time read the latest day, and record the new one, once, and all go on
        together when it is done."""

    async def today(self, plane: str | None, now: datetime | None = None) -> date:
        """The plane's day: the later of the clock's and the latest reached
        (the clock read `now`, if given). A new day is recorded before this
        returns, so nothing is charged to a day a restart could forget.
        `plane`: the ledger's (see `_turn_day`)."""
        clock_day = day_of(self._clock.now() if now is None else now)
        if clock_day == self.latest:
            return clock_day  # every call but a day's first
        if clock_day not in self._reaching:
            self._reaching[clock_day] = Shared(lambda: self._reach(clock_day, plane))
        return await self._reaching[clock_day].get()

    async def _reach(self, clock_day: date, plane: str | None) -> date:
        latest = await self._latest_day()
        if clock_day > latest:
            await self._write(
                lambda conn: _turn_day(conn, clock_day, plane),
                lambda _: self._carry(clock_day),
            )
            return self._reached(clock_day)
        if clock_day < latest and self._told_back != clock_day:
            self._told_back = clock_day
            log.warning(
                "the clock moved back to %s, before %s, a day already counted", clock_day, latest
            )
        return latest

    def day(self) -> date:
        """The plane's day as last known, without a database round trip."""
        clock_day = day_of(self._clock.now())
        return clock_day if self.latest is None else max(clock_day, self.latest)

    def days_behind(self) -> tuple[date, date] | None:
        """The clock's day and the plane's, while the clock reads a day before
        the plane's (None: it does not)."""
        clock_day = day_of(self._clock.now())
        if self.latest is None or clock_day >= self.latest:
            return None
        return clock_day, self.latest

    async def _latest_day(self) -> date:
        if self.latest is None:
            rows = await self._read(
                "SELECT MAX(day) FROM (SELECT MAX(day) AS day FROM calls"
                " UNION ALL SELECT day FROM plane_day) AS reached"
            )
            found = rows[0][0] if rows else None
            return self._reached(date.min if found is None else date.fromisoformat(found))
        return self.latest

    def _reached(self, day: date) -> date:
        """Move the latest day reached up to `day` (never down: another
        coroutine may have moved it meanwhile)."""
        self.latest = latest = day if self.latest is None else max(day, self.latest)
        if self.latest_text[0] != latest:
            self.latest_text = (latest, latest.isoformat())
        for gone in [gone for gone in self._reaching if gone < latest]:
            del self._reaching[gone]  # reached: its askers hold what they wait for
        return latest


def _turn_day(conn: Connection, day: date, plane: str | None) -> None:
    """Record `day` as reached, and carry the calls still in flight of this
    plane (`plane`: None, the store is its alone) onto it: each call's cost
    counts on the day it becomes known, which is now `day` at the earliest.
    So their estimates leave the day they were sent on exactly, and count
    against `day`'s ceilings from 00:00 (left behind, the new day admitted
    its whole ceiling besides, and ended more than one call over)."""
    text = day.isoformat()
    conn.execute(
        "INSERT INTO plane_day (id, day) VALUES (1, ?) ON CONFLICT (id)"
        " DO UPDATE SET day = excluded.day WHERE excluded.day > plane_day.day",
        (text,),
    )
    carry = "UPDATE calls SET day = ? WHERE status = 'pending' AND day < ?"
    if plane is None:
        conn.execute(carry, (text, text))
    else:  # another plane carries its own, as it reaches the day
        conn.execute(carry + " AND plane = ?", (text, text, plane))
    # The notices said once a day are asked of the plane's day, which never
    # goes back: those of the days before yesterday are never asked again.
    conn.execute("DELETE FROM notices WHERE day < ?", ((day - timedelta(days=1)).isoformat(),))
