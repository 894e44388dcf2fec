"""Each agent's loop guard history, kept across restarts (`guard_history`):
without it a plane restarted in a loop (by systemd each time it is killed, a
crash loop, an operator) started every count afresh, and an agent whose
turns are booked could loop for ever at four calls a restart.

What a guard keeps changes with every call, so it is not written on its own:
the newest of each agent's is written at the end of the next transaction the
plane commits (`Database.finish_with`, as the ledger's day sums are), most
often the one that records the agent's next message or call. It is read once,
at start, and given to each agent's guard as its worker is made; a row no
plane wrote is left aside, said once in plane.log, and that agent's guard
starts afresh. Only on a store that is the plane's alone: where several
planes share one, an agent's plane changes with its lease, and this write,
outside the lease's fence, could land in an agent another plane runs now
(there each plane's guard counts afresh at its start, as before).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Collection
from datetime import datetime, timedelta
from sqlite3 import Connection

from plane.agents.guard import Guard
from plane.agents.guard_kept import Kept
from plane.errors import PlaneError
from plane.store.engine import Database

log = logging.getLogger(__name__)

RECENT = timedelta(days=1)
"""Histories older than this are not read: the longest `within_minutes`
(a day) starts the count afresh after it anyway."""

FLUSH_S = 5.0
"""How long a stopping plane waits for the histories not written yet."""

_KEEP = (
    "INSERT INTO guard_history (agent, history, at) VALUES (?, ?, ?)"
    " ON CONFLICT (agent) DO UPDATE SET history = excluded.history, at = excluded.at"
)
_DROP = "DELETE FROM guard_history WHERE agent = ?"


class GuardBook:
    """What each agent's guard keeps, on its way to the store and back. Its
    `write` and `forget` run on the database's writer thread; the rest on the
    event loop (what crosses, the pending histories, by one dict's atomic
    operations)."""

    def __init__(self, db: Database, *, shared: bool = False) -> None:
        self._db = db
        self.keeps = not shared
        """Whether histories are kept at all: not on a store several planes share,
        where an agent's plane changes with its lease, and a write outside the
        lease's fence could land in an agent another plane runs now. A guard
        is given nothing to keep with then (no history made a call for none)."""
        self._pending: dict[str, Kept | None] = {}
        """By agent, the newest history not yet written (None: to delete)."""
        self._taken: list[tuple[str, Kept | None]] = []
        """What the writer's last transaction took: put back if it failed."""
        self._read: dict[str, tuple[str, str]] = {}
        """What the start read, until each agent's guard is given it."""
        if self.keeps:
            db.finish_with(self)

    async def load(self, agents: Collection[str], now: datetime) -> None:
        """Read the recent histories of `agents` (an orphan's row waits, harmless)."""
        if not self.keeps:
            return
        since = (now - RECENT).isoformat()
        rows = await self._db.fetchall(
            "SELECT agent, history, at FROM guard_history WHERE at >= ?", since
        )
        names = set(agents)
        self._read = {
            row["agent"]: (row["at"], row["history"]) for row in rows if row["agent"] in names
        }

    def give_back(self, agent: str, guard: Guard) -> None:
        """Give `agent`'s guard what was kept of it, once (its worker is made)."""
        kept = self._read.pop(agent, None)
        if kept is None:
            return
        try:
            guard.take_back(kept)
        except ValueError as error:
            log.error(
                "guard_history row %s cannot be read (%s); it is left aside: its loop guard "
                "starts afresh", agent, error,
            )  # fmt: skip

    async def flush(self) -> None:
        """Write what is not written yet (the plane stops: no commit may come),
        within `FLUSH_S`: a store gone away does not hold the stop."""
        if not self._pending:
            return
        try:
            await asyncio.wait_for(self._db.write(_nothing), FLUSH_S)
        except (TimeoutError, sqlite3.Error, PlaneError) as error:
            log.warning("the loop guards' latest histories were not written (%r)", error)

    def keep(self, agent: str, kept: Kept | None) -> None:
        """`agent`'s guard keeps `kept` now (None: nothing): written with the next
        commit (a guard is given this only where histories are kept)."""
        self._pending[agent] = kept

    def moved(self, old: str, new: str) -> None:
        """In a rename's transaction (on the writer): what `old` had not written yet is `new`'s."""
        if old in self._pending:
            self._pending.setdefault(new, self._pending.pop(old, None))

    def dropped(self, agent: str) -> None:
        """In a delete's transaction (on the writer): what it had not written yet goes."""
        self._pending.pop(agent, None)

    # The last part of every transaction (`plane.store.engine.Finisher`).

    def write(self, conn: Connection) -> None:
        taken = self._taken
        taken.clear()
        pending = self._pending
        while pending:
            try:
                taken.append(pending.popitem())
            except KeyError:  # emptied by the loop meanwhile
                break
        if not taken:
            return
        kept = [(agent, k[1], k[0]) for agent, k in taken if k is not None]
        gone = [(agent,) for agent, k in taken if k is None]
        try:
            if kept:
                conn.executemany(_KEEP, kept)
            if gone:
                conn.executemany(_DROP, gone)
        except (sqlite3.Error, ValueError) as error:
            # Never the transaction's undoing: it carries the ledger's writes.
            # These histories are dropped (the next call keeps a newer one).
            log.error("the loop guards' histories were not kept (%r)", error)
            taken.clear()

    def forget(self) -> None:
        """The transaction did not commit: what it took is written with the next,
        unless a newer history came meanwhile."""
        for agent, kept in self._taken:
            self._pending.setdefault(agent, kept)
        self._taken.clear()


def _nothing(conn: Connection) -> None:
    """A transaction of the finishers' alone."""
