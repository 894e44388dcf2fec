"""Turn gating: whether an agent may start a turn now, and if not, why.

A ceiling stops an agent from *taking* turns, not a turn in flight: the gate
is asked when a turn is about to start, with the agent's turn lock held, so
no turn (its own, a booking, an ambient turn, another agent's scout call)
starts while the day's spend is at or over the ceiling. Turns are bounded
(a maximum number of LLM calls), so an agent overshoots by at most one turn.

The effective ceiling is the tighter of two values, kept apart:

- the **base**: the operator's value, set from the keyboard and kept in the
  `ceilings` table, when there is one — including "off", which stays off —
  and otherwise the file's (the agent's own block, else `defaults.limitUsd`);
- the agent's own **ask** (`asks` table), which can only tighten: it is
  applied only when it is at or under the effective ceiling, and it never
  replaces the base, so a later, tighter agents.yaml still binds.

Only the operator overrides the file, and an operator's value clears the
agent's ask: the operator decided, with the ask in front of them.

A **raise** from an alert's link (`plane.daemon.approvals`) is the operator's
too, for the rest of the day: it stands in for the base until `ends_at`
(00:00 UTC), kept in `raises`, and then the base it stood in for binds again
by itself — nothing has to run at midnight for the raise to end. It clears
the ask as the operator's value does; the operator's next `/limit` ends it.

The day is the ledger's (see `Ledger.today`): it never goes back, so a clock
that steps back a day holds an agent that spent the later day's budget until
the clock passes that day.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import partial
from sqlite3 import Connection

from plane.clock import Clock, midnight_after, until
from plane.money import notices
from plane.money.budgets import FleetFull, Full, GroupFull, full_notice
from plane.money.groups import Groups
from plane.money.ledger import Ledger
from plane.money.limits import is_tighter
from plane.store.engine import Database


@dataclass(frozen=True)
class Hold:
    """Why an agent takes no turn now; `notice` is what the conversation says,
    worded when read (a snapshot asks every agent's hold and reads no notice)."""

    reason: str
    said: str | Callable[[], str]
    settles: int | None = None
    """Held only with calls in flight counted at their estimates (a shared
    ceiling's): the ledger's `closes` when that was read, so the agent is
    looked at again once one of them settles (`Ledger.after_close`)."""

    @property
    def notice(self) -> str:
        return self.said if isinstance(self.said, str) else self.said()


class Ceilings:
    """Each agent's effective ceiling. The file's values are given at
    construction; the operator's live in the `ceilings` table, the agents'
    own asks in `asks`."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._from_file: dict[str, Decimal | None] = {}
        self._set: dict[str, Decimal | None] = {}
        self._asked: dict[str, Decimal] = {}
        self._raised: dict[str, tuple[Decimal, datetime]] = {}
        """A raise from an alert: the ceiling, and when it ends."""
        self._fleet_from_file: Decimal | None = None
        self._fleet_set: tuple[Decimal | None] | None = None
        """The operator's fleet value, as a 1-tuple (None inside is "off"); None: not set."""
        self.groups = Groups(db, clock)
        """The groups of agents, and their ceilings (`plane.money.groups`)."""
        self.changes = 0
        """Counts every change to any ceiling: a decision made before an await
        can tell that it may be stale (the worker's, before it reads what waits)."""

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
        self.changes += 1
        await self.reload()

    async def reload(self) -> bool:
        """Read the operator's values and the asks again (another plane on
        the store may have changed them); True if any changed."""
        before = (self._set, self._asked, self._fleet_set, self._raised)
        rows = await self._db.fetchall("SELECT agent, limit_usd FROM ceilings")
        self._set = {r["agent"]: _decimal(r["limit_usd"]) for r in rows}
        asks = await self._db.fetchall("SELECT agent, limit_usd FROM asks")
        self._asked = {r["agent"]: Decimal(r["limit_usd"]) for r in asks}
        raises = await self._db.fetchall("SELECT agent, limit_usd, ends_at FROM raises")
        self._raised = {
            r["agent"]: (Decimal(r["limit_usd"]), datetime.fromisoformat(r["ends_at"]))
            for r in raises
        }
        fleet = await self._db.fetchone("SELECT limit_usd, set_by FROM fleet WHERE id = 1")
        self._fleet_set = (
            (_decimal(fleet["limit_usd"]),) if fleet is not None and fleet["set_by"] else None
        )
        changed = before != (self._set, self._asked, self._fleet_set, self._raised)
        changed = await self.groups.reload() or changed
        self.changes += changed
        return changed

    def fleet(self) -> Decimal | None:
        """The fleet's ceiling: the operator's value when there is one (off
        included), else the file's `fleet: {limitUsd: …}`."""
        if self._fleet_set is not None:
            return self._fleet_set[0]
        return self._fleet_from_file

    async def set_fleet(self, ceiling: Decimal | None) -> None:
        """The operator's fleet ceiling, from the keyboard: it replaces the file's."""
        row = (None if ceiling is None else str(ceiling), self._clock.now().isoformat())
        await self._db.write(
            lambda conn: conn.execute(
                "UPDATE fleet SET limit_usd = ?, set_at = ?, set_by = 'operator' WHERE id = 1", row
            )
        )
        self._fleet_set = (ceiling,)
        self.changes += 1

    async def set_group(self, name: str, ceiling: Decimal | None) -> None:
        """The operator's ceiling of a group, from the keyboard: it replaces the file's."""
        await self.groups.set(name, ceiling)
        self.changes += 1

    def add_agent(self, agent: str, from_file: Decimal | None) -> None:
        self._from_file[agent] = from_file
        self.changes += 1

    def source(self, agent: str) -> str:
        """Where the effective ceiling comes from: "/limit" (the operator's),
        "its own ask", "file" (agents.yaml or its defaults), or "none"."""
        base, asked = self.base(agent), self._asked.get(agent)
        if asked is not None and (base is None or asked < base):
            return "its own ask"
        if self.raised(agent) is not None:
            return "the alert"
        if agent in self._set:
            return "/limit" if self._set[agent] is not None else "none"
        return "file" if base is not None else "none"

    def renamed(self, old: str, new: str) -> None:
        """After the transaction that moved `old`'s rows to `new` committed."""
        for values in (self._from_file, self._set, self._asked, self._raised):
            if old in values:
                values[new] = values.pop(old)  # type: ignore[assignment]
        self.changes += 1

    def forget(self, agent: str) -> None:
        """After the transaction that deleted `agent`'s ceiling rows committed:
        an agent made later with its name starts from the defaults."""
        for values in (self._from_file, self._set, self._asked, self._raised):
            values.pop(agent, None)
        self.changes += 1

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
        """The effective ceiling: the tighter of the base and the agent's ask."""
        return tighter(self.base(agent), self._asked.get(agent))

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

        await self._db.write(set_ceiling)
        self._set[agent] = ceiling
        self._asked.pop(agent, None)
        self._raised.pop(agent, None)
        self.changes += 1

    def raised(self, agent: str) -> tuple[Decimal, datetime] | None:
        """The raise from an alert that holds now, and when it ends."""
        raised = self._raised.get(agent)
        if raised is None or self._clock.now() >= raised[1]:
            return None
        return raised

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

        await self._db.write(raise_ceiling)
        self._raised[agent] = (ceiling, ends_at)
        self._asked.pop(agent, None)
        self.changes += 1

    async def ask(self, agent: str, asked: Decimal | None) -> bool:
        """The agent asks to be held to `asked` (None: no ceiling). Applied
        when it only removes capacity (at or under the effective ceiling);
        returns whether it was. The decision and the new value are made
        before anything is awaited, so no interleaving can loosen it."""
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
        return True


def tighter(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    """The lower of two ceilings, None being no ceiling."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


class Gate:
    def __init__(self, ledger: Ledger, ceilings: Ceilings, clock: Clock) -> None:
        self.ledger = ledger
        self.ceilings = ceilings
        self._clock = clock

    async def hold(
        self,
        agent: str,
        *,
        price_known: bool,
        model: str,
        fleet_spent: Decimal | None = None,
        settled_only: bool = False,
    ) -> Hold | None:
        """None when `agent` may start a turn now. Ask it with the agent's
        turn lock held, right before the turn. `fleet_spent`: the fleet's
        spend today, when the caller asks of every agent at once (a
        snapshot) and has read it once for all. `settled_only`: the agent's
        calls in flight are left out (a gateway agent's, which the gateway
        weighs in dollars), so a hold never states a spend that did not happen."""
        ceiling = self.ceilings.of(agent)
        if ceiling is not None:
            if not price_known:
                return Hold(
                    "unpriced",
                    f"{agent} is not answering: no price is known for {model}, and an agent "
                    "under a ceiling takes no turn it cannot count. Add the model under "
                    "`pricing:` in agents.yaml, or remove the limit with /limit off.",
                )
            spent = await self.ledger.spend_today(agent)
            if settled_only:
                spent -= self.ledger.in_flight(agent)
            if spent >= ceiling:
                return Hold("ceiling", partial(self._ceiling_notice, agent, spent, ceiling))
        if (held := await self._group_hold(agent, price_known, model, settled_only)) is not None:
            return held
        return await self._fleet_hold(agent, price_known, model, fleet_spent)

    async def _group_hold(
        self, agent: str, price_known: bool, model: str, settled_only: bool
    ) -> Hold | None:
        """The ceiling of the agent's group, between its own and the fleet's:
        at or over it, none of the group's agents starts a turn, on any plane."""
        budget = self.ceilings.groups.budget(agent)
        if budget is None or budget.ceiling is None:
            return None
        closes = self.ledger.closes
        if not price_known:
            return Hold(
                "unpriced",
                f"{agent} is not answering: no price is known for {model}, and its group "
                f"{budget.name} is under a ceiling, which counts every turn. Add the model "
                "under `pricing:` in agents.yaml, or remove the group limit with "
                f"/limit group {budget.name} off.",
            )
        spent = await self.ledger.group_today(budget.members)
        flying = None
        if spent >= budget.ceiling or settled_only:
            flying = await self.ledger.group_in_flight(budget.members)
        if settled_only:
            spent, flying = spent - (flying or Decimal(0)), Decimal(0)
        if spent < budget.ceiling:
            return None
        full = GroupFull(spent, budget.ceiling, budget.name)
        settles = closes if flying else None
        return Hold("group", partial(self.notice_of, agent, full, flying), settles)

    def above_agent(self, agent: str, reason: str) -> Decimal | None:
        """The ceiling above the agent's that holds it for `reason` (the
        fleet's or its group's); None (or zero, a pause) when the day
        turning does not free it."""
        if reason == "fleet":
            return self.ceilings.fleet()
        budget = self.ceilings.groups.budget(agent)
        return budget.ceiling if reason == "group" and budget is not None else None

    async def full_notice(self, agent: str, full: Full) -> str:
        """Why `agent`'s call was refused at admission (`Full`), with what its
        calls in flight count read now."""
        ledger = self.ledger
        if isinstance(full, GroupFull):
            flying = await ledger.group_in_flight(self.ceilings.groups.members(full.name))
        elif isinstance(full, FleetFull):
            flying = await ledger.fleet_in_flight()
        else:
            flying = await ledger.tag_in_flight(full.name)
        return self.notice_of(agent, full, flying)

    def notice_of(self, agent: str, full: Full, flying: Decimal | None) -> str:
        return full_notice(agent, full, flying, until(self._clock.now(), self.resets_at()))

    async def _fleet_hold(
        self, agent: str, price_known: bool, model: str, spent: Decimal | None
    ) -> Hold | None:
        """The fleet's ceiling, asked the same way: at or over it, no agent
        of the fleet starts a turn, on any plane."""
        fleet = self.ceilings.fleet()
        if fleet is None:
            return None
        if not price_known:
            return Hold(
                "unpriced",
                f"{agent} is not answering: no price is known for {model}, and the fleet "
                "is under a ceiling, which counts every turn. Add the model under "
                "`pricing:` in agents.yaml, or remove the fleet limit with /limit fleet off.",
            )
        flying = None  # a snapshot's (spent given) reads no notice
        closes = self.ledger.closes
        if spent is None:
            spent = await self.ledger.fleet_today()
            flying = await self.ledger.fleet_in_flight() if spent >= fleet else None
        if spent < fleet:
            return None
        settles = closes if flying else None
        return Hold("fleet", partial(self.fleet_notice, agent, spent, fleet, flying), settles)

    def fleet_notice(
        self, agent: str, spent: Decimal, fleet: Decimal, flying: Decimal | None
    ) -> str:
        """`spent` counts the calls in flight at their estimates (`flying`,
        None: not known): it is said to be spent only when none is."""
        return self.notice_of(agent, FleetFull(spent, fleet), flying)

    def resets_at(self) -> datetime:
        """00:00 UTC after the plane's day (later than the clock's next
        midnight while the clock is behind the day already charged)."""
        return midnight_after(self.ledger.day())

    def _ceiling_notice(self, agent: str, spent: Decimal, ceiling: Decimal) -> str:
        notice = notices.held(agent, ceiling, spent, until(self._clock.now(), self.resets_at()))
        behind = self.ledger.clock_behind()
        if behind is not None and ceiling:
            notice += f" {behind}"
        return notice


def _decimal(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)
