"""Turn gating: whether an agent may start a turn now, and if not, why.

A ceiling stops an agent from *taking* turns, not a turn in flight: the gate
is asked when a turn is about to start, with the agent's turn lock held, so
no turn (its own, a booking, an ambient turn, another agent's scout call)
starts while the day's spend is at or over the ceiling. Turns are bounded
(a maximum number of LLM calls), so an agent overshoots by at most one turn.

Which ceiling binds (the operator's, the file's, the agent's own tighter
ask, a raise from an alert; the fleet's and the groups') is
`plane.money.ceilings`'s; the gate asks it, and the ledger what was spent.
Its answer is a `Hold` in figures: what the agent's conversation is told of
it is the agents' to word (`plane.agents.notices.why`). Money decides, and
never speaks.

The day is the ledger's (see `Ledger.today`): it never goes back, so a clock
that steps back a day holds an agent that spent the later day's budget until
the clock passes that day.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from functools import partial

from plane.clock import midnight_after
from plane.money.budgets import FleetFull, Full, GroupFull, TagFull
from plane.money.ceilings import Ceilings
from plane.money.ledger import Ledger


@dataclass(frozen=True)
class Hold:
    """Why an agent takes no turn now, as the figures that decided it."""

    agent: str

    @property
    def reason(self) -> str:
        """What the store keeps of a hold once told (`holds_told`): the same
        reason is not told twice in one held spell."""
        raise NotImplementedError


@dataclass(frozen=True)
class Paused(Hold):
    """The operator paused the agent: no turn until it is resumed."""

    @property
    def reason(self) -> str:
        return "paused"


@dataclass(frozen=True)
class Unpriced(Hold):
    """No price is known for the model, and a ceiling must count every turn."""

    model: str
    scope: str = "agent"
    """Whose ceiling cannot count it: the agent's, its group's or the fleet's."""
    name: str = ""
    """The group's name, for a group's ceiling."""

    @property
    def reason(self) -> str:
        return "unpriced"


@dataclass(frozen=True)
class AtCeiling(Hold):
    """The agent's spend today is at or over its own ceiling."""

    spent: Decimal
    ceiling: Decimal
    resets_at: datetime
    behind: tuple[date, date] | None = None
    """The clock's day and the plane's, while the clock reads a day already counted."""
    floor_priced: bool = False
    """`spent` holds a call priced at a floor (a gateway agent's): it spent
    at least that, the rest unpriced, as its row says."""

    @property
    def reason(self) -> str:
        return "ceiling"


@dataclass(frozen=True)
class AboveAgent(Hold):
    """A ceiling above the agent's is reached: the fleet's, its group's, or
    (for a gateway call) its tag's, by what was spent (`full.spent`, the
    calls in flight left out: `settled`, `spent_alone`). Calls in flight hold
    no one: a call they crowd out waits for them (`plane.agents.metering`,
    `plane.gateway.admission`)."""

    full: Full
    resets_at: datetime

    @property
    def reason(self) -> str:
        return f"tag {self.full.name}" if isinstance(self.full, TagFull) else self.full.scope


@dataclass(frozen=True)
class TooDear(Hold):
    """A gateway call whose own likely cost does not fit what is left today
    under one of its ceilings (the agent's, its group's, its tag's)."""

    likely: Decimal
    left: Decimal
    ceiling: Decimal
    resets_at: datetime
    scope: str = "agent"
    name: str = ""
    """The group's or the tag's name."""

    @property
    def reason(self) -> str:
        return "too dear"


@dataclass(frozen=True)
class Unreadable(Hold):
    """A day's sum the agent's calls count in (its own, its group's, the
    fleet's under a fleet's ceiling) is a row no plane wrote: no call of its
    could be counted, so it takes none until the row reads again."""

    said: str
    """The sentence naming the row (`plane.money.stored`), as the start says it."""

    @property
    def reason(self) -> str:
        return "unreadable"


@dataclass(frozen=True)
class Unread:
    """What a snapshot could not read of the day's sums: by agent, and by
    group, the sentence naming the row; `fleet`, the fleet's (None: it read)."""

    agents: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, str] = field(default_factory=dict)
    fleet: str | None = None


async def settled(
    spent: Decimal, ceiling: Decimal | None, closed: Callable[[], Awaitable[Decimal]]
) -> Decimal:
    """A shared budget's day (`spent`: the fleet's or a group's, its calls in
    flight at their estimates) as the gate weighs it against `ceiling`: at
    or over it, what was spent, the calls in flight left out (`closed`,
    read only then, in one read: `BudgetSpend.group_settled`). A call in
    flight counts the most it may cost while it flies, which it seldom
    does: it holds back the calls admitted beside it
    (`plane.agents.metering`), never an agent."""
    if ceiling is not None and spent >= ceiling:
        return await closed()
    return spent


def spent_alone(full: Full) -> Full:
    """`full` with what was spent alone (its calls in flight left out)."""
    spent = full.spent - full.in_flight
    if isinstance(full, TagFull):
        return TagFull(spent, full.ceiling, full.name, full.day)
    return type(full)(spent, full.ceiling, full.name)


class Gate:
    def __init__(self, ledger: Ledger, ceilings: Ceilings) -> None:
        self.ledger = ledger
        self.ceilings = ceilings

    async def hold(
        self,
        agent: str,
        *,
        price_known: bool,
        model: str,
        fleet_spent: Decimal | None = None,
        group_spent: Mapping[str, Decimal] | None = None,
        settled_only: bool = False,
        floor_priced: bool = False,
    ) -> Hold | None:
        """None when `agent` may start a turn now. Ask it with the agent's
        turn lock held, right before the turn. `fleet_spent`: the fleet's
        spend today as `settled` weighs it, when the caller asks of every
        agent at once (a snapshot) and has read it once for all, and so
        `group_spent`, each group's. `settled_only`: the agent's
        calls in flight are left out (a gateway agent's, which the gateway
        weighs in dollars), so a hold never states a spend that did not happen.
        The fleet's and the group's ceilings hold by what was spent, never by
        calls in flight (a call of the agent's waits for those as it is
        admitted: `plane.agents.metering`). `floor_priced`: its spend today
        holds a call priced at a floor, which its hold says as its row does."""
        ceiling = self.ceilings.of(agent)
        if ceiling is not None:
            if not price_known:
                return Unpriced(agent, model)
            spent = await self.ledger.spend_today(agent)
            if settled_only:
                spent -= self.ledger.in_flight(agent)
            if spent >= ceiling:
                behind = self.ledger.days_behind() if ceiling else None
                resets_at = self.resets_at()
                return AtCeiling(agent, spent, ceiling, resets_at, behind, floor_priced)
        spent_by_group = group_spent or {}
        held = await self._group_hold(agent, price_known, model, spent_by_group)
        if held is not None:
            return held
        return await self._fleet_hold(agent, price_known, model, fleet_spent)

    async def _group_hold(
        self,
        agent: str,
        price_known: bool,
        model: str,
        spent_by_group: Mapping[str, Decimal],
    ) -> Hold | None:
        """The ceiling of the agent's group, between its own and the fleet's:
        once what its calls spent is at or over it, none of the group's agents
        starts a turn, on any plane. Its calls in flight hold no one: they
        may cost far less than the most they count while they fly."""
        budget = self.ceilings.groups.budget(agent)
        if budget is None or budget.ceiling is None:
            return None
        if not price_known:
            return Unpriced(agent, model, "group", budget.name)
        spent = spent_by_group.get(budget.name)
        if spent is None:
            spend = self.ledger.budget_spend
            today = await spend.group_today(budget.name)
            spent = await settled(today, budget.ceiling, partial(spend.group_settled, budget.name))
        if spent < budget.ceiling:
            return None
        full = GroupFull(spent, budget.ceiling, budget.name)
        return AboveAgent(agent, full, self.resets_at())

    def hold_known(
        self,
        agent: str,
        *,
        spent: Decimal,
        price_known: bool,
        model: str,
        fleet_spent: Decimal,
        group_spent: Mapping[str, Decimal],
        resets_at: datetime,
    ) -> Hold | None:
        """`hold`'s answer from figures read once for every agent (a
        snapshot's: the agent's spend today, the fleet's and every group's
        as `settled` weighs them), and
        the day's end computed once, without a wait: a fleet's rows are built
        in one go. Not for a gateway agent, whose calls in flight `hold`
        weighs apart (`settled_only`)."""
        ceiling = self.ceilings.of(agent)
        if ceiling is not None:
            if not price_known:
                return Unpriced(agent, model)
            if spent >= ceiling:
                behind = self.ledger.days_behind() if ceiling else None
                return AtCeiling(agent, spent, ceiling, resets_at, behind)
        budget = self.ceilings.groups.budget(agent)
        if budget is not None and budget.ceiling is not None:
            if not price_known:
                return Unpriced(agent, model, "group", budget.name)
            if (group := group_spent[budget.name]) >= budget.ceiling:
                full = GroupFull(group, budget.ceiling, budget.name)
                return AboveAgent(agent, full, resets_at)
        fleet = self.ceilings.fleet()
        if fleet is None:
            return None
        if not price_known:
            return Unpriced(agent, model, "fleet")
        if fleet_spent < fleet:
            return None
        return AboveAgent(agent, FleetFull(fleet_spent, fleet), resets_at)

    def unread(self, agent: str, unread: Unread) -> str | None:
        """The sentence of the first sum of `unread` `agent`'s calls count in:
        its own, its group's, the fleet's under a fleet's ceiling (None: none)."""
        if (said := unread.agents.get(agent)) is not None:
            return said
        budget = self.ceilings.groups.budget(agent)
        if budget is not None and (said := unread.groups.get(budget.name)) is not None:
            return said
        return unread.fleet if self.ceilings.fleet() is not None else None

    def above_agent(self, agent: str, reason: str) -> Decimal | None:
        """The ceiling above the agent's that holds it for `reason` (the
        fleet's or its group's); None (or zero, a pause) when the day
        turning does not free it."""
        if reason == "fleet":
            return self.ceilings.fleet()
        budget = self.ceilings.groups.budget(agent)
        return budget.ceiling if reason == "group" and budget is not None else None

    def full_hold(self, agent: str, full: Full) -> AboveAgent:
        """`agent`'s call refused at admission by what was spent (`Full`, not
        `by_calls_in_flight`: one refused only for those waits and is no
        hold), as a hold that says what was spent alone (`spent_alone`)."""
        return AboveAgent(agent, spent_alone(full), self.resets_at())

    async def _fleet_hold(
        self, agent: str, price_known: bool, model: str, spent: Decimal | None
    ) -> Hold | None:
        """The fleet's ceiling, asked the same way: once what was spent is at
        or over it, no agent of the fleet starts a turn, on any plane."""
        fleet = self.ceilings.fleet()
        if fleet is None:
            return None
        if not price_known:
            return Unpriced(agent, model, "fleet")
        if spent is None:
            spend = self.ledger.budget_spend
            spent = await settled(await spend.fleet_today(), fleet, spend.fleet_settled)
        if spent < fleet:
            return None
        return AboveAgent(agent, FleetFull(spent, fleet), self.resets_at())

    def resets_at(self) -> datetime:
        """00:00 UTC after the plane's day (later than the clock's next
        midnight while the clock is behind the day already charged)."""
        return midnight_after(self.ledger.day())
