"""The ceilings another plane of the fleet changed, read and shown here.

Each plane keeps the ceilings in memory. One that stores a change to any of
them (the operator's `/limit`, the fleet's, a group's, a raise from an
alert, an agent's own ask) NOTIFYs the fleet's channel with `ceilings` and
its name once the write committed (`plane.daemon.fleet.tell_ceilings`);
every other plane reads them again then (one read at a time, notices heard
meanwhile making one more) and wakes the agents it runs when any changed.
A lost notice costs nothing more than a renewal: each tick reads them
again (and, when any changed, wakes every agent it runs, once). Either read shows this
plane's clients what it found changed, as the plane where the operator
typed shows its own: the fleet's new ceiling in their fleet line
(`FleetChanged`), and the rows under each ceiling that changed — every
agent's for the fleet's, a group's agents' for its, an agent's own — built
again by the rows (`Rows.ceilings_changed`, as a `/limit fleet` typed here),
which show those that changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from plane.money.ceilings import Ceilings, Reread
from plane.store.engine import Database
from plane.wire.protocol import Event, FleetChanged

log = logging.getLogger(__name__)

CEILINGS = "ceilings"
"""The kind of the notice a plane sends when it stored a change to a
ceiling, followed by the plane's name: holding a space, it is never read as
an agent's wake."""


class CeilingsHeard:
    """This plane's ceilings, read again when another plane says it changed
    one (`heard`) and at each renewal (`read`), and what changed shown.

    Told at construction what to call: `wake` (an agent this plane runs,
    whose hold may have changed), `mine` (the agents it runs now), `show`
    (what changed, for the rows under it to be shown again:
    `Rows.ceilings_changed`) and `emit` (what this plane's clients are
    told: the fleet's new ceiling); `store`, the connection the ceilings
    are read through."""

    def __init__(
        self,
        plane: str,
        ceilings: Ceilings,
        *,
        wake: Callable[[str], None],
        mine: Callable[[], Collection[str]],
        show: Callable[[Reread], None],
        emit: Callable[[Event], None] | None = None,
        store: Callable[[], Database] | None = None,
    ) -> None:
        self._plane = plane
        self._ceilings = ceilings
        self._wake = wake
        self._mine = mine
        self._show = show
        self._emit = emit
        self._store = store
        """The store connection the ceilings are read through (None: the
        plane's own): the fleet's ticks' own, which no agent's read queues on.
        While a takeover's thousands of rows are shown again, the plane's
        reader is busy for seconds at a time; a ceiling another plane set
        still holds this plane's agents within a renewal."""
        self._reading = asyncio.Lock()
        """One read of the ceilings at a time (a tick's, or a notice's)."""
        self._stale = False
        """Another plane told of a change not read yet (`heard`)."""
        self._rereading: asyncio.Task[None] | None = None

    async def read(self) -> Reread:
        """The ceilings read again (another plane may have changed one), and
        this plane's clients shown what changed; what did. The agents it
        holds or frees are the caller's to wake: a tick every agent it runs
        when any changed, a notice's read those that changed (`_reread`)."""
        async with self._reading:
            reread = await self._ceilings.reload(None if self._store is None else self._store())
        if reread:
            self._tell_clients(reread)
        return reread

    def heard(self, payload: str) -> bool:
        """Whether `payload` is another plane's notice that it changed a
        ceiling: if so, the ceilings are read again now, in a task of their
        own; notices heard while one read runs make one more read, not one
        each. This plane's own is passed over: its memory already holds
        what it wrote."""
        kind, _, plane = payload.partition(" ")
        if kind != CEILINGS or not plane:
            return False
        if plane == self._plane:
            return True
        self._stale = True
        if self._rereading is None or self._rereading.done():
            self._rereading = asyncio.create_task(self._reread(), name="fleet:ceilings")
        return True

    async def aclose(self) -> None:
        """The read a notice started, if one runs, cancelled."""
        if self._rereading is not None:
            self._rereading.cancel()
            await asyncio.gather(self._rereading, return_exceptions=True)

    def _tell_clients(self, reread: Reread) -> None:
        """What another plane changed of the ceilings, shown here as there:
        the fleet's new ceiling in every client's fleet line, and the rows
        under each ceiling that changed shown again, those that changed."""
        if reread.fleet and self._emit is not None:
            self._emit(FleetChanged(limit_usd=self._ceilings.fleet()))
        self._show(reread)

    async def _reread(self) -> None:
        """The ceilings read again until no notice is left unread; when any
        changed, the agents this plane runs woken (one a raise frees runs,
        one a lowered ceiling holds is held at its next look). The store
        away: left to the next tick, which reads them again too."""
        while self._stale:
            self._stale = False
            try:
                reread = await self.read()
            except Exception as exc:
                log.debug("the ceilings another plane changed could not be read: %s", exc)
                return
            if reread:
                for agent in self._mine():
                    self._wake(agent)
