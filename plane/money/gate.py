"""Turn gating: whether an agent may start a turn now, and if not, why.

A ceiling stops an agent from *taking* turns, not a turn in flight: the gate
is asked when a turn is about to start, with the agent's turn lock held, so
no turn (its own, a booking, an ambient turn, another agent's scout call)
starts while the day's spend is at or over the ceiling. Turns are bounded
(a maximum number of LLM calls), so an agent overshoots by at most one turn.

Which ceiling binds (the operator's, the file's, the agent's own tighter
ask, a raise from an alert; the fleet's and the groups') is
`plane.money.ceilings`'s; the gate asks it, and the ledger what was spent.

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

from plane.clock import Clock, midnight_after, until
from plane.money import notices
from plane.money.budgets import FleetFull, Full, GroupFull, full_notice
from plane.money.ceilings import Ceilings
from plane.money.ledger import Ledger


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
        group_spent: Mapping[str, Decimal] | None = None,
        settled_only: bool = False,
    ) -> Hold | None:
        """None when `agent` may start a turn now. Ask it with the agent's
        turn lock held, right before the turn. `fleet_spent`: the fleet's
        spend today, when the caller asks of every agent at once (a
        snapshot) and has read it once for all, and so `group_spent`, each
        group's. `settled_only`: the agent's
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
        spent_by_group = group_spent or {}
        held = await self._group_hold(agent, price_known, model, settled_only, spent_by_group)
        if held is not None:
            return held
        return await self._fleet_hold(agent, price_known, model, fleet_spent)

    async def _group_hold(
        self,
        agent: str,
        price_known: bool,
        model: str,
        settled_only: bool,
        spent_by_group: Mapping[str, Decimal],
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
        read = spent_by_group.get(budget.name)
        spent = await self.ledger.group_today(budget.members) if read is None else read
        flying = None
        if (spent >= budget.ceiling and read is None) or settled_only:
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
