"""Each agent's loop guard history, kept across restarts (`guard_history`):
without it a plane restarted in a loop (by systemd each time it is killed, a
crash loop, an operator) started every count afresh, and an agent whose
turns are booked could loop for ever at four calls a restart.

What a guard keeps changes with every call, so it is not written on its own:
the newest of each agent's is written at the end of the next transaction the
plane commits (`Database.finish_with`, as the ledger's day sums are), most
often the one that records the agent's next message or call. On a store of
one plane it is read once, at start, and given to each agent's guard as its
worker is made; a row no plane wrote is left aside, said once in plane.log,
and that agent's guard starts afresh.

**Several planes on one store.** An agent's plane changes with its lease
(plane/daemon/fleet.py), and its guard's count goes with it: else an agent
looping across failovers got four more repeats a move. A history is kept
under the lease the guard's call was made under (its `Fence`), and written
only while that lease is still the plane's at that epoch, checked in the
same transaction by a read that locks the lease's row to the commit, as the
ledger's fenced writes do (plane/store/postgres.py): a plane that lost the
agent (stalled, cut off, taken over) cannot overwrite what its successor
keeps, and a takeover passes over the row until the write's commit
(plane/daemon/fleet.py). A history whose lease is another plane's now went
with it (the plane that took it read what was kept): one plain line in
plane.log, for a lost lease is no fault. The check never waits for a lease
row another transaction locked (`NOWAIT`): it ends a transaction that
carries the ledger's writes, and the row is locked by a tick renewing or
taking the lease (one taking it sweeps the agent's calls and reads its
history before it commits), which the ledger's transaction need not wait
out. The histories are written with the next commit instead, when the lease
says whether they are still this plane's. The plane that takes an agent
reads its history in the transaction that takes the lease (`within`), and
the agent's guard goes on from it before its next turn (`give_back`); an
agent with no history starts afresh there. A guard whose calls no lease
covers (a gateway agent's, made on whichever plane its client reached) is
not written by the commits' path: each of its calls steps from the fleet's
count instead (`step_shared`), so the same request sent through planes in
turn is held at the same count as through one
(tests/attack/test_planes_gateway_guard_shared.py).

**A gateway agent's count, shared.** Its client may call any plane (behind a
load balancer), and a count of each plane's own calls let it loop that many
times more. On a shared store each of its calls is seen in one transaction
of the plane's writer that locks its row (made first if there is none),
goes on from what is kept there, sees the call, and writes what the guard
keeps now: two planes' calls are counted one after the other, never both
from the same count. The lock is never waited for (`SKIP LOCKED`): the
writer's transaction carries the plane's ledger, which a stalled plane
holding the row would hold back; a row another plane holds is one of its
calls being counted at this moment, and calls at once are not counted, as
on one plane. A store that fails that transaction costs
the guard that one call (one line in plane.log), never the client its call.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from sqlite3 import Connection

from plane.agents.guard import Guard, Loop, Step
from plane.agents.guard_kept import Kept
from plane.config import GuardConfig
from plane.errors import PlaneError, StoreFault
from plane.store.engine import Database
from plane.store.fence import Fence

log = logging.getLogger(__name__)

RECENT = timedelta(days=1)
"""Histories older than this are not read at start: the longest
`within_minutes` (a day) starts the count afresh after it anyway."""

FLUSH_S = 5.0
"""How long a stopping plane waits for the histories not written yet."""

_KEEP = (
    "INSERT INTO guard_history (agent, history, at) VALUES (?, ?, ?)"
    " ON CONFLICT (agent) DO UPDATE SET history = excluded.history, at = excluded.at"
)
_DROP = "DELETE FROM guard_history WHERE agent = ?"

_OURS = (
    "SELECT leases.agent FROM leases"
    " JOIN unnest(?::text[], ?::text[], ?::bigint[]) AS fence (agent, plane, epoch)"
    " ON leases.agent = fence.agent AND leases.plane = fence.plane AND leases.epoch = fence.epoch"
    " FOR SHARE OF leases NOWAIT"
)
"""The agents whose leases are still the plane's at the epochs their guards'
calls were made under: locked to the commit, as `PostgresDatabase`'s fence
check locks them, so no takeover falls between this check and the
histories written. A row locked by another transaction is not waited for
(`LOCKED`)."""
LOCKED = "55P03"
"""PostgreSQL's SQLSTATE for a row lock not to be had at once (`NOWAIT`)."""
_READ = (
    "SELECT taken.agent, g.history, g.at, s.loop FROM unnest(?::text[]) AS taken (agent)"
    " LEFT JOIN guard_history g ON g.agent = taken.agent"
    " LEFT JOIN agent_settings s ON s.name = taken.agent"
)
"""Each agent's history and its loop hold, in one statement: one snapshot,
so a resume (which lifts the hold and deletes the history in one
transaction) is seen whole or not at all."""
_RESUMED = "DELETE FROM guard_history WHERE agent = ?"
_LOCK = "SELECT history, at FROM guard_history WHERE agent = ? FOR UPDATE SKIP LOCKED"
"""A gateway agent's row, locked to the commit; none if another transaction
holds it (another plane counting a call of its now): never waited for."""
_MAKE = (
    "INSERT INTO guard_history (agent, history, at) VALUES (?, '', '')"
    " ON CONFLICT (agent) DO NOTHING RETURNING agent"
)
"""A gateway agent's row made, locked by this transaction, before its first
call is counted: empty (nothing kept) only until its commit. Nothing
returned: the row was there, held by another transaction."""
_STEPPED = "UPDATE guard_history SET history = ?, at = ? WHERE agent = ?"

Pending = tuple[Kept | None, Fence | None]
"""A history not written yet (None: to delete), and the lease it is kept under."""


@dataclass(frozen=True)
class Taken:
    """An agent's lease just taken, as the store had it in that transaction."""

    kept: Kept | None
    """Its guard's history (None: none kept)."""
    loop: str | None
    """The loop guard's hold on it (`agent_settings.loop`; None: not held)."""


class GuardBook:
    """What each agent's guard keeps, on its way to the store and back. Its
    `write` and `forget` run on the database's writer thread, `within` on the
    fleet's; the rest on the event loop (what crosses, the pending histories,
    by one dict's atomic operations)."""

    def __init__(self, db: Database, *, shared: bool = False) -> None:
        self._db = db
        self.shared = shared
        """Several planes share the store: a history is written only under
        its agent's lease (see the module's docstring)."""
        self._pending: dict[str, Pending] = {}
        """By agent, the newest history not yet written (None: to delete)."""
        self._taken: list[tuple[str, Pending]] = []
        """What the writer's last transaction took: put back if it failed."""
        self._read: dict[str, tuple[str, str] | None] = {}
        """What was read (at start, or as the agent's lease was taken: None,
        nothing there), until each agent's guard is given it."""
        self._holds: dict[str, str | None] = {}
        """The loop guard's hold on each agent whose lease was taken, as read
        then, until its worker is given it with its history."""
        db.finish_with(self)

    def keeps(self, leased: bool) -> bool:
        """Whether the guard of an agent is to keep a history: on a shared
        store, only one whose calls run under a lease (`leased`)."""
        return leased or not self.shared

    async def load(self, agents: Collection[str], now: datetime) -> None:
        """Read the recent histories of `agents` (an orphan's row waits,
        harmless). On a shared store nothing: each is read as its lease is
        taken (`within`)."""
        if self.shared:
            return
        since = (now - RECENT).isoformat()
        rows = await self._db.fetchall(
            "SELECT agent, history, at FROM guard_history WHERE at >= ?", since
        )
        names = set(agents)
        self._read = {
            row["agent"]: (row["at"], row["history"]) for row in rows if row["agent"] in names
        }

    def within(self, conn: Connection, agents: Collection[str]) -> dict[str, Taken]:
        """The histories of `agents` and their holds, read in the transaction
        that takes their leases: what the planes before this one wrote under
        those leases, to the last commit."""
        if not agents:
            return {}
        found = dict.fromkeys(agents, Taken(None, None))
        for agent, history, at, loop in conn.execute(_READ, (list(agents),)).fetchall():
            found[agent] = Taken(None if history is None else (at, history), loop)
        return found

    def taken(self, taken: dict[str, Taken]) -> None:
        """Leases just taken, and what their agents' guards kept (`within`):
        given to each guard before its agent's next turn (`give_back`)."""
        for agent, each in taken.items():
            self._read[agent] = each.kept
            self._holds[agent] = each.loop

    def resumed(self, conn: Connection, agent: str) -> None:
        """In the transaction of a resume that lifts `agent`'s loop hold (on
        the writer): its history goes with the hold, whichever plane holds
        its lease, and what this plane had not written yet goes too."""
        conn.execute(_RESUMED, (agent,))
        self._pending.pop(agent, None)

    def give_back(self, agent: str, guard: Guard) -> Taken | None:
        """Give `agent`'s guard what was read of it, once: at start (its worker
        is made), and on a shared store as its lease was taken (before its
        next turn), when an agent with nothing kept starts afresh. Returns
        what was read as its lease was taken (None: at start, or nothing
        read since), for its worker to take its hold from."""
        if agent not in self._read:
            return None
        kept = self._read.pop(agent)
        taken = Taken(kept, self._holds.pop(agent)) if agent in self._holds else None
        if kept is None:
            guard.afresh()  # what it counted here before, another plane's since, is not its count
            return taken
        try:
            guard.take_back(kept)
        except ValueError as error:
            log.error(
                "guard_history row %s cannot be read (%s); it is left aside: its loop guard "
                "starts afresh", agent, error,
            )  # fmt: skip
        return taken

    async def step_shared(self, agent: str, settings: GuardConfig, step: Step) -> Loop | None:
        """On a shared store, a gateway agent's call (`step`) seen by its
        guard as the fleet counts it: the loop it completes, whichever plane
        saw the calls before (see the module's docstring). A store that fails
        it: logged in one line, and no loop (the call is charged already)."""
        try:
            return await self._db.write(lambda conn: _stepped(conn, agent, settings, step))
        except (sqlite3.Error, PlaneError) as error:
            log.warning("%s: its loop guard missed a call; the store failed (%s)", agent, error)
            return None

    async def flush(self) -> None:
        """Write what is not written yet (the plane stops: no commit may come),
        within `FLUSH_S`: a store gone away does not hold the stop."""
        if not self._pending:
            return
        try:
            await asyncio.wait_for(self._db.write(_nothing), FLUSH_S)
        except (TimeoutError, sqlite3.Error, PlaneError) as error:
            log.warning("the loop guards' latest histories were not written (%r)", error)

    def keep(self, agent: str, kept: Kept | None, fence: Fence | None = None) -> None:
        """`agent`'s guard keeps `kept` now (None: nothing), seen under `fence`
        (its agent's lease then): written with the next commit. On a shared
        store, one seen under no lease is not kept."""
        if fence is None and self.shared:
            return
        self._pending[agent] = (kept, fence)

    def moved(self, old: str, new: str) -> None:
        """In a rename's transaction (on the writer): what `old` had not written yet is `new`'s."""
        if old in self._pending:
            self._pending.setdefault(new, self._pending.pop(old, (None, None)))

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
        try:
            if self.shared:
                self._write_leased(conn, taken)
            else:
                _write(conn, taken)
        except (sqlite3.Error, ValueError) as error:
            # Never the transaction's undoing: it carries the ledger's writes.
            # These histories are dropped (the next call keeps a newer one).
            log.error("the loop guards' histories were not kept (%r)", error)
            taken.clear()

    def _write_leased(self, conn: Connection, taken: list[tuple[str, Pending]]) -> None:
        """`_write` on a shared store. A failed statement aborts a PostgreSQL
        transaction: this part alone is undone, so the ledger's writes before
        it still commit. A lease row locked elsewhere is no failure (`_locked`)."""
        conn.execute("SAVEPOINT guard_history")
        try:
            gone = _write(conn, taken)
        except BaseException as error:
            conn.execute("ROLLBACK TO SAVEPOINT guard_history")
            if not (isinstance(error, StoreFault) and error.sqlstate == LOCKED):
                raise
            self._locked(taken)
            return
        conn.execute("RELEASE SAVEPOINT guard_history")
        for agent in gone:  # its successor read what was kept as it took the lease
            log.info("%s's loop guard history went with its lease to another plane", agent)

    def _locked(self, taken: list[tuple[str, Pending]]) -> None:
        """A lease row was locked by another transaction (one taking or
        renewing it): nothing of `taken` was written. Written with the next
        commit (unless a newer history comes first), when the lease says
        whether each is still this plane's to write."""
        for agent, pending in taken:
            self._pending.setdefault(agent, pending)
        taken.clear()

    def forget(self) -> None:
        """The transaction did not commit: what it took is written with the next,
        unless a newer history came meanwhile."""
        for agent, kept in self._taken:
            self._pending.setdefault(agent, kept)
        self._taken.clear()


def _write(conn: Connection, taken: Iterable[tuple[str, Pending]]) -> list[str]:
    """The histories `taken`, each kept (or deleted) as it is pending: one
    kept under a lease only while that lease is still its plane's. Returns
    the agents whose histories were not, their leases another plane's."""
    taken = list(taken)
    fenced = [(agent, fence) for agent, (_, fence) in taken if fence is not None]
    ours: set[str] = set()
    if fenced:
        agents = [agent for agent, _ in fenced]
        planes = [fence.plane for _, fence in fenced]
        epochs = [fence.epoch for _, fence in fenced]
        ours = {row[0] for row in conn.execute(_OURS, (agents, planes, epochs)).fetchall()}
    keep: list[tuple[object, ...]] = []
    drop: list[tuple[object, ...]] = []
    gone: list[str] = []
    for agent, (kept, fence) in taken:
        if fence is not None and agent not in ours:
            gone.append(agent)
        elif kept is None:
            drop.append((agent,))
        else:
            keep.append((agent, kept[1], kept[0]))
    if keep:
        conn.executemany(_KEEP, keep)
    if drop:
        conn.executemany(_DROP, drop)
    return gone


def _stepped(conn: Connection, agent: str, settings: GuardConfig, step: Step) -> Loop | None:
    """`step` seen by a guard that goes on from `agent`'s row, locked to the
    commit (made if there is none), and what it keeps now written there. A
    guard of its own, made here: this may run twice, on the writer's thread."""
    guard = Guard(settings)
    row = conn.execute(_LOCK, (agent,)).fetchone()
    if row is None:
        if conn.execute(_MAKE, (agent,)).fetchone() is None:
            # Another plane counts a call of its at this moment: the two ran
            # at once, and calls at once are not counted (as on one plane).
            return None
        row = ("", "")
    if row[0]:
        try:
            guard.take_back((row[1], row[0]))
        except ValueError as error:
            log.error(
                "guard_history row %s cannot be read (%s); its loop guard starts afresh",
                agent, error,
            )  # fmt: skip
    loop = guard.step(step)
    kept = guard.kept()
    if kept is None:  # a guard turned off sees nothing
        conn.execute(_DROP, (agent,))
    else:
        conn.execute(_STEPPED, (kept[1], kept[0], agent))
    return loop


def _nothing(conn: Connection) -> None:
    """A transaction of the finishers' alone."""
