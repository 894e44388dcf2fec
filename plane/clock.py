"""The plane's clock. The plane owns the UTC day; nothing else decides it.

Logic never calls `datetime.now()`: it asks a `Clock`. The real one reads the
system's UTC time; tests use `ManualClock` and move it, so the day rolling
over at 00:00 UTC is a test, not a wait.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol

from plane.wire.words import duration


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    async def sleep_until(self, when: datetime) -> None:
        """Return at `when` or soon after (or at once if it has passed)."""
        ...


def day_of(moment: datetime) -> date:
    # Every clock of the plane's reads UTC already: no conversion to make.
    return (moment if moment.tzinfo is UTC else moment.astimezone(UTC)).date()


_SECOND: tuple[tuple[int, ...], str] = ((), "")
"""The last second `stamp` wrote, and its text: one tuple, replaced whole, so
the threads that write moments (the event loop, the store's writer) never
see one second's text under another's."""


def stamp(moment: datetime) -> str:
    """`moment.isoformat()`, the same text, in half the time for a moment in
    UTC (the ledger writes two a call): the part before the microseconds is
    made once a second, not once a moment."""
    global _SECOND
    if moment.tzinfo is not UTC:
        return moment.isoformat()
    second = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    made = _SECOND
    if made[0] != second:
        made = _SECOND = (second, moment.replace(microsecond=0, tzinfo=None).isoformat())
    micro = moment.microsecond
    return f"{made[1]}.{micro:06d}+00:00" if micro else made[1] + "+00:00"


def midnight_after(day: date) -> datetime:
    """00:00 UTC at the end of `day`: when a plane on that day resets."""
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=UTC)


def until(moment: datetime, when: datetime) -> str:
    """How long from `moment` to `when`, as a person says it (the wording is
    `plane.wire.words.duration`'s, shared with the TUI)."""
    return duration(when - moment)


class SystemClock:
    """UTC from the operating system. Sleeps in short steps so that a clock
    jump (NTP, a suspended laptop) is noticed within a second."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime) -> None:
        while (left := (when - self.now()).total_seconds()) > 0:  # noqa: ASYNC110 - polls the clock itself
            await asyncio.sleep(min(left, 1.0))


class ManualClock:
    """A clock that moves only when told to. Sleepers wake when it passes
    their time."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._now = start.astimezone(UTC)
        self._moved = asyncio.Condition()

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, when: datetime) -> None:
        async with self._moved:
            await self._moved.wait_for(lambda: self._now >= when)

    async def set(self, moment: datetime) -> None:
        """Jump to `moment` (backwards too: clocks do)."""
        async with self._moved:
            self._now = moment.astimezone(UTC)
            self._moved.notify_all()

    async def advance(self, delta: timedelta) -> None:
        await self.set(self._now + delta)
