"""Several planes on one PostgreSQL store: leases, the sweep, the wake, the clock.

**Leases.** Each agent's turns are run by one plane at a time, the holder of
its row in `leases`. Every `LEASE_S / 3` seconds each plane, in one
transaction: says it is alive (`planes`), renews its leases, and evens out
the fleet — it takes free or expired leases while it holds fewer than its
fair share (the agents over the planes alive, rounded up), and lets idle
agents go while it holds more. Taking a lease is a conditional upsert (only
where none is held or it has run out), so two planes never both take one.
A plane that dies stops renewing; LEASE_S later its agents are taken by the
others.

**The sweep.** The plane that takes an agent marks the agent's calls still
pending (a dead plane's calls in flight) interrupted, charged at their
estimates, and says so in the agent's conversation, in the same transaction
that takes the lease: no call is lost or counted twice. At start a plane
sweeps the agents it holds too (leases from its own previous life).

**The wake.** A message sent to any plane is stored (waiting) in the shared
conversation; the plane that took it NOTIFYs `plane_wake` with the agent's
name, and the owner, which LISTENs, wakes the agent's worker. A lost notice
loses nothing: each tick wakes every agent the plane holds, which answers
what waits.

**The clock is the database's.** Every time (the day, leases) is read from
the server's clock: each tick measures the offset between it and this
machine's, and `DatabaseClock` adds it. Planes on machines whose clocks
disagree still agree on the UTC day within a round trip; the day, kept in
`plane_day`, never goes back (see the ledger).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from sqlite3 import Connection
from typing import Any, cast

import psycopg

from plane.agents.services import Ownership
from plane.agents.worker import tell_cut_turns
from plane.history.conversation import Conversation
from plane.money.gate import Ceilings
from plane.money.ledger import Interrupted, Ledger
from plane.postgres import PostgresDatabase

log = logging.getLogger(__name__)

LEASE_S = float(os.environ.get("PLANE_LEASE_S", "15"))
"""How long a lease lasts unrenewed: how long a dead plane's agents wait."""

CHANNEL = "plane_wake"


def plane_name(home: str) -> str:
    """This plane's name in the fleet: PLANE_NAME, else host and home."""
    return os.environ.get("PLANE_NAME") or f"{socket.gethostname()}:{home}"


class DatabaseClock:
    """UTC as the database server reads it: this machine's clock, plus the
    offset last measured against the server's."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.fromtimestamp(time.time(), UTC) + self.offset

    async def sleep_until(self, when: datetime) -> None:
        while (left := (when - self.now()).total_seconds()) > 0:  # noqa: ASYNC110 - polls the clock itself
            await asyncio.sleep(min(left, 1.0))


@dataclass(frozen=True)
class Tick:
    now_ms: int
    mine: frozenset[str]
    gained: frozenset[str]
    owners: dict[str, str]
    cut: dict[str, Interrupted]


class Fleet:
    """This plane's part in the fleet: its leases, renewed; the wake, heard."""

    def __init__(
        self,
        db: PostgresDatabase,
        name: str,
        agents: Callable[[], list[str]],
        ledger: Ledger,
        ceilings: Ceilings,
        conversation: Conversation,
        ownership: Ownership,
        clock: DatabaseClock | None,
    ) -> None:
        self._db = db
        self.name = name
        self._agents = agents
        self._ledger = ledger
        self._ceilings = ceilings
        self._conversation = conversation
        self._ownership = ownership
        self._clock = clock
        self._lease_ms = int(LEASE_S * 1000)
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: psycopg.AsyncConnection[Any] | None = None
        self.wake: Callable[[str], None] = lambda agent: None
        self.idle: Callable[[str], bool] = lambda agent: True
        self.changed: Callable[[set[str]], object] = lambda agents: None
        """Agents whose owner changed, for their rows to be shown again."""
        ownership.plane = name
        ownership.mine = frozenset()
        ownership.notify = self._notify

    async def start(self) -> None:
        """The first tick (leases taken, their calls in flight swept) before
        any turn, then the ticks and the listener in the background."""
        await self.tick(first=True)
        self._listener = await psycopg.AsyncConnection.connect(self._db.url, autocommit=True)
        await self._listener.execute(f"LISTEN {CHANNEL}")
        self._tasks.append(asyncio.create_task(self._ticks(), name="fleet:leases"))
        self._tasks.append(asyncio.create_task(self._listen(), name="fleet:wake"))

    async def stop(self) -> None:
        """Stop renewing and let the leases go, so another plane takes the
        agents at once (their calls cut by the stop are swept by it)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._listener is not None:
            await self._listener.close()
        with contextlib.suppress(Exception):  # a store already gone: the leases run out instead
            await self._db.write(
                lambda conn: (
                    conn.execute("DELETE FROM leases WHERE plane = ?", (self.name,)),
                    conn.execute("DELETE FROM planes WHERE name = ?", (self.name,)),
                )
            )

    async def tick(self, *, first: bool = False) -> Tick:
        agents = sorted(self._agents())
        idle = {a for a in agents if self.idle(a)}
        sent = time.time()
        tick = await self._db.write(
            cast(
                "Callable[[Connection], Tick]",
                lambda conn: self._tick(conn, agents, idle, first),
            )
        )
        back = time.time()
        if self._clock is not None:  # the server's clock, read halfway through the round trip
            self._clock.offset = timedelta(milliseconds=tick.now_ms - (sent + back) * 500)
        before = dict(self._ownership.owners)
        if tick.mine != self._ownership.mine:
            self._ownership.changes += 1
        self._ownership.mine = tick.mine
        self._ownership.owners = tick.owners
        self._ledger.forget_sums()  # others' spend since the last tick, and the agents taken
        if tick.gained:
            log.info("%s took %s", self.name, ", ".join(sorted(tick.gained)))
        if tick.cut:
            calls = sum(c.calls for c in tick.cut.values())
            log.warning("%d calls were in flight on a plane that stopped; kept at estimate", calls)
        if await self._ceilings.reload():
            for agent in tick.mine:
                self.wake(agent)
        for agent in tick.mine:  # what waits for them (a notice lost) is answered
            self.wake(agent)
        moved = {a for a in set(before) | set(tick.owners) if before.get(a) != tick.owners.get(a)}
        if moved and not first:
            self.changed(moved)
        return tick

    def _tick(self, conn: Connection, agents: list[str], idle: set[str], first: bool) -> Tick:
        """One transaction: alive, renewed, evened out, swept."""
        me, lease = self.name, self._lease_ms
        (now,) = conn.execute(
            "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
        ).fetchone()
        now = int(now)
        conn.execute(
            "INSERT INTO planes (name, seen_ms) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET seen_ms = excluded.seen_ms",
            (me, now),
        )
        (live,) = conn.execute(
            "SELECT COUNT(*) FROM planes WHERE seen_ms > ?", (now - lease,)
        ).fetchone()
        mine = {
            row[0]
            for row in conn.execute(
                "UPDATE leases SET expires_ms = ? WHERE plane = ? RETURNING agent",
                (now + lease, me),
            ).fetchall()
        }
        share = math.ceil(len(agents) / max(int(live), 1))
        if len(mine) > share:
            for agent in sorted(mine & idle)[: len(mine) - share]:
                conn.execute("DELETE FROM leases WHERE plane = ? AND agent = ?", (me, agent))
                mine.discard(agent)
        gained: set[str] = set()
        if len(mine) < share:
            held = {
                agent: expires
                for agent, expires in conn.execute("SELECT agent, expires_ms FROM leases")
            }
            free = [a for a in agents if a not in mine and (a not in held or held[a] < now)]
            for agent in free[: share - len(mine)]:
                taken = conn.execute(
                    "INSERT INTO leases (agent, plane, expires_ms) VALUES (?, ?, ?)"
                    " ON CONFLICT (agent) DO UPDATE SET plane = excluded.plane,"
                    " expires_ms = excluded.expires_ms WHERE leases.expires_ms < ?",
                    (agent, me, now + lease, now),
                ).rowcount
                if taken == 1:
                    gained.add(agent)
                    mine.add(agent)
        owners = {
            agent: plane
            for agent, plane in conn.execute(
                "SELECT agent, plane FROM leases WHERE expires_ms > ?", (now,)
            )
        }
        tell = lambda tx, cut: tell_cut_turns(self._conversation, tx, cut)  # noqa: E731
        cut = self._ledger.sweep_within(conn, gained | (mine if first else set()), tell)
        # Calls no lease covers (a gateway agent's, made on whichever plane
        # its client reached): swept when the plane that opened them is dead,
        # or, at start, when it was this one in an earlier life.
        dead = [
            name
            for (name,) in conn.execute("SELECT name FROM planes WHERE seen_ms < ?", (now - lease,))
        ]
        for agent, more in self._ledger.sweep_within(
            conn, None, tell, planes=dead + ([me] if first else [])
        ).items():
            cut[agent] = cut.get(agent, Interrupted(0, Decimal(0))) + more
        conn.execute("DELETE FROM planes WHERE seen_ms < ?", (now - lease,))
        return Tick(now, frozenset(mine), frozenset(gained), owners, cut)

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                await self.tick()
            except Exception:  # the store is away: the leases run out; try again
                log.exception("renewing the leases failed")

    async def _listen(self) -> None:
        assert self._listener is not None
        async for notice in self._listener.notifies():
            if self._ownership.owns(notice.payload):
                self.wake(notice.payload)

    def _notify(self, agent: str) -> None:
        """Tell the agent's owner, wherever it runs, that it has work."""

        def send(conn: Connection) -> None:
            conn.execute("SELECT pg_notify(?, ?)", (CHANNEL, agent))

        task = asyncio.ensure_future(self._db.write(send))
        task.add_done_callback(_logged)


def _logged(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("telling the owner failed: %s", task.exception())
