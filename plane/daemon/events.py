"""Fan-out of events to subscribed clients.

The plane never waits on a client: a subscriber that falls `QUEUE_LIMIT`
events behind is dropped (it resyncs from a fresh snapshot when it
reconnects) rather than slowing every agent down.

**One log, a cursor each.** What is emitted in one turn of the event loop
is one `Batch`, appended once to a log every subscriber reads from its own
place; a subscriber costs nothing per event, only a wake-up per batch. A
batch is encoded once for every client (`Batch.lines`), its token deltas
joined per turn (`coalesced`): twenty TUIs cost twenty writes a batch, not
twenty encodings of every word. In-process readers (`next()`) get every
event as it was emitted.

**Written from the seal.** A socket reader that has read everything and
whose connection keeps up (`Subscription.sink`) is written each batch by the
seal itself; its task, parked, is woken only when the reader falls behind
(its transport backed up): no wake-up, lock or drain a batch per TUI.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from functools import cached_property

from plane.wire import pages
from plane.wire.protocol import Event, TextDelta, encode

log = logging.getLogger(__name__)

QUEUE_LIMIT = 10_000


class Batch:
    """The events of one loop turn, as every subscriber gets them."""

    def __init__(self, start: int) -> None:
        self.start = start
        """How many events the bus had emitted before this batch's first."""
        self.events: list[Event] = []

    @cached_property
    def lines(self) -> bytes:
        """Encoded once, after the batch is sealed (nothing is added after)."""
        return coalesced(self.events)


class Subscription:
    """A reader's place in the bus's log: `next()` for each event, or
    `next_lines()` for everything that waits, encoded for the socket."""

    def __init__(self, bus: EventBus, batch: int, offset: int) -> None:
        self._bus = bus
        self._batch = batch  # the absolute index of the batch it reads next
        self._offset = offset  # events of that batch already read
        self._waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.dropped = False
        self.sink: Callable[[bytes], bool] | None = None
        """Where the seal may write a batch at once while the reader's task
        waits for it (`next_lines`); False: it cannot take it now, and the
        task is woken to write it and wait for the socket."""

    @property
    def behind(self) -> int:
        """Events emitted and not yet read."""
        return self._bus._emitted - self._position()

    async def next(self) -> Event | None:
        """The next event; None once the subscription has ended."""
        while not self.ended:
            batch = self._bus._sealed(self._batch)
            if batch is None:
                await self._wait()
                continue
            if self._offset < len(batch.events):
                self._offset += 1
                return batch.events[self._offset - 1]
            self._batch, self._offset = self._batch + 1, 0
        return None

    async def next_lines(self) -> bytes | None:
        """Every sealed batch not yet read, as one write; None once ended."""
        while not self.ended:
            parts = []
            while (batch := self._bus._sealed(self._batch)) is not None:
                if self._offset:  # subscribed in the middle of this batch: its rest
                    parts.append(coalesced(batch.events[self._offset :]))
                else:
                    parts.append(batch.lines)
                self._batch, self._offset = self._batch + 1, 0
            if parts:
                self._bus._trim()
                return b"".join(parts)
            await self._wait()
        return None

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _take(self, index: int, batch: Batch) -> bool:
        """Batch `index`, just sealed, written to the sink: only when this
        reader waits for exactly it, so nothing is written twice or out of turn."""
        waiting = self._waiter is not None and not self._waiter.done()
        if self.sink is None or not waiting or (self._batch, self._offset) != (index, 0):
            return False
        if not self.sink(batch.lines):
            return False
        self._batch = index + 1
        return True

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _position(self) -> int:
        batch = self._bus._batch(self._batch)
        return self._bus._emitted if batch is None else batch.start + self._offset


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self._log: deque[Batch] = deque()
        self._base = 0  # the absolute index of self._log[0]
        self._open: Batch | None = None
        self._emitted = 0

    def subscribe(self) -> Subscription:
        """A subscription that sees what is emitted from now on."""
        if self._open is not None:
            at, offset = self._base + len(self._log) - 1, len(self._open.events)
        else:
            at, offset = self._base + len(self._log), 0
        subscription = Subscription(self, at, offset)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)
        self._trim()

    def watched(self) -> bool:
        """Whether anyone reads what is emitted (a client subscribed, the alerts)."""
        return bool(self._subscriptions)

    def backlog(self) -> int:
        """Events waiting for the slowest subscriber."""
        return max((s.behind for s in self._subscriptions), default=0)

    def emit(self, event: Event) -> None:
        if self._open is None:
            self._open = Batch(self._emitted)
            self._log.append(self._open)
            asyncio.get_running_loop().call_soon(self._seal)
        self._open.events.append(event)
        self._emitted += 1

    def close(self) -> None:
        self._seal()
        for subscription in list(self._subscriptions):
            self._end(subscription)

    def _seal(self) -> None:
        """The loop turn's batch is complete: readers may take it."""
        sealed, index = self._open, self._base + len(self._log) - 1
        self._open = None
        for subscription in list(self._subscriptions):
            if subscription.behind > QUEUE_LIMIT:
                log.warning("dropping a subscriber %d events behind", QUEUE_LIMIT)
                subscription.dropped = True
                self._end(subscription)
            elif sealed is None or not subscription._take(index, sealed):
                subscription._wake()
        self._trim()

    def _end(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)
        subscription.ended = True
        subscription._wake()

    def _batch(self, index: int) -> Batch | None:
        at = index - self._base
        return self._log[at] if 0 <= at < len(self._log) else None

    def _sealed(self, index: int) -> Batch | None:
        batch = self._batch(index)
        return None if batch is None or batch is self._open else batch

    def _trim(self) -> None:
        """Forget the batches every subscriber has read."""
        first = min((s._batch for s in self._subscriptions), default=None)
        if first is None:
            first = self._base + len(self._log) - (1 if self._open is not None else 0)
        while self._log and self._base < first and self._log[0] is not self._open:
            self._log.popleft()
            self._base += 1


def coalesced(events: Sequence[Event]) -> bytes:
    """The events as one write: the token deltas of each turn joined into one
    delta (the same text, fewer frames) up to the next event that is not a
    delta, everything else as it came. Each turn's words stay in order; only
    different turns' deltas, which no reader orders against each other, may
    change places."""
    lines: list[bytes] = []
    runs: dict[tuple[str, int], list[TextDelta]] = {}

    def flush() -> None:
        for run in runs.values():
            if len(run) == 1:
                lines.append(encode(run[0]))
            else:
                text = "".join(d.text for d in run)
                lines.append(encode(run[0].model_copy(update={"text": text})))
        runs.clear()

    for event in events:
        if isinstance(event, TextDelta):
            runs.setdefault((event.agent, event.turn), []).append(event)
            continue
        flush()
        lines.append(pages.lines(event))  # a new day's snapshot, in parts when long
    flush()
    return b"".join(lines)
