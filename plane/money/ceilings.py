"""Each agent's effective ceiling, the fleet's and the groups': the file's
values, the operator's and the agents' own asks (the gate asks them,
`plane.money.gate`).

The effective ceiling is the tighter of two values, kept apart:

- the **base**: the operator's value, set from the keyboard and kept in the
  `ceilings` table, when there is one — including "off", which stays off —
  and otherwise the file's (the agent's own block, else `defaults.limitUsd`);
- the agent's own **ask** (`asks` table), which can only tighten: it is
  applied only when it is at or under the effective ceiling, and it never
  replaces the base, so a later, tighter agents.yaml still binds.

An operator's tighter value **binds at once** (`binding`): from the moment
the request is read, before its write is stored behind the agents' traffic,
the gate holds to it; a looser one waits for its write, so nothing is spent
under a value the store does not have.

Only the operator overrides the file, and an operator's value clears the
agent's ask: the operator decided, with the ask in front of them.

A **raise** from an alert's link (`plane.daemon.approvals`) is the operator's
too, for the rest of the day: it stands in for the base until `ends_at`
(00:00 UTC), kept in `raises`, and then the base it stood in for binds again
by itself — nothing has to run at midnight for the raise to end. It clears
the ask as the operator's value does; the operator's next `/limit` ends it.

Every plane sharing the store keeps the ceilings in memory: once a change
here is stored, the others are **told** (`tell`, the fleet's notice) and
read them again at once, not at their next renewal; a read says what it
found changed (`Reread`), for the clients of those planes to be shown it.
A read never takes back a change made here while it read: the operator's
and the agents' changes and the reads take turns (`_turns`), and a rename
or a delete that lands during a read has the read made again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from sqlite3 import Connection
from typing import Literal, NamedTuple, TypeVar

from plane.clock import Clock
from plane.money.groups import Groups
from plane.money.limits import is_tighter
from plane.money.stored import amount, amount_or_none, moment
from plane.store.engine import Database

V = TypeVar("V")

Source = Literal["/limit", "its own ask", "the alert", "file", "none"]
"""Where an agent's effective ceiling comes from (`Ceilings.source`)."""

Shown = tuple[Decimal | None, Source, tuple[Decimal, datetime] | None]
"""An agent's ceiling as its row and `plane show` say it: the effective
value, where it comes from, and the raise that holds."""


@dataclass(frozen=True)
class Reread:
    """What reading the ceilings again found changed (`Ceilings.reload`):
    what the clients are to be shown again. False when nothing did."""

    agents: frozenset[str] = frozenset()
    """The agents whose ceiling as shown changed (`Shown`)."""
    fleet: bool = False
    """Whether the fleet's ceiling changed."""
    groups: frozenset[str] = frozenset()
    """The groups whose ceiling changed: their agents' rows may say its hold."""

    def __bool__(self) -> bool:
        return self.fleet or bool(self.agents or self.groups)


class Stored(NamedTuple):
    """The ceilings as a read of the store found them (`Ceilings.reload`)."""

    set_: dict[str, Decimal | None]
    """The operator's values (None: "off")."""
    asked: dict[str, Decimal]
    raised: dict[str, tuple[Decimal, datetime]]
    fleet_set: tuple[Decimal | None] | None
    groups_set: dict[str, Decimal | None]


class Ceilings:
    """Each agent's effective ceiling. The file's values are given at
    construction; the operator's live in the `ceilings` table, the agents'
    own asks in `asks`."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        day: Callable[[], date] | None = None,
        *,
        tell: Callable[[], None] | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._day = day
        """The plane's day (the ledger's, which never goes back with the
        clock); None: the clock's."""
        self._tell = tell
        """Tells the other planes on the store that a ceiling changed, once
        its write is stored, so they read them again at once (None: a lone
        plane, no one to tell)."""
        self._from_file: dict[str, Decimal | None] = {}
        self._set: dict[str, Decimal | None] = {}
        self._asked: dict[str, Decimal] = {}
        self._raised: dict[str, tuple[Decimal, datetime]] = {}
        """A raise from an alert: the ceiling, and when it ends."""
        self._fleet_from_file: Decimal | None = None
        self._fleet_set: tuple[Decimal | None] | None = None
        """The operator's fleet value, as a 1-tuple (None inside is "off"); None: not set."""
        self._binding: dict[str, Decimal] = {}
        """An operator's value binding at once, until it is stored (`binding`)."""
        self.groups = Groups(db, clock)
        """The groups of agents, and their ceilings (`plane.money.groups`)."""
        self.changes = 0
        """Counts every change to any ceiling: a decision made before an await
        can tell that it may be stale (the worker's, before it reads what waits)."""
        self._turns = asyncio.Lock()
        """Held by a read of the stored values (`reload`) and by each change
        made here that is stored (`set`, `ask`...) from its write to its
        change in memory: a read that began before the write would otherwise
        put the value it read over the one just set."""
        self._moved = 0
        """Counts the renames and deletes (`renamed`, `forget`): made once their
        own transaction committed, without a turn, they have a read that was
        under way made again."""

    async def load(
        self,
        from_file: dict[str, Decimal | None],
        fleet_from_file: Decimal | None = None,
        groups: Mapping[str, tuple[Decimal | None, frozenset[str]]] | None = None,
    ) -> None:
        """The file's ceilings: each agent's, the fleet's, and each group's
        with its agents."""
        self._from_file = dict(from_file)
        self._fleet_from_file = fleet_from_file
        self.groups.load(groups or {})
        await self.groups.drop_removed()
        self.changes += 1
        await self.reload()

    async def reload(self, db: Database | None = None) -> Reread:
        """Read the operator's values and the asks again (another plane on
        the store may have changed them); say what changed. Only the agents
        whose stored values differ are looked at: a fleet of thousands costs
        the comparison of its dicts, not a look at each agent. `db`: the
        store connection read through, when not the plane's own (a fleet's
        ticks read on theirs, which no agent's read queues on)."""
        async with self._turns:
            while True:
                moved = self._moved
                stored = await self._stored(db or self._db)
                if self._moved == moved:
                    return self._reread(stored)

    async def _stored(self, db: Database) -> Stored:
        """The operator's values, the asks, the raises, the fleet's and the
        groups' values, as stored in `db`."""
        rows = await db.fetchall("SELECT agent, limit_usd FROM ceilings")
        set_ = {
            r["agent"]: amount_or_none("ceilings", r["agent"], "limit_usd", r["limit_usd"])
            for r in rows
        }
        asks = await db.fetchall("SELECT agent, limit_usd FROM asks")
        asked = {r["agent"]: amount("asks", r["agent"], "limit_usd", r["limit_usd"]) for r in asks}
        raises = await db.fetchall("SELECT agent, limit_usd, ends_at FROM raises")
        raised = {
            r["agent"]: (
                amount("raises", r["agent"], "limit_usd", r["limit_usd"]),
                moment("raises", r["agent"], "ends_at", r["ends_at"]),
            )
            for r in raises
        }
        fleet = await db.fetchone("SELECT limit_usd, set_by FROM fleet WHERE id = 1")
        fleet_set = (
            (amount_or_none("fleet", "the fleet", "limit_usd", fleet["limit_usd"]),)
            if fleet is not None and fleet["set_by"]
            else None
        )
        return Stored(set_, asked, raised, fleet_set, await self.groups.read(db))

    def _reread(self, stored: Stored) -> Reread:
        """The values `_stored` read, in memory; what changed."""
        set_, asked, raised, fleet_set, groups_set = stored
        touched = _differ(self._set, set_) | _differ(self._asked, asked)
        touched |= _differ(self._raised, raised)
        before = {agent: self.shown(agent) for agent in touched}
        fleet_before = self.fleet()
        self._set, self._asked, self._raised, self._fleet_set = set_, asked, raised, fleet_set
        groups = self.groups.reread(groups_set)
        reread = Reread(
            agents=frozenset(agent for agent in touched if self.shown(agent) != before[agent]),
            fleet=self.fleet() != fleet_before,
            groups=groups,
        )
        self.changes += bool(reread)
        return reread

    def shown(self, agent: str) -> Shown:
        """The agent's ceiling as its row and `plane show` say it."""
        return self.of(agent), self.source(agent), self.raised(agent)

    def fleet(self) -> Decimal | None:
        """The fleet's ceiling: the operator's value when there is one (off
        included), else the file's `fleet: {limitUsd: …}`."""
        if self._fleet_set is not None:
            return self._fleet_set[0]
        return self._fleet_from_file

    async def set_fleet(self, ceiling: Decimal | None) -> None:
        """The operator's fleet ceiling, from the keyboard: it replaces the file's."""
        row = (None if ceiling is None else str(ceiling), self._clock.now().isoformat())
        async with self._turns:
            await self._db.write(
                lambda conn: conn.execute(
                    "UPDATE fleet SET limit_usd = ?, set_at = ?, set_by = 'operator' WHERE id = 1",
                    row,
                )
            )
            self._fleet_set = (ceiling,)
        self.changes += 1
        self._tell_others()

    async def set_group(self, name: str, ceiling: Decimal | None) -> None:
        """The operator's ceiling of a group, from the keyboard: it replaces the file's."""
        async with self._turns:
            await self.groups.set(name, ceiling)
        self.changes += 1
        self._tell_others()

    def add_agent(self, agent: str, from_file: Decimal | None) -> None:
        self._from_file[agent] = from_file
        self.changes += 1

    def source(self, agent: str) -> Source:
        """Where the effective ceiling comes from: "/limit" (the operator's,
        `off` included), "its own ask", "file" (agents.yaml or its defaults),
        or "none"."""
        base, asked = self.base(agent), self._asked.get(agent)
        if asked is not None and (base is None or asked < base):
            return "its own ask"
        if self.raised(agent) is not None:
            return "the alert"
        if agent in self._set:  # a ceiling set, or removed (`/limit off`), by the operator
            return "/limit"
        return "file" if base is not None else "none"

    def renamed(self, old: str, new: str) -> None:
        """After the transaction that moved `old`'s rows to `new` committed."""
        _move(self._from_file, old, new)
        _move(self._set, old, new)
        _move(self._asked, old, new)
        _move(self._raised, old, new)
        self._moved += 1
        self.changes += 1
        self._tell_others()

    def forget(self, agent: str) -> None:
        """After the transaction that deleted `agent`'s ceiling rows committed:
        an agent made later with its name starts from the defaults."""
        for values in (self._from_file, self._set, self._asked, self._raised):
            values.pop(agent, None)
        self._moved += 1
        self.changes += 1
        self._tell_others()

    def base(self, agent: str) -> Decimal | None:
        """A raise from an alert while it lasts, else the operator's value
        when there is one, else the file's."""
        if (raised := self.raised(agent)) is not None:
            return raised[0]
        return self.unraised(agent)

    def unraised(self, agent: str) -> Decimal | None:
        """The base as it is again once a raise ends."""
        if agent in self._set:
            return self._set[agent]
        return self._from_file.get(agent)

    def of(self, agent: str) -> Decimal | None:
        """The effective ceiling: the tighter of the base and the agent's ask
        (and of an operator's value not stored yet, `binding`)."""
        effective = tighter(self.base(agent), self._asked.get(agent))
        return tighter(effective, self._binding.get(agent))

    @contextlib.contextmanager
    def binding(self, agent: str, ceiling: Decimal) -> Iterator[None]:
        """`ceiling` binds `agent` at once, for as long as this lasts, if it
        is tighter: the operator's `/limit` while its writes wait their
        turn in the store (`set` stores it; if that fails, the ceiling is
        what it was). Every gate asked meanwhile holds to it; a worker that
        asked before looks again (`changes`)."""
        self._binding[agent] = ceiling
        self.changes += 1
        try:
            yield
        finally:
            if self._binding.get(agent) is ceiling:
                del self._binding[agent]
                self.changes += 1

    async def set(self, agent: str, ceiling: Decimal | None) -> None:
        """The operator's value, from the keyboard: it replaces the file's and
        clears the agent's own ask."""
        row = (agent, None if ceiling is None else str(ceiling), self._clock.now().isoformat())

        def set_ceiling(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO ceilings (agent, limit_usd, set_at, set_by)"
                " VALUES (?, ?, ?, 'operator') ON CONFLICT (agent) DO UPDATE SET"
                " limit_usd = excluded.limit_usd, set_at = excluded.set_at,"
                " set_by = excluded.set_by",
                row,
            )
            conn.execute("DELETE FROM asks WHERE agent = ?", (agent,))
            conn.execute("DELETE FROM raises WHERE agent = ?", (agent,))

        async with self._turns:
            await self._db.write(set_ceiling)
            self._set[agent] = ceiling
            self._asked.pop(agent, None)
            self._raised.pop(agent, None)
        self.changes += 1
        self._tell_others()

    def _tell_others(self) -> None:
        """A change stored: the other planes are told (when there are any)."""
        if self._tell is not None:
            self._tell()

    def raised(self, agent: str) -> tuple[Decimal, datetime] | None:
        """The raise from an alert that holds now, and when it ends."""
        raised = self._raised.get(agent)
        if raised is None or self._ended(raised[1]):
            return None
        return raised

    def _ended(self, ends_at: datetime) -> bool:
        """Whether `ends_at` has passed: by the clock, or by the plane's day,
        which a clock stepping back across midnight does not take back (a
        raise that ended at 00:00 is not the next day's too)."""
        if self._clock.now() >= ends_at:
            return True
        return self._day is not None and datetime.combine(self._day(), time(0), UTC) >= ends_at

    async def raise_until(
        self, agent: str, ceiling: Decimal, ends_at: datetime, within: Callable[[Connection], None]
    ) -> None:
        """The operator's raise from an alert: `ceiling` until `ends_at`. It
        clears the agent's ask, as the operator's value does; `within` runs
        first in the same transaction (marking the link used: if it raises,
        nothing changes)."""
        row = (agent, str(ceiling), ends_at.isoformat(), self._clock.now().isoformat())

        def raise_ceiling(conn: Connection) -> None:
            within(conn)
            conn.execute(
                "INSERT INTO raises (agent, limit_usd, ends_at, set_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (agent) DO UPDATE SET limit_usd = excluded.limit_usd,"
                " ends_at = excluded.ends_at, set_at = excluded.set_at",
                row,
            )
            conn.execute("DELETE FROM asks WHERE agent = ?", (agent,))

        async with self._turns:
            await self._db.write(raise_ceiling)
            self._raised[agent] = (ceiling, ends_at)
            self._asked.pop(agent, None)
        self.changes += 1
        self._tell_others()

    async def ask(self, agent: str, asked: Decimal | None) -> bool:
        """The agent asks to be held to `asked` (None: no ceiling). Applied
        when it only removes capacity (at or under the effective ceiling);
        returns whether it was. The decision and the new value are made in
        its turn and before anything else is awaited, so no interleaving can
        loosen it."""
        async with self._turns:
            if not is_tighter(asked, self.of(agent)):
                return False
            if asked is None:
                return True  # no ceiling asked, none there: nothing to hold it to
            current = self._asked.get(agent)
            held_to = asked if current is None else min(current, asked)
            self._asked[agent] = held_to
            self.changes += 1
            row = (agent, str(held_to), self._clock.now().isoformat())
            await self._db.write(
                lambda conn: conn.execute(
                    "INSERT INTO asks (agent, limit_usd, asked_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (agent) DO UPDATE SET limit_usd = excluded.limit_usd,"
                    " asked_at = excluded.asked_at",
                    row,
                )
            )
        self._tell_others()
        return True


def tighter(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    """The lower of two ceilings, None being no ceiling."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


_NONE = object()
"""No value at all: not "off" (None), which the operator may set."""


def _differ(old: Mapping[str, V], new: Mapping[str, V]) -> set[str]:
    """The keys whose values differ between `old` and `new` (one missing
    from either included)."""
    if old == new:
        return set()
    return {key for key in old.keys() | new.keys() if old.get(key, _NONE) != new.get(key, _NONE)}


def _move(values: dict[str, V], old: str, new: str) -> None:
    """`old`'s value, if it has one, kept under `new`."""
    if old in values:
        values[new] = values.pop(old)
