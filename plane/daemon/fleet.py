"""Several planes on one PostgreSQL store: leases, the sweep, the wake, the clock.

**Leases.** Each agent's turns are run by one plane at a time, the holder of
its row in `leases`. Every `LEASE_S / 3` seconds each plane, in one
transaction, says it is alive (`planes`) and renews its leases; holding more
than its fair share (the agents over the planes alive, rounded up), it lets
idle agents go, in a short transaction of its own (`LET_GO`: its workers
asked whether they are idle one by one, only until enough are found, not
all 10,000 at every renewal; from the moment one is found idle, no turn
of its starts here: what comes for it waits for the plane that takes it);
then, in another, it evens out the fleet: it
takes free or expired leases while it holds fewer. Taking a lease is
conditional (only where none is held or it has run out, by the database's
clock, on a row locked first), so two planes never both take one. A plane
that dies stops renewing; LEASE_S later its agents are taken by the others.

**One plane stalled holds no other back.** A plane paused with a
transaction open keeps its rows locked until the server ends the session
(`BOUND_S`): its fenced writes' lease rows, the leases its tick was
taking. The renewal commits before any take, and a take passes over the
rows another transaction holds (`SKIP LOCKED`, taken at a later tick): a
healthy plane's tick never waits on a stalled one while it holds its own
renewed rows, which each of its own fenced writes locks — else its ledger
waited as long. A take that waits on nothing cannot deadlock with another
plane's either.

**Off the admission path.** The ticks run on a store connection of their
own (a second writer), so a renewal never queues behind this plane's calls
waiting for the fleet's row, and never holds that row itself.

**Fencing.** Every take of a lease moves its epoch (a lease of this plane's
that ran out unrenewed — the plane paused, or the store away — is taken
anew too, and its calls in flight swept). A turn runs under the epoch it
started with (`Ownership.fence`), and every write it makes carries it
(plane/store/fence.py, `FENCE`): once another plane has taken the agent, nothing of
the old turn is written, not even a notice. Between ticks, a plane stops
starting calls for its agents once a third of the lease is left since its
last renewal was sent (by its own monotonic clock, which a pause moves on),
before the lease can have run out by the database's; admission checks the
same in the database, in the statement that writes the call.

**The sweep.** The plane that takes an agent marks the agent's calls still
pending (a dead plane's calls in flight) interrupted, charged at their
estimates, and says so in the agent's conversation, in the same transaction
that takes the lease: no call is lost or counted twice. At start a plane
sweeps the agents it holds too (leases from its own previous life).

**The loop guards' count moves with the lease.** The transaction that
takes a lease reads the agent's guard history (plane/agents/guard_book.py),
which the planes before wrote only under their own leases: the agent's
guard goes on from it before its next turn here, so a loop spread across
failovers is held within the count it would be held at on one plane. The
same statement reads the guard's hold: an agent held stays held here, and
one the operator resumed (on any plane: the hold lifted and the history
deleted in one transaction) is taken with neither.

**The wake.** A message sent to any plane is stored (waiting) in the shared
conversation; the plane that took it NOTIFYs `plane_wake` with the agent's
name, and the owner, which LISTENs, wakes the agent's worker. A lost notice
loses nothing: each tick wakes every agent the plane holds that has
something to do, which answers what waits. Which ones is read for the whole
fleet at once (`work`: a message waiting, a booking due, a hold told, a
loop guard's hold to read again), with those whose calls the take swept and
those it took held: at a takeover of thousands of agents, the few with work
are woken, not every one to find nothing (most of its CPU). The rest stay
idle until a message or their booking wakes them, as on a plane that
started with them. A tick that finds a ceiling changed, or that cannot read
which ones, wakes every agent it holds, each to look for itself.

**Ceilings, told at once.** A plane that stores a change to a ceiling
NOTIFYs `plane_wake` with `ceilings` and its name (`tell_ceilings`); every
other plane reads them again then and at each tick, on the ticks' own
connection (the plane's reader may be busy for seconds showing a
takeover's rows), and shows its clients
what changed: the rows under a fleet's or a group's ceiling too, which may
say held now (plane/daemon/ceilings_heard.py).

**What the others said.** Each tick after the first tells this plane's
clients the lines other planes wrote since the last one, and shows those
agents' rows again (plane/daemon/elsewhere.py): a TUI on any plane sees the
whole fleet's conversations, as of this plane's last renewal. What waits
for each agent is read first, in one query, the same the wake was given
(read once a renewal), and the rows say that (or more, a message sent here
since): a turn's end (its answer, its questions
answered, its cost line) is one commit, so a row says its question answered
only once its lines are told, and `plane send --wait` through this plane
never ends before them (`Rows.told`). A row that says other than what waits
for its agent at a renewal is shown again too, lines or not: a turn that
failed unbilled writes its notice, then its end, with no line of its own,
answers the question; told before that end committed, its row said the
question waited, and the next renewal has no line of its to tell
(`Rows.behind`).

**A move's rows kept.** A renewal that moves thousands of agents' owners
(a takeover, a plane joining or leaving a large fleet) builds their rows
anew, kept until the fleet moves again: once shown, they are frozen out of
the cyclic collector's sight (`KEPT_MOVES`), as the start's are, so its
passes at the steady renewals after do not walk them each time.

**Gateway agents, on every plane.** A gateway agent has no lease: its
client calls any plane. Its floor-priced calls are marked, and its hold
(its loop guard's, a resume) read again, on every plane: at once by a
notice for a hold, at each tick in one query for both
(plane/daemon/gateway_agents.py).

**The clock is the database's.** Every time (the day, leases) is read from
the server's clock: each tick measures the offset between it and this
machine's, and `DatabaseClock` adds it. Planes on machines whose clocks
disagree still agree on the UTC day within a round trip; the day, kept in
`plane_day`, never goes back (see the ledger).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
import math
import os
import socket
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from sqlite3 import Connection
from typing import TYPE_CHECKING, Any, cast

import psycopg

from plane import collector
from plane.agents.after_turn import tell_cut_turns
from plane.agents.guard_book import GuardBook, Taken
from plane.agents.services import Ownership
from plane.daemon.ceilings_heard import CEILINGS, CeilingsHeard
from plane.daemon.elsewhere import Elsewhere
from plane.daemon.gateway_agents import GatewayAgents
from plane.history.conversation import Conversation
from plane.money.ceilings import Ceilings, Reread
from plane.money.ledger import Interrupted, Ledger
from plane.store.postgres import NOW_MS, PostgresDatabase
from plane.store.postgres_links import MOST_RETRY_S, listener, uncancelled
from plane.wire.protocol import Event
from plane.wire.words import some_names

if TYPE_CHECKING:
    from plane.agents.worker import AgentWorker

log = logging.getLogger(__name__)

LEASE_S = float(os.environ.get("PLANE_LEASE_S", "15"))
"""How long a lease lasts unrenewed: how long a dead plane's agents wait."""

CHANNEL = "plane_wake"

RELEASE_S = 2.0
"""How long a stopping plane waits for the store to let its leases go:
plenty for a store that answers; a dead link is not waited on (the leases
run out by themselves)."""

TAKEN = "UPDATE leases SET plane = ?2, expires_ms = ?1, epoch = epoch + 1 WHERE expires_ms < ?3"
"""A take of leases run out by `?3` (the database's clock), for `?2` until
`?1`: the epoch moves by one. Completed by which rows (`ANEW`, `EXPIRED`),
each locked first, so the take itself waits on none."""
ANEW = "SELECT agent FROM leases WHERE plane = ?2 AND expires_ms > 0 AND expires_ms < ?3 FOR UPDATE"
"""This plane's leases that ran out unrenewed (at start, with `?3` past
them all: those of its earlier life). At start it waits for their rows (a
take at a later tick would find them renewed, their calls unswept); later,
it passes over those locked (`SKIP LOCKED`), taken at the next tick."""
EXPIRED = (
    "SELECT agent FROM leases WHERE agent = ANY(?4) AND expires_ms < ?3 FOR UPDATE SKIP LOCKED"
)
"""Other planes' leases among `?4` that ran out, passing over the rows
another transaction holds: a stalled plane's, a write under its lease or a
tick of its open (taken at a later tick, once the server ended it)."""


def renewing(among: str = "") -> str:
    """`RENEWED`, of the leases `among` says (a condition added: none, all)."""
    mine = f"plane = ?2 AND expires_ms >= ?3{among}"
    return (
        "UPDATE leases SET expires_ms = ?1 WHERE ctid = ANY(ARRAY(SELECT ctid FROM leases"
        f" WHERE {mine} FOR UPDATE SKIP LOCKED)) AND {mine}"
    )


RENEWED = renewing()
"""`?2`'s leases still running at `?3`, renewed until `?1`: each row locked
and then written where it was found (its `ctid`), one pass over the
plane's rows, not a second to find them again by name; the condition is
checked again on the row as written, so a lease another plane took
meanwhile is never renewed. It passes over the
rows a transaction of this plane's own holds (a write's fence check locks
its agent's row to its commit): waiting on one while holding those already
renewed, the renewal and a write checking two agents could each wait for
the other (PostgreSQL ends one of them after a second). Those passed over
are renewed a moment later (`HELD_TRIES`)."""
RENEWAL = (
    f"WITH renewed AS ({RENEWED} RETURNING agent, epoch)"
    " SELECT mine.agent, mine.expires_ms, renewed.epoch FROM leases AS mine"
    " LEFT JOIN renewed ON renewed.agent = mine.agent WHERE mine.plane = ?2 AND mine.expires_ms > 0"
)
"""The renewal (`RENEWED`) and, in the same statement, every lease of
`?2`'s as it was before it: each with its epoch if renewed, without one if
passed over (running still) or run out. At 10,000 agents one pass over
the plane's rows, where three statements read them (one comparing each
row with the 10,000 names renewed)."""
HELD_TRIES = 8
"""How many times the leases a write of this plane's held are tried again,
a moment apart (5 ms, doubling); then waited for."""

KEPT_MOVES = 1000
"""How many agents' owners a renewal moves (a takeover, a plane joining or
leaving a large fleet) for the rows it built to be frozen out of the cyclic
collector's sight once shown (`collector.freeze`), as the start's are: the
collector's full passes otherwise walk them (at 5,000 agents a plane, ~90,000
objects, 42 CPU-ms), one every two or three steady ticks, each the longest a
tick holds the event loop. One full pass, once, at such a move; fewer moves
than that freeze nothing (their rows are few, and a pass over them short)."""

LEASES = "SELECT agent, plane, expires_ms FROM leases"
"""Every lease, read once a tick: the owners this plane shows (those still
running), and the agents free to take (`Fleet._free`). At 10,000 agents
one pass over the table, where two read it whole."""

LET_GO = (
    "UPDATE leases SET expires_ms = 0 WHERE plane = ?1 AND agent IN"
    " (SELECT agent FROM leases WHERE plane = ?1 AND agent = ANY(?2) FOR UPDATE SKIP LOCKED)"
    " RETURNING agent"
)
"""`?1`'s leases of the agents `?2` let go, the rows kept (their epochs go
on from where they are). It passes over the rows a write of this plane's
holds (as `RENEWED` does): that agent is not idle, and waiting on its row
while holding the others could wait on each other; let go at a later
renewal, if still a surplus."""

ADDED = (
    "INSERT INTO leases (agent, plane, expires_ms, epoch)"
    " SELECT added.agent, ?2, ?1, 1 FROM unnest(?3::text[]) AS added (agent)"
    " ON CONFLICT (agent) DO NOTHING RETURNING agent, epoch"
)
"""The leases of agents no plane held yet, taken by `?2` until `?1`."""


def moves(before: Mapping[str, str], owners: Mapping[str, str]) -> set[str]:
    """The agents whose owner differs between `before` and `owners`: none,
    at a steady renewal, found by one comparison of the two, not by looking
    at each of 10,000 agents on the event loop."""
    if before == owners:
        return set()
    return {a for a in before.keys() | owners.keys() if before.get(a) != owners.get(a)}


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
    epochs: dict[str, int]
    kept: dict[str, Taken]
    """The guard histories and holds of the agents gained."""


@dataclass(frozen=True)
class Renewal:
    """What a tick's first transaction left: committed before any lease is
    taken, so no wait of the take's (on a row another plane holds, up to a
    lock timeout) holds this plane's renewed rows, which each of its fenced
    writes locks (`FOR SHARE`, plane/store/postgres.py), for as long."""

    now_ms: int
    share: int
    """The agents over the planes alive, rounded up."""
    epochs: dict[str, int]
    """The leases renewed."""
    held: tuple[str, ...] = ()
    """Those passed over, a write of this plane's holding their rows: renewed
    in a moment (`Fleet._renew_held`)."""
    ran_out: int = 0
    """How many of its leases ran out unrenewed, to be taken anew (`ANEW`).
    None, and the take looks for none (a pass over the table saved each
    tick): those renewed or passed over run past `now_ms`, and only this
    plane makes a lease its own, until past `now_ms` too."""
    surplus: int = 0
    """How many leases it holds over its share: as many idle ones let go
    (`Fleet._let_go`)."""


def merged(older: Tick, newer: Tick) -> Tick:
    """`newer`, followed in `older`'s place too (`Fleet._followed_later`):
    the calls both swept, and the guard histories and holds both took
    (`newer`'s where both took an agent), so the agents either would have
    woken are woken (`Fleet._to_wake`)."""
    cut = dict(older.cut)
    for agent, more in newer.cut.items():
        cut[agent] = cut[agent] + more if agent in cut else more
    return dataclasses.replace(
        newer, gained=older.gained | newer.gained, cut=cut, kept={**older.kept, **newer.kept}
    )


def _ran_out(now: int, lease: int, first: bool) -> int:
    """Before when a lease of this plane's ran out, to be taken anew: at
    start, every one of them (those of its earlier life)."""
    return now + lease + 1 if first else now


def lease_margin_ms() -> int:
    """How much of its lease an agent's plane must still have, by the
    database's clock, for a call of the agent's to be admitted (the ledger's)."""
    return int(LEASE_S * 1000) // 3


class Fleet:
    """This plane's part in the fleet: its leases, renewed; the wake, heard.

    Told at construction what to call: `wake` (an agent has work), `idle`
    (whether an agent has nothing in flight, so its lease may go), `show`
    (the agents whose owners or lines changed, for their rows to be shown
    again at once, each with what waited for it before its lines were
    read: `Rows.told`),
    `behind` (the agents another plane runs whose rows shown say other than
    what waits for them at a renewal, shown again too: `Rows.behind`),
    `ceilings_changed` (the ceilings another plane changed, for the rows
    under them to be shown again: `Rows.ceilings_changed`) and `emit` (what
    this plane's clients are told: a fleet ceiling another plane set);
    `guards` is given the guard histories of the agents it takes; `work`
    reads which agents have something to do, given what waits for each,
    read once a renewal (`Crew.with_work`: None, every agent held is woken
    at each tick)."""

    def __init__(
        self,
        db: PostgresDatabase,
        agents: Callable[[], list[str]],
        ledger: Ledger,
        ceilings: Ceilings,
        conversation: Conversation,
        ownership: Ownership,
        clock: DatabaseClock | None,
        *,
        wake: Callable[[str], None] = lambda agent: None,
        told: Callable[[str], None] | None = None,
        heard: Callable[[str], bool] = lambda payload: False,
        idle: Callable[[str], bool] = lambda agent: True,
        show: Callable[[Mapping[str, int | None]], Awaitable[object]] | None = None,
        behind: Callable[[Mapping[str, int]], Collection[str]] = lambda waiting: (),
        ceilings_changed: Callable[[Reread], None] = lambda changed: None,
        emit: Callable[[Event], None] | None = None,
        elsewhere: Elsewhere | None = None,
        guards: GuardBook | None = None,
        workers: Mapping[str, AgentWorker] | None = None,
        work: Callable[[Mapping[str, int]], Awaitable[Collection[str]]] | None = None,
    ) -> None:
        assert ownership.plane is not None, "a plane in a fleet has a name"
        self._db = db
        self.name = ownership.plane
        self._agents = agents
        self._ledger = ledger
        self._ceilings = ceilings
        self._conversation = conversation
        self._ownership = ownership
        self._clock = clock
        self._lease_ms = int(LEASE_S * 1000)
        self._tasks: list[asyncio.Task[None]] = []
        self._leases: PostgresDatabase | None = None
        """The ticks' own store connection (None until `start`: the main one)."""
        self._listener: psycopg.AsyncConnection[Any] | None = None
        self.wake = wake
        self.told = told or wake
        """How an agent this plane runs is woken by another plane's notice
        (`tell_owner`): its settings read again, not only what waits."""
        self._heard = heard
        """Acts on a notice that is no wake (an interrupt's ask or answer:
        `plane.daemon.interrupts`), saying whether it was one."""
        self.idle = idle
        self._show = show
        self._behind = behind
        """The agents another plane runs whose rows shown say other than what
        waits for them at a renewal: shown again with it (`Rows.behind`)."""
        self._shows: set[asyncio.Task[None]] = set()
        self._following: asyncio.Task[None] | None = None
        """What follows the last renewals (`follow`), run beside the next ones."""
        self._to_follow: tuple[Tick, dict[str, str]] | None = None
        """A renewal's tick and the owners before it, waiting for `follow`."""
        """Rows being shown again, each a task of its own (a tick never waits on one)."""
        self._elsewhere = elsewhere
        """What the other planes said, told to this plane's clients at each tick."""
        self._guards = guards
        self._work = work
        """Which agents have something to do, read for the fleet at once: a
        tick wakes those it holds (`_to_wake`)."""
        self._gateway = (
            None
            if workers is None
            else GatewayAgents(
                db,
                workers,
                lambda agent: self.told(agent),
                runs_here=lambda agent: agent in (self._ownership.mine or ()),
            )
        )
        """The gateway agents' floors and holds, and the holds of the agents
        other planes run, as other planes left them."""
        self._ceilings_heard = CeilingsHeard(
            self.name,
            ceilings,
            wake=lambda agent: self.wake(agent),
            mine=lambda: self._ownership.mine or frozenset(),
            show=ceilings_changed,
            emit=emit,
            store=lambda: self._store,
        )
        self._listening = asyncio.Event()
        """Set once the first LISTEN is in place (`start` waits for it)."""

    async def start(self) -> None:
        """The ticks' own connection, the first tick (leases taken, their
        calls in flight swept) before any turn, then the ticks and the
        listener in the background. A first tick that fails closes that
        connection (its thread and its watchdog's) before its failure goes on."""
        self._leases = await PostgresDatabase.connect(self._db.url, migrate=False)
        try:
            if self._elsewhere is not None:
                await self._elsewhere.start()
            await self.tick(first=True)
        except BaseException:
            await self._leases.close()
            self._leases = None
            raise
        self._tasks.append(asyncio.create_task(self._ticks(), name="fleet:leases"))
        self._tasks.append(asyncio.create_task(self._listen(), name="fleet:wake"))
        # Started is listening: what another plane says from now on is heard
        # (an answer to an interrupt asked the moment the plane is up, say).
        # A listener that cannot open now is opened again by `_listen`, and
        # what is lost meanwhile the ticks cover.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LEASE_S):
                await self._listening.wait()

    async def stop(self) -> None:
        """Stop renewing and let the leases go, so another plane takes the
        agents at once (their calls cut by the stop are swept by it). A
        store that does not answer within `RELEASE_S` is not waited for:
        the leases run out by themselves within `LEASE_S`, and another
        plane takes them then."""
        tasks = [*self._tasks, *self._shows, *([self._following] if self._following else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._ceilings_heard.aclose()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        leases, self._leases = self._leases, None
        if leases is None:  # never started
            return
        released = leases.submit(self._release)
        await leases.close(RELEASE_S)
        if released.done() and not released.cancelled() and (failed := released.exception()):
            log.warning(
                "the leases were not let go (%s): they run out within %g s", failed, LEASE_S
            )

    def _release(self, conn: Connection) -> None:
        conn.execute("UPDATE leases SET expires_ms = 0 WHERE plane = ?", (self.name,))
        conn.execute("DELETE FROM planes WHERE name = ?", (self.name,))

    @property
    def _store(self) -> PostgresDatabase:
        return self._leases or self._db

    async def tick(self, *, first: bool = False) -> Tick:
        """A renewal and what follows it (`renew`, then `follow`), the second
        waited for too: the first tick, and a test's."""
        tick, before = await self.renew(first=first)
        await self.follow(tick, before, first=first)
        return tick

    async def renew(self, *, first: bool = False) -> tuple[Tick, dict[str, str]]:
        """The leases renewed and the fleet evened out, on the ticks' own
        connection, and the owners as they were before: all a lease needs,
        and nothing that reads through the plane's reader, which may be
        queued behind thousands of rows being shown (agents moved between
        planes), so the next renewal never waits on it."""
        agents = sorted(self._agents())
        sent, started = time.time(), time.monotonic()
        renewal = await self._store.write(
            cast(
                "Callable[[Connection], Renewal]",
                lambda conn: self._renew(conn, agents, first),
            )
        )
        back = time.time()
        if self._clock is not None:  # the server's clock, read halfway through the round trip
            self._clock.offset = timedelta(milliseconds=renewal.now_ms - (sent + back) * 500)
        mine = self._ownership.mine  # as the renewal found it (a let-go changes it)
        if renewal.surplus:
            renewal = await self._let_go(renewal)
        if renewal.held:
            renewal = await self._renew_held(renewal)
        tick = await self._store.write(
            cast(
                "Callable[[Connection], Tick]",
                lambda conn: self._take(conn, agents, renewal, first),
            )
        )
        before = dict(self._ownership.owners)
        if tick.mine != mine:
            self._ownership.changes += 1
        # Renewed when sent at the latest: calls stop with a third of it left.
        # and calls in flight are cut with a sixth left, before the lease can
        # have run out by the database's (it is renewed from when it commits).
        self._ownership.renewed(
            tick.mine, tick.epochs, started + LEASE_S * 2 / 3, started + LEASE_S * 5 / 6
        )
        self._ownership.owners = tick.owners
        if self._guards is not None:
            self._guards.taken(tick.kept)  # before the agents gained are woken
        self._ledger.forget_sums()  # others' spend since the last tick, and the agents taken
        if tick.gained:
            log.info("%s took %s", self.name, some_names(sorted(tick.gained)))
        if tick.cut:
            calls = sum(c.calls for c in tick.cut.values())
            log.warning(
                "%s in flight on a plane that stopped; kept at estimate",
                "1 call was" if calls == 1 else f"{calls} calls were",
            )
        return tick, before

    async def follow(self, tick: Tick, before: dict[str, str], *, first: bool = False) -> None:
        """What follows a renewal: the ceilings read again, the agents held
        that have something to do woken (what waits for them is answered: a
        notice lost), what the other planes said, the rows of the agents
        that moved shown again, and the closes the store refused written.
        `before`: the owners as they were before the renewal."""
        changed = await self._ceilings_heard.read()  # the agents it holds or frees woken below
        everyone = first or bool(changed)
        waiting = await self._waiting(everyone=everyone, first=first)  # the wake's and the rows'
        for agent in await self._to_wake(tick, waiting, everyone=everyone):
            self.wake(agent)  # what waits for them (a notice lost) is answered
        moved = moves(before, tick.owners)
        many = len(moved) >= KEPT_MOVES  # their rows frozen once shown (`_shown`)
        if not first:
            if self._gateway is not None:
                await self._gateway.holds()
            waiting, elsewhere = await self._followed(waiting)
            if self._gateway is not None:
                await self._gateway.floors(elsewhere, self._ledger.day())
            moved |= elsewhere
            if waiting is not None:  # a turn's end told before it committed
                moved |= set(self._behind(waiting))
            if moved:
                self._changed(moved, waiting, kept=many)
        # The store answered: the closes it refused while it was away are written now.
        if written := await self._ledger.stranded.write():
            log.info("%d calls closed at their cost now that the store is back", written)

    async def _waiting(self, *, everyone: bool, first: bool) -> dict[str, int] | None:
        """What waits for each agent, read once a renewal for both that need
        it: the wake (`_to_wake`, unless it wakes everyone) and the rows of
        what the other planes said (`_followed`, after the first tick). Read
        before those lines, as the rows need (`_followed`). None: not needed,
        or not read (the store away, say: each agent looks for itself, and
        no line is told until the next renewal)."""
        wake = not everyone and self._work is not None
        rows = not first and self._elsewhere is not None
        if not (wake or rows):
            return None
        try:
            return await self._conversation.waiting_counts()
        except Exception as exc:  # each looks for itself; the lines told at the next tick
            log.debug("what waits for each agent could not be read: %s", exc)
            return None

    async def _to_wake(
        self, tick: Tick, waiting: Mapping[str, int] | None, *, everyone: bool
    ) -> Collection[str]:
        """The agents a renewal wakes: of those it holds, the ones with
        something to do (`work`, read once for all, given what waits for
        each: `waiting`, None when it could not be read), those whose calls in
        flight the take swept, and those it took held by the loop guard
        (their looks give them their holds); the rest have nothing a look
        would find, and stay idle until a message or a booking wakes them.
        `everyone`: each agent held (the first tick, before any worker; a
        ceiling changed, which may hold or free any of them). When which
        ones cannot be read (the store away, say), each looks for itself."""
        if everyone or self._work is None or waiting is None:
            return tick.mine
        try:
            work = set(await self._work(waiting))
        except Exception as exc:  # each looks for itself, as it would at a notice
            log.debug("which agents have work could not be read: %s", exc)
            return tick.mine
        held = {agent for agent, taken in tick.kept.items() if taken.loop is not None}
        return tick.mine & (work | tick.cut.keys() | held)

    def _followed_later(self, tick: Tick, before: dict[str, str]) -> None:
        """`follow` in a task of its own, one at a time: a renewal that
        comes while one runs leaves its tick to follow next, merged with any
        other waiting (the newest tick, the owners before the oldest: every
        move shown once), and with the agents the older one swept or took
        held (`merged`): each is woken as its own renewal would have."""
        if self._to_follow is not None:
            older, before = self._to_follow
            tick = merged(older, tick)
        self._to_follow = (tick, before)
        if self._following is None or self._following.done():
            self._following = asyncio.create_task(self._follow_all(), name="fleet:follow")

    async def _follow_all(self) -> None:
        while self._to_follow is not None:
            tick, before = self._to_follow
            self._to_follow = None
            try:
                await self.follow(tick, before)
            except Exception as exc:  # the store away, say: the next renewal's follows
                log.warning("reading what changed at a renewal failed: %s", exc)

    async def _followed(
        self, waiting: dict[str, int] | None
    ) -> tuple[dict[str, int] | None, set[str]]:
        """What the other planes said since the last tick, told to this
        plane's clients, given what waits for each agent, read before
        (`_waiting`): the counts (None: not read, nor the lines) and the
        agents whose rows are to be shown again. Read in that order, a count
        says a question answered only if the lines that answered it are
        among those told."""
        if self._elsewhere is None or waiting is None:
            return None, set()  # nothing read: no count says anything
        try:
            return waiting, await self._elsewhere.follow()
        except Exception as exc:  # the store away, say: told at the next tick
            log.debug("what the other planes said could not be read: %s", exc)
            return None, set()

    def _changed(
        self, agents: set[str], waiting: dict[str, int] | None, *, kept: bool = False
    ) -> None:
        """Rows whose owner or lines changed, shown again (those of the
        agents this plane knows), each with what waited for it before the
        lines were read (`waiting`; None: not read): all of them at once, in
        a task of their own (a tick never waits on it), so a takeover of
        thousands of agents costs a few reads, not a few a row. `kept`:
        thousands of owners moved, and the rows built for them are kept
        until the next such move: frozen out of the collector's sight once
        shown (`KEPT_MOVES`)."""
        if self._show is None:
            return
        counted = {
            agent: None if waiting is None else waiting.get(agent, 0) for agent in sorted(agents)
        }
        task = asyncio.create_task(self._shown(self._show, counted, kept), name="fleet:show")
        self._shows.add(task)
        task.add_done_callback(self._shows.discard)

    @staticmethod
    async def _shown(
        show: Callable[[Mapping[str, int | None]], Awaitable[object]],
        waiting: Mapping[str, int | None],
        kept: bool,
    ) -> None:
        try:
            await show(waiting)
        except Exception as exc:  # the store away, say: the next change shows them
            log.debug("the rows of %s could not be shown again: %s", some_names(list(waiting)), exc)
            return
        if kept:
            collector.freeze()

    def _renew(self, conn: Connection, agents: list[str], first: bool) -> Renewal:
        """The renewal's transaction: alive, this plane's leases renewed,
        its surplus counted (let go by `_let_go`). It locks no row but this
        plane's, and waits on none another plane may hold (`Renewal`)."""
        me, lease = self.name, self._lease_ms
        (now,) = conn.execute(f"SELECT {NOW_MS}").fetchone()
        now = int(now)
        conn.execute(
            "INSERT INTO planes (name, seen_ms) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET seen_ms = excluded.seen_ms",
            (me, now),
        )
        (live,) = conn.execute(
            "SELECT COUNT(*) FROM planes WHERE seen_ms > ?", (now - lease,)
        ).fetchone()
        ran_out = _ran_out(now, lease, first)
        epochs: dict[str, int] = {}
        held: list[str] = []
        anew = 0  # those that ran out, taken anew (`_take`): they count as this plane's
        for agent, expires, epoch in conn.execute(RENEWAL, (now + lease, me, ran_out)).fetchall():
            if epoch is not None:
                epochs[agent] = int(epoch)
            elif int(expires) >= ran_out:
                held.append(agent)
            else:
                anew += 1
        share = math.ceil(len(agents) / max(int(live), 1))
        surplus = max(len(epochs) + len(held) + anew - share, 0)
        return Renewal(now, share, epochs, tuple(sorted(held)), ran_out=anew, surplus=surplus)

    async def _let_go(self, renewal: Renewal) -> Renewal:
        """The plane's surplus let go: the first of its leases renewed, in
        the agents' order, whose workers are idle, each worker asked only
        until there are enough (at 10,000 agents, a renewal asks none of
        them unless the plane holds more than its share). Asked here, on the
        event loop, after the renewal committed: a transaction's function
        does only SQL. Those found idle are no longer run here from that
        moment (`Ownership.owns`): a message sent to one as its lease goes
        waits for the plane that takes it, where a turn started here would
        have its call in flight as that plane swept it and answered again.
        Those whose rows a write held are run here again, and look."""
        idle = (agent for agent in sorted(renewal.epochs) if self.idle(agent))
        if not (going := list(itertools.islice(idle, renewal.surplus))):
            return renewal
        ownership, let_go = self._ownership, set[str]()
        ownership.mine = (ownership.mine or frozenset()).difference(going)
        try:
            gone = await self._store.write(
                cast(
                    "Callable[[Connection], list[tuple[str]]]",
                    lambda conn: conn.execute(LET_GO, (self.name, going)).fetchall(),
                )
            )
            let_go = {agent for (agent,) in gone}
        finally:
            kept = set(going) - let_go
            ownership.mine = (ownership.mine or frozenset()) | kept
            for agent in sorted(kept):
                self.wake(agent)  # what came while it was going is looked at
        epochs = {agent: e for agent, e in renewal.epochs.items() if agent not in let_go}
        return dataclasses.replace(renewal, epochs=epochs, surplus=0)

    async def _renew_held(self, renewal: Renewal) -> Renewal:
        """The leases a write of this plane's held as they were renewed,
        renewed now: tried again a moment apart, each try its own short
        transaction that waits on no row; after `HELD_TRIES`, waited for."""
        me, until, held = self.name, renewal.now_ms + self._lease_ms, list(renewal.held)
        epochs = dict(renewal.epochs)

        def renew(conn: Connection, waiting: bool) -> list[tuple[str, int]]:
            sql = (
                "UPDATE leases SET expires_ms = ?1 WHERE plane = ?2 AND expires_ms >= ?3"
                " AND agent = ANY(?4)"
                if waiting
                else renewing(" AND agent = ANY(?4)")  # those rows alone locked
            )
            rows = conn.execute(
                f"{sql} RETURNING agent, epoch",
                (until, me, renewal.now_ms, held),
            ).fetchall()
            return [(agent, int(epoch)) for agent, epoch in rows]

        for attempt in range(HELD_TRIES + 1):
            await asyncio.sleep(0.005 * 2**attempt if attempt < HELD_TRIES else 0)
            waiting = attempt == HELD_TRIES
            renewed = await self._store.write(
                cast(
                    "Callable[[Connection], list[tuple[str, int]]]",
                    lambda conn, waiting=waiting: renew(conn, waiting),
                )
            )
            epochs.update(renewed)
            held = [agent for agent in held if agent not in epochs]
            if not held:
                break
        return Renewal(renewal.now_ms, renewal.share, epochs, ran_out=renewal.ran_out)

    def _take(self, conn: Connection, agents: list[str], renewal: Renewal, first: bool) -> Tick:
        """The take's transaction: evened out, swept. Rows another
        transaction holds are passed over (taken at a later tick), but at
        start, this plane's own from an earlier life (`ANEW`)."""
        me, lease, now = self.name, self._lease_ms, renewal.now_ms
        anew = ANEW if first else f"{ANEW} SKIP LOCKED"
        # A lease of mine that ran out unrenewed (or, at start, one from an
        # earlier life) is taken anew: a new epoch, its calls in flight swept.
        # The renewal found none: none is looked for (a pass over the table).
        gained = (
            {
                agent: int(epoch)
                for agent, epoch in conn.execute(
                    f"{TAKEN} AND plane = ?2 AND expires_ms > 0 AND agent IN ({anew})"
                    " RETURNING agent, epoch",
                    (now + lease, me, _ran_out(now, lease, first)),
                ).fetchall()
            }
            if first or renewal.ran_out
            else {}
        )
        epochs = {**renewal.epochs, **gained}
        # Every lease, read once: the owners, and which agents are free.
        leases = {agent: (plane, int(expires)) for agent, plane, expires in conn.execute(LEASES)}
        if len(epochs) < renewal.share:
            others = [a for a in agents if a not in epochs]
            for agent, epoch in self._free(conn, others, leases, now, renewal.share - len(epochs)):
                gained[agent] = epochs[agent] = int(epoch)
        owners = {agent: plane for agent, (plane, expires) in leases.items() if expires > now}
        owners.update(dict.fromkeys(gained, me))  # those taken since the read
        tell = lambda tx, cut: tell_cut_turns(self._conversation, tx, cut)  # noqa: E731
        cut = self._ledger.sweep_within(conn, gained, tell)
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
        kept = {} if self._guards is None else self._guards.within(conn, gained)
        return Tick(now, frozenset(epochs), frozenset(gained), owners, cut, epochs, kept)

    def _free(
        self,
        conn: Connection,
        agents: list[str],
        leases: Mapping[str, tuple[str, int]],
        now: int,
        want: int,
    ) -> list[tuple[str, int]]:
        """Up to `want` of `agents` whose leases are free or ran out, in
        their order, taken: each agent with its new epoch. `leases`: every
        lease as the tick read it (its plane, when it runs out); each take
        checks its row again, locked, so one read since is never taken twice."""
        free = [a for a in agents if a not in leases or leases[a][1] < now][:want]
        until = now + self._lease_ms
        taken: list[tuple[str, int]] = []
        if added := [a for a in free if a not in leases]:
            taken += conn.execute(ADDED, (until, self.name, added)).fetchall()
        if expired := [a for a in free if a in leases]:
            taken += conn.execute(
                f"{TAKEN} AND agent IN ({EXPIRED}) RETURNING agent, epoch",
                (until, self.name, now, expired),
            ).fetchall()
        return taken

    async def _ticks(self) -> None:
        """A tick every third of a lease; while the store is away, tried
        again sooner (the plane carries on within seconds of its return),
        with the main store's writer reopened too."""
        failing = False
        while True:
            await asyncio.sleep(min(LEASE_S / 3, MOST_RETRY_S) if failing else LEASE_S / 3)
            try:
                self._followed_later(*await self.renew())
                failing = False
            except Exception as exc:  # the store is away: the leases run out; try again
                if not failing:
                    log.warning("renewing the leases failed: %s", exc)
                failing = True
            if self._db.unreachable_since is not None:
                with contextlib.suppress(Exception):
                    await self._db.ping()

    async def _listen(self) -> None:
        """LISTEN, on a connection opened again whenever it breaks; a
        notice lost meanwhile costs nothing (each tick wakes every agent
        with work)."""
        while True:
            try:
                self._listener = await listener(self._db.url)
                await uncancelled(self._listener, self._listener.execute(f"LISTEN {CHANNEL}"))
                self._listening.set()
                while True:
                    async for notice in self._listener.notifies(timeout=LEASE_S):
                        payload = notice.payload
                        if self._ceilings_heard.heard(payload) or self._heard(payload):
                            continue
                        gateway = self._gateway is not None and self._gateway.includes(payload)
                        if gateway or self._ownership.owns(payload):
                            self.told(payload)
                    await self._alive(self._listener)
            except (psycopg.Error, OSError, TimeoutError) as exc:
                log.debug("the wake's connection broke: %s", exc)
                if self._listener is not None:
                    with contextlib.suppress(Exception):
                        await self._listener.close()
                await asyncio.sleep(MOST_RETRY_S)

    @staticmethod
    async def _alive(conn: psycopg.AsyncConnection[Any]) -> None:
        """A link that stopped forwarding answers no query: found out here
        within a lease, and opened again."""
        async with asyncio.timeout(LEASE_S):
            await uncancelled(conn, conn.execute("SELECT 1"))


def notice(payload: str, conn: Connection) -> None:
    """A write function: `payload` told to every plane listening on the
    fleet's channel, once the transaction commits."""
    conn.execute("SELECT pg_notify(?, ?)", (CHANNEL, payload))


def tell_owner(db: PostgresDatabase, agent: str) -> None:
    """Tell the agent's owner, wherever it runs, that it has work
    (`Ownership.notify`, with the plane's store)."""
    _send_notice(db, agent, "telling the owner")


def tell_ceilings(db: PostgresDatabase, plane: str) -> None:
    """Tell the other planes that `plane` stored a change to a ceiling
    (`Ceilings(tell=…)`, with the plane's store and name): they read the
    ceilings again at once. Called once the change's write committed, so
    what they read holds it."""
    _send_notice(db, f"{CEILINGS} {plane}", "telling the other planes of a ceiling")


def _send_notice(db: PostgresDatabase, payload: str, what: str) -> None:
    """`notice` written without being waited for; `what` is said if it fails."""
    task = asyncio.ensure_future(db.write(functools.partial(notice, payload)))
    task.add_done_callback(functools.partial(_logged, what))


def _logged(what: str, task: asyncio.Future[None]) -> None:
    """A notice that could not be sent, said (its next tick covers for it)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("%s failed: %s", what, task.exception())
