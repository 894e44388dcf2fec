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


_LAST = datetime.max.replace(tzinfo=UTC)
_SECOND: tuple[datetime, datetime, str] = (_LAST, _LAST, "")
"""The second `stamp` wrote last (its start, its end) and its text: one
tuple, replaced whole, so the threads that write moments (the event loop,
the store's writer) never see one second's text under another's."""

_DIGITS = tuple(f"{n:03d}" for n in range(1000))
"""Three digits of a microsecond: two lookups are a third of formatting it."""

_ONE_SECOND = timedelta(seconds=1)


def stamp(moment: datetime) -> str:
    """`moment.isoformat()`, the same text, in a third of the time for a
    moment in UTC (the ledger writes two a call): the part before the
    microseconds is made once a second, not once a moment, and a moment is
    placed in its second by two comparisons."""
    global _SECOND
    if moment.tzinfo is not UTC:
        return moment.isoformat()
    made = _SECOND
    if not made[0] <= moment < made[1]:
        start = moment.replace(microsecond=0)
        end = start + _ONE_SECOND if start < _LAST - _ONE_SECOND else _LAST  # the year 9999
        made = _SECOND = (start, end, start.replace(tzinfo=None).isoformat())
    micro = moment.microsecond
    if micro:
        return f"{made[2]}.{_DIGITS[micro // 1000]}{_DIGITS[micro % 1000]}+00:00"
    return made[2] + "+00:00"


def read_stamp(text: object) -> datetime:
    """A moment as `stamp` writes it (ISO 8601, with its offset);
    ValueError for any other text, a time without its zone among them."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a time")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment


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
