"""Fan-out of events to subscribed clients.

The plane never waits on a client: each subscriber has a bounded queue, and
one that falls that far behind is dropped (it resyncs from a fresh snapshot
when it reconnects) rather than slowing every agent down.

An event is encoded once, however many subscribers send it (`Published.line`),
and a subscriber that is behind gets what waits for it in one write, its
runs of token deltas joined (`coalesced`): a slow reader costs fewer writes,
not more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from plane.wire.protocol import Event, TextDelta, encode

log = logging.getLogger(__name__)

QUEUE_LIMIT = 10_000


@dataclass(eq=False)
class Published:
    """One event as every subscriber gets it."""

    event: Event

    @cached_property
    def line(self) -> bytes:
        return encode(self.event)


class Subscription:
    """What a subscriber reads: `next()` (the event) or `next_published()`
    (with its encoding); the queue itself is the bus's."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Published | None] = asyncio.Queue(QUEUE_LIMIT)
        self.dropped = False

    async def next(self) -> Event | None:
        """The next event; None once the subscription has ended."""
        published = await self._queue.get()
        return None if published is None else published.event

    async def next_published(self) -> Published | None:
        return await self._queue.get()

    def waiting(self) -> tuple[list[Published], bool]:
        """What is already queued, without waiting; and whether the end mark was among it."""
        taken: list[Published] = []
        while not self._queue.empty():
            published = self._queue.get_nowait()
            if published is None:
                return taken, True
            taken.append(published)
        return taken, False


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def backlog(self) -> int:
        """Events waiting for the slowest subscriber."""
        return max((s._queue.qsize() for s in self._subscriptions), default=0)

    def emit(self, event: Event) -> None:
        published = Published(event)
        for subscription in list(self._subscriptions):
            try:
                subscription._queue.put_nowait(published)
            except asyncio.QueueFull:
                log.warning("dropping a subscriber %d events behind", QUEUE_LIMIT)
                self._drop(subscription)

    def close(self) -> None:
        for subscription in list(self._subscriptions):
            self._drop(subscription)

    def _drop(self, subscription: Subscription) -> None:
        """Empty its queue and leave the end-of-stream mark (None) for its writer."""
        self._subscriptions.discard(subscription)
        subscription.dropped = True
        while not subscription._queue.empty():
            subscription._queue.get_nowait()
        subscription._queue.put_nowait(None)


def coalesced(batch: Iterable[Published]) -> bytes:
    """The batch as one write: each run of one turn's token deltas as one
    delta (the same text, fewer frames), everything else as it came."""
    lines: list[bytes] = []
    run: list[TextDelta] = []

    def flush() -> None:
        if len(run) == 1:
            lines.append(encode(run[0]))
        elif run:
            lines.append(encode(run[0].model_copy(update={"text": "".join(d.text for d in run)})))
        run.clear()

    for published in batch:
        event = published.event
        if isinstance(event, TextDelta):
            if run and (run[0].agent, run[0].turn) != (event.agent, event.turn):
                flush()
            run.append(event)
            continue
        flush()
        lines.append(published.line)
    flush()
    return b"".join(lines)
