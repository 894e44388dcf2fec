"""Admission of a gateway agent's calls, one step at a time per agent: asked
the gate, weighed in dollars (`plane.gateway.standing`), written pending, or
refused with the sentence that is true of it.

Each agent has a lock that its admissions and its settles take, so calls
arriving together each see those before them; a call that would fit once
the calls in flight settle waits on it, and every settle (and every call
whose provider announced its prompt) wakes it to be weighed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal

from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.clock import until
from plane.gateway.apis import Wire
from plane.gateway.asked import Asked
from plane.gateway.estimate import Estimate, Estimator
from plane.gateway.learned import Learning
from plane.gateway.refused import GatewayRefused
from plane.gateway.standing import Book, Standing, judge
from plane.money import notices
from plane.money.gate import Hold
from plane.money.ledger import FleetFull
from plane.wire.protocol import Usage
from plane.wire.words import UNPRICED

WAIT_S = 30.0
"""How long a call that would fit once the calls in flight settle waits for
them, before it is refused with a short Retry-After."""
RETRY_S = 5
"""The Retry-After of such a refusal: the client tries again soon by itself."""

TellHold = Callable[[str, Hold | None], Awaitable[None]]


class Admission:
    def __init__(
        self, services: Services, learning: Learning, tell_hold: TellHold, wait_s: float
    ) -> None:
        """`tell_hold` says why a call was refused, once a held spell (None:
        one went through, and the spell is over)."""
        self._services = services
        self._tell_hold = tell_hold
        self._estimator = Estimator(services.pricer, learning)
        self._turns: defaultdict[str, asyncio.Condition] = defaultdict(asyncio.Condition)
        self._books: defaultdict[str, Book] = defaultdict(Book)
        self.wait_s = wait_s

    async def open(
        self, wire: Wire, spec: AgentSpec, model: str, asked: Asked, wide: bool
    ) -> tuple[int, Estimate]:
        """Admit the call and write it pending, or refuse it (`GatewayRefused`).
        `wide`: the client opened Anthropic's 1M-token context."""
        services, agent = self._services, spec.name
        known = services.pricer.is_known(model)
        services.client_models[agent] = model
        turn = self._turns[agent]
        deadline = asyncio.get_running_loop().time() + self.wait_s
        async with turn:
            while True:
                hold = await services.gate.hold(
                    agent, price_known=known, model=model, settled_only=True
                )
                if hold is not None:
                    await self._tell_hold(agent, hold)
                    raise self._held(wire, hold.notice)
                estimate = Estimate(Decimal(0), Decimal(0))
                if known:
                    estimate = await self._estimator.estimate(
                        agent, model, asked, wide_context=wide
                    )
                waiting = await self._weigh(wire, agent, estimate, deadline)
                if waiting is None:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(turn.wait(), waiting)
            call = await self._write_pending(wire, spec, model, estimate, known)
            self._books[agent].add(call, estimate)
            await self._tell_hold(agent, None)
        return call, estimate

    async def announced(
        self, agent: str, call: int, model: str, asked: Asked, estimate: Estimate, usage: Usage
    ) -> None:
        """Its provider announced the call's prompt: weighed anew, so the calls
        waiting on its worst case may go (Claude Code's fan-out waits a moment,
        not a whole answer)."""
        sharper = self._estimator.announced(model, asked, estimate, usage)
        if sharper is not None and self._books[agent].tighten(call, *sharper):
            turn = self._turns[agent]
            async with turn:
                turn.notify_all()

    @contextlib.asynccontextmanager
    async def closing(self, agent: str, call: int) -> AsyncIterator[None]:
        """Around a call's settle (or failure) in the ledger: no admission is
        weighed meanwhile, and those waiting are woken once it is done."""
        turn = self._turns[agent]
        async with turn:
            yield
            self._books[agent].close(call)
            turn.notify_all()

    def forget(self, agent: str, call: int) -> None:
        """A call left open (the plane stopping): it counts its estimate, not its bound."""
        self._books[agent].close(call)

    async def _weigh(
        self, wire: Wire, agent: str, estimate: Estimate, deadline: float
    ) -> float | None:
        """None when the call may go; else the seconds it may wait for calls
        in flight to settle. Refuses it (`GatewayRefused`) when its own likely cost
        does not fit, or once it has waited long enough."""
        services = self._services
        ceiling = services.gate.ceilings.of(agent)
        if ceiling is None:
            return None
        book = self._books[agent]
        day = Standing(
            ceiling,
            await services.ledger.spend_today(agent),
            services.ledger.in_flight(agent),
            book.bounds(),
            book.booked(),
            book.likely(),
        )
        verdict = judge(day, estimate)
        if verdict == "go":
            return None
        if verdict == "too dear":
            resets_in = until(services.clock.now(), services.gate.resets_at())
            notice = notices.too_dear(agent, estimate.likely, day.left, ceiling, resets_in)
            await self._tell_hold(agent, Hold("too dear", notice))
            raise self._held(wire, notice)
        waiting = deadline - asyncio.get_running_loop().time()
        if waiting > 0:
            return waiting
        if verdict == "in flight":
            notice = notices.in_flight(
                agent, day.flying, estimate.likely, day.left, ceiling, RETRY_S
            )
        else:
            notice = notices.may_overshoot(agent, day.left, ceiling, RETRY_S)
        status, error, extra = wire.busy(notice, RETRY_S)
        raise GatewayRefused(status, notice, extra, error)

    async def _write_pending(
        self, wire: Wire, spec: AgentSpec, model: str, estimate: Estimate, known: bool
    ) -> int:
        """The call in the ledger, pending at its likely cost (the fleet's
        ceiling admits it in the same transaction)."""
        services = self._services
        try:
            return await services.ledger.open_call(
                spec.name,
                spec.provider,
                model,
                estimate.likely,
                "estimate" if known else UNPRICED,
                fleet_ceiling=services.gate.ceilings.fleet(),
            )
        except FleetFull as full:  # refused at admission: held, as by the gate
            flying = await services.ledger.fleet_in_flight()
            notice = services.gate.fleet_notice(spec.name, full.spent, full.ceiling, flying)
            await self._tell_hold(spec.name, Hold("fleet", notice))
            raise self._held(wire, notice) from None

    def _held(self, wire: Wire, notice: str) -> GatewayRefused:
        """The refusal of a call that does not fit today: true until 00:00 UTC."""
        services = self._services
        left = (services.gate.resets_at() - services.clock.now()).total_seconds()
        status, error, extra = wire.held(notice, max(1, math.ceil(left)))
        return GatewayRefused(status, notice, extra, error)
