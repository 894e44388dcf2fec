"""Connections that have not yet said who they are: few, and not for long.

A listener lets a connection in before it can know whose it is (the token's
hello on the socket, a key in the headers on HTTP). Until it knows, the
connection is a stranger's, and a stranger must cost next to nothing: at most
`most` such connections are held at once, each for at most `within_s`
seconds. Over the cap, the oldest stranger is closed to make room — a real
client says who it is within a round trip of connecting, so the newcomer is
far likelier to be one than a connection that has sat silent — and a
stranger still unknown at its deadline is closed. Once a connection is known
it leaves the door and no deadline of the door's applies to it again (a
TUI's subscription is silent for hours).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable


class Door:
    def __init__(self, most: int, within_s: float) -> None:
        if most < 1 or within_s <= 0:
            raise ValueError("a door holds at least one stranger, for some time")
        self.most = most
        self.within_s = within_s
        self._strangers: dict[Hashable, tuple[asyncio.TimerHandle, Callable[[], None]]] = {}
        """Oldest first (dicts keep their insertion order): each with its deadline
        and how to close it."""
        self.turned_away = 0
        """Strangers closed, at their deadline or to make room: the attack tests' figure."""

    def __len__(self) -> int:
        return len(self._strangers)

    def __contains__(self, connection: Hashable) -> bool:
        return connection in self._strangers

    def arrived(self, connection: Hashable, close: Callable[[], None]) -> None:
        """A new connection, not yet known; `close` ends it (it must not raise)."""
        while len(self._strangers) >= self.most:
            self._turn_away(next(iter(self._strangers)))
        deadline = asyncio.get_running_loop().call_later(self.within_s, self._turn_away, connection)
        self._strangers[connection] = (deadline, close)

    def known(self, connection: Hashable) -> None:
        """It said who it is (or it left): the door forgets it."""
        held = self._strangers.pop(connection, None)
        if held is not None:
            held[0].cancel()

    left = known

    def _turn_away(self, connection: Hashable) -> None:
        held = self._strangers.pop(connection, None)
        if held is None:
            return
        deadline, close = held
        deadline.cancel()
        self.turned_away += 1
        close()
