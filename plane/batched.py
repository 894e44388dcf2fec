"""Reads of one row set per agent, asked for together, made as one query
(`Batched`), and reads of a whole table that many ask for at once, made
once (`Shared`). A fleet's workers start together and each asks for its own
told hold, waiting messages and bookings: 100,000 agents would be 100,000
queries, one after another on the store's one reader. The idea is GraphQL's
DataLoader.

A read joins the next query, which starts once the event loop's current
turn is over and no query of its kind is running; no read returns what the
table held before it was asked for, so a write committed before the ask is
seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

FEW = 500
"""Past this many agents, a batch reads the whole table (one query still)
rather than name each agent: a statement's parameters are bounded
(SQLite's 32,766), and the rows of a fleet's start are most of it anyway."""


def agents_in(agents: Collection[str]) -> tuple[str, list[str]]:
    """The condition that narrows a read to `agents` (`agent IN (…)`) and its
    parameters; for many agents, `TRUE`: the caller keeps the ones it asked
    for."""
    if len(agents) > FEW:
        return "TRUE", []
    return f"agent IN ({','.join('?' * len(agents))})", sorted(agents)


class Batched(Generic[K, V]):
    """`await batched.get(key)`: the value `read(keys)` returns for `key`
    (`missing` when it returns none), `read` called once for every key
    asked for together. One read runs at a time: who asks while it runs is
    read next, with everyone else who asked meanwhile, so a loaded loop
    (workers waking over many turns of it) makes bigger reads, not more."""

    def __init__(self, read: Callable[[list[K]], Awaitable[dict[K, V]]], missing: V) -> None:
        self._read = read
        self._missing = missing
        self._asked: dict[K, asyncio.Future[V]] = {}
        self._busy = False
        """A read is running, or about to start."""
        self._running: set[asyncio.Task[None]] = set()

    async def get(self, key: K) -> V:
        loop = asyncio.get_running_loop()
        future = self._asked.get(key)
        if future is None:
            future = self._asked[key] = loop.create_future()
        if not self._busy:
            self._busy = True
            loop.call_soon(self._start)
        # Shielded: one asker cancelled does not cancel the others' read.
        return await asyncio.shield(future)

    def _start(self) -> None:
        asked, self._asked = self._asked, {}
        task = asyncio.get_running_loop().create_task(self._answer(asked))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _answer(self, asked: dict[K, asyncio.Future[V]]) -> None:
        try:
            found = await self._read(list(asked))
        except BaseException as error:
            for future in asked.values():
                if not future.done():
                    future.set_exception(error)
                    future.add_done_callback(_retrieved)  # an asker cancelled meanwhile
            if not isinstance(error, Exception):
                raise
        else:
            for key, future in asked.items():
                if not future.done():
                    future.set_result(found.get(key, self._missing))
        finally:
            if self._asked:  # asked while this read ran: the next read, now
                self._start()
            else:
                self._busy = False


class Shared(Generic[T]):
    """`await shared.get()`: `read()`'s result, one read at a time; who asks
    while it runs waits for it rather than starting another. For reads whose
    result the plane keeps and moves with each later commit (a day's spend,
    the waiting counts), so joining a read that started a moment ago loses
    nothing."""

    def __init__(self, read: Callable[[], Awaitable[T]]) -> None:
        self._read = read
        self._running: asyncio.Future[T] | None = None

    async def get(self) -> T:
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._read())
            self._running.add_done_callback(_retrieved)
        return await asyncio.shield(self._running)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Its error is its askers'; one who was cancelled meanwhile leaves it unread."""
    if not future.cancelled():
        future.exception()
