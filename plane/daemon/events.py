"""Fan-out of events to subscribed clients.

The plane never waits on a client: each subscriber has a bounded queue, and
one that falls that far behind is dropped (it resyncs from a fresh snapshot
when it reconnects) rather than slowing every agent down.
"""

from __future__ import annotations

import asyncio
import logging

from plane.wire.protocol import Event

log = logging.getLogger(__name__)

QUEUE_LIMIT = 10_000


class Subscription:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(QUEUE_LIMIT)
        self.dropped = False


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def emit(self, event: Event) -> None:
        for subscription in list(self._subscriptions):
            try:
                subscription.queue.put_nowait(event)
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
        while not subscription.queue.empty():
            subscription.queue.get_nowait()
        subscription.queue.put_nowait(None)
