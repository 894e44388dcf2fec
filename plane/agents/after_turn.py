"""What an agent's conversation is told once a turn has spent: the turn's
quiet cost line (`line`, written with the turn's end: its answer and its
questions answered), then the notices spend brings (the once-a-day warning,
the ceiling reached). The gateway says its calls' own lines and asks for the
notices after each (`spend_notices`). A turn a stop cut is told at the next
start (`tell_cut_turns`): its notice is its cost line.

The words are `plane.agents.notices`'; this module decides when.
"""

from __future__ import annotations

from decimal import Decimal
from sqlite3 import Connection

from plane.agents import notices
from plane.agents.burning import Spiked, tell_spike
from plane.agents.commands import PricedOf
from plane.agents.services import Services
from plane.agents.turn import TurnResult
from plane.clock import until
from plane.history.conversation import Conversation, CostLine
from plane.money.ledger import Interrupted
from plane.money.limits import ALL_PRICED, Priced
from plane.money.savings import COMPACTION
from plane.wire.protocol import Usage
from plane.wire.words import plain, turn_line


class AfterTurn:
    def __init__(
        self, services: Services, spiked: Spiked | None = None, priced: PricedOf | None = None
    ) -> None:
        """`spiked` is told of a spike in an agent's spend (the alerts');
        `priced` says how an agent's row prices its spend, which the warning
        and the ceiling reached say as the row does (the rows'; None: all of it priced)."""
        self._services = services
        self._spiked = spiked
        self._priced = priced

    async def __call__(self, agent: str, model: str, result: TurnResult) -> None:
        """After a turn that spent, once its end is written with its cost
        line (`line`): the unpriced model's notice, then the spend notices. A
        turn the operator cut (its result counts no calls) said its cost in
        its notice; what its spend brings (the ceiling reached) is said as
        after any turn."""
        services = self._services
        if result.calls and result.unpriced and not said_nothing(result):
            day = await services.ledger.today()
            if await services.conversation.first_today(agent, "unpriced", day):
                await services.add_message(agent, "plane", notices.unpriced(model))
        await self.spend_notices(agent)

    async def spend_notices(self, agent: str) -> None:
        """After a turn's cost line: the once-a-day warning, and the ceiling
        reached — each time the agent is stopped: once per ceiling a day, so
        a raised limit reached again is said again, while calls settling
        together over one ceiling (a gateway's) say it once."""
        services = self._services
        await tell_spike(services, agent, self._spiked)
        ceiling = services.gate.ceilings.of(agent)
        if ceiling is None or ceiling == 0:
            return
        # What is settled: calls still in flight (a gateway agent's) are not spent yet.
        spent = await services.ledger.spend_today(agent) - services.ledger.in_flight(agent)
        day = await services.ledger.today()
        first_today = services.conversation.first_today
        if spent >= ceiling and await first_today(agent, f"ceiling {plain(ceiling)}", day):
            await first_today(agent, "warn", day)
            resets_in = until(services.clock.now(), services.gate.resets_at())
            priced = self._priced_at(agent, spent)
            reached = notices.ceiling_reached(agent, ceiling, spent, resets_in, priced)
            await services.add_message(agent, "plane", reached)
        ratio = Decimal(str(services.config.defaults.warn_ratio))
        if spent >= ceiling * ratio and await first_today(agent, "warn", day):
            warned = notices.warning(agent, ceiling, spent, self._priced_at(agent, spent))
            await services.add_message(agent, "plane", warned)

    def _priced_at(self, agent: str, spent: Decimal) -> Priced:
        """How `agent`'s row prices `spent` (`$1.05+$?` past a floor)."""
        return ALL_PRICED if self._priced is None else self._priced(agent, spent)

    async def line(self, agent: str, model: str, result: TurnResult) -> CostLine | None:
        """The turn's quiet cost line, to be written with the turn's end
        (`Conversation.end_turn`), when it spent anything: a turn whose calls
        all failed unbilled gets none (`$0.00 · 0 in · 0 out` says nothing;
        the notice above it says what happened). What compression saved is
        recorded now, before the line that says it, and what compaction saved
        beside it, under its own name."""
        day = await self._services.ledger.today()
        savings = self._services.savings
        await savings.record(agent, model, result.saved_chars, day)
        await savings.record(agent, model, result.compacted_chars, day, lever=COMPACTION)
        if said_nothing(result):
            return None
        return CostLine(
            turn_line(
                result.cost,
                result.usage,
                result.saved_chars,
                compacted_chars=result.compacted_chars,
                unpriced=result.unpriced,
            ),
            cost_usd=None if result.unpriced and not result.cost else result.cost,
            usage=result.usage,
            failed=not result.ok and not result.held,  # held: kept, answered later
        )


def said_nothing(result: TurnResult) -> bool:
    """A turn whose calls spent nothing, counted nothing and saved nothing."""
    saved = result.saved_chars or result.compacted_chars
    return result.cost == 0 and result.usage == Usage() and not saved


def tell_cut_turns(conversation: Conversation, tx: Connection, cut: dict[str, Interrupted]) -> None:
    """At start-up, in the transaction that marks the calls interrupted: each
    agent whose turn a stop cut says so, with what was counted, so its row
    and its feed agree."""
    for agent, interrupted in cut.items():
        waiting = conversation.waiting_within(tx, agent)
        notice = notices.cut_by_a_stop(interrupted, waiting)
        cost = None if interrupted.unpriced == interrupted.calls else interrupted.estimate_usd
        conversation.append_within(tx, agent, "plane", notice, cost_usd=cost)
