"""What the other planes of a fleet said, told to this plane's clients.

A TUI attached to any plane sees the whole fleet: the lines another plane
writes into the shared conversations (an agent it runs answering a message
sent here, its cost line, its notices; a gateway call it metered) reach
this plane's clients at this plane's next renewal, and the rows of those
agents are shown again with them (their spend as of that renewal).

`Said` stands between the plane and its bus: it remembers the ids of the
messages told its clients, by this plane or by a look at the store, so none
is told twice. A line this plane writes is in the store before the plane
tells it: a look in between reads it, tells it first, and the plane's own
telling is then skipped.

**Ids are not commit order.** A line's id is given when it is written, and
its transaction may commit later (behind a wait for the fleet's row, say)
than one with a larger id, though never more than `WATCH_S` later (the
writer's transaction is cut then, and run again with new ids): each look
reads again from where the last look at least `LATE_S` ago ended, and skips
what it has already looked at, so such a line is still told, once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection

from plane.history.conversation import Conversation
from plane.store.postgres_links import WATCH_S
from plane.wire.protocol import Event, MessageAppended

BATCH = 1000
"""Lines read at a time."""

MOST_BATCHES = 10
"""At most this many batches are told a renewal; the rest at the next ones."""

LATE_S = WATCH_S + 2.0
"""How much later than a line with a larger id a line may commit."""


class Said:
    """The plane's `emit`: each event passed on to the bus, a message's only
    if it was not told already; the id of each message told kept until the
    next renewal has looked past it."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._bus_emit = emit
        self.ids: set[int] = set()

    def emit(self, event: Event) -> None:
        if isinstance(event, MessageAppended):
            if event.message.id in self.ids:
                return
            self.ids.add(event.message.id)
        self._bus_emit(event)


class Elsewhere:
    """The lines written into the shared store since the last renewal and
    not told here: told (`follow`), their agents' rows shown again. Only
    the agents this plane knows (`known`: one created on another plane from
    the keyboard is known here once this plane restarts)."""

    def __init__(
        self,
        conversation: Conversation,
        said: Said,
        known: Callable[[], Collection[str]],
    ) -> None:
        self._conversation = conversation
        self._said = said
        self._known = known
        self._last = 0
        self._ends: deque[tuple[float, int]] = deque()
        """When each look of the last `LATE_S` ended, and its last id."""
        self._seen: set[int] = set()
        """The ids past the oldest of those already looked at."""

    async def start(self) -> None:
        """From now on: what was written before, a client reads as history."""
        self._last = await self._conversation.last_id()
        self._ends.append((time.monotonic(), self._last))

    async def follow(self) -> set[str]:
        """Tell what was written since the looks before and not told yet;
        returns the agents whose rows are to be shown again."""
        known: set[str] = set(self._known())
        touched: set[str] = set()
        now = time.monotonic()
        while len(self._ends) > 1 and self._ends[1][0] <= now - LATE_S:
            self._ends.popleft()
        after = self._ends[0][1] if self._ends else self._last
        for _ in range(MOST_BATCHES):
            messages = await self._conversation.after(after, BATCH)
            for message in messages:
                if message.id in self._seen:
                    continue
                self._seen.add(message.id)
                if message.id in self._said.ids or message.agent not in known:
                    continue
                self._said.emit(MessageAppended(message=message))
                touched.add(message.agent)
            if messages:
                after = messages[-1].id
                self._last = max(self._last, after)
            if len(messages) < BATCH:
                break
        self._ends.append((now, self._last))
        oldest = self._ends[0][1]
        self._seen = {i for i in self._seen if i > oldest}
        self._said.ids = {i for i in self._said.ids if i > oldest}
        return touched
