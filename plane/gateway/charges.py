"""What a forwarded call is charged when it settles, priced before any lock
is taken: pricing reads the answer's usage, the request and the price
table, none of which another call moves, so a settle holds its agent's,
group's and tag's locks (`plane.gateway.admission`) only for the ledger's
write, which the admissions weighed under those locks must see.

A call that answered with its usage is charged what that usage costs, as
the model that answered (`Charges.answered`); one that ended without it at
the larger of its likely cost and what its provider had announced
(`Charges.unbilled`), never $0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.config import EMBEDDED
from plane.errors import UnknownPrice
from plane.gateway.apis import Bill, Wire
from plane.gateway.asked import Asked
from plane.gateway.containers import Containers
from plane.gateway.estimate import Estimate
from plane.gateway.learned import Settled
from plane.gateway.prompt_parts import pieces_of
from plane.gateway.routing import Upstream
from plane.money.attribution import Part
from plane.money.pricing import Fees, Priced
from plane.wire.protocol import Usage
from plane.wire.words import FLOOR, UNPRICED, tokens, usage_text


@dataclass(frozen=True)
class Call:
    """One forwarded call, written pending as `id`."""

    id: int
    wire: Wire
    spec: AgentSpec
    provider: Upstream
    model: str
    body: dict[str, Any]
    asked: Asked
    estimate: Estimate
    saved: int
    """Characters compression took out of the request."""
    session: str | None
    """The client's session, as its headers (or Claude Code's metadata) name it."""
    tag: str | None = None
    """What the work is for, as the call carried it (`plane.gateway.carried`)."""
    sent: dict[str, Any] | None = None
    """The request as its client sent it, before compression, for the loop
    guard to read once the call is settled (None: the guard is off)."""
    sent_bytes: int = 0
    """The size of the request's body as its client sent it."""


@dataclass(frozen=True)
class Charge:
    """A call's settle, priced: what the ledger's row is written with, and
    what its conversation line says and the estimates learn of it."""

    usage: Usage
    cost: Decimal
    source: str
    estimated: bool
    line: str
    """Its conversation line, before the cost is said."""
    parts: Sequence[Part] = ()
    renamed: str | None = None
    """The model the ledger's row is to name instead of the one it was opened with."""
    unpriced: bool = False
    learned: Settled | None = None
    floor: bool = False
    """Charged as the model asked for: the one that answered has no known price."""


class Charges:
    def __init__(self, services: Services, containers: Containers) -> None:
        """`containers`: those an agent's calls were billed for, so each is billed once."""
        self._services = services
        self._containers = containers

    def of(self, call: Call, bill: Bill | None, announced: Bill | None) -> Charge:
        """What `call` is charged: from its provider's `bill`, or, without
        one (a cut stream, a reply that could not be read), from what was
        `announced` of it."""
        answer = self._answered(call, bill or announced)
        if bill is not None and bill.usage == Usage() and _fees(bill, call.asked) == Fees():
            bill = None  # an answer that used nothing at all: its usage is unknown, not free
        if bill is None:
            return self._unbilled(call, announced, answer)
        return self._billed(call, bill, answer)

    def _billed(self, call: Call, bill: Bill, answer: _Answer) -> Charge:
        services, model = self._services, answer.priced_as
        if call.asked.searched > bill.searches:  # billed, though its reply does not say so
            bill = replace(bill, searches=call.asked.searched)
        if not bill.variant and call.asked.variant:
            bill = self._as_asked(call, model, bill)
        if bill.containers:  # each billed once, by the call that made it
            now = services.clock.now()
            made = self._containers.new(call.spec.name, bill.containers, now)
            bill = replace(bill, containers=made)
        line = f"{answer.model} · {usage_text(bill.usage)}" + _tools_used(bill)
        price = _priced(services.pricer.price, model, bill, call.asked)
        renamed = answer.renamed
        if price is None:
            return Charge(bill.usage, Decimal(0), UNPRICED, True, line, (), renamed, True)
        pieces = pieces_of(call.wire.upstream_kind, call.wire.path, call.body)
        parts = services.pricer.attribute(model, pieces, bill.usage, price.cost_usd)
        source, floor = answer.source(price.source), answer.floor
        learned = self._learned(call, bill, price.cost_usd)
        return Charge(
            bill.usage, price.cost_usd, source, floor, line, parts, renamed, False, learned, floor
        )

    def _answered(self, call: Call, bill: Bill | None) -> _Answer:
        """The model that answered a call, and the one it is priced as. The
        upstream bills the one that answered, which a router may have chosen
        over the one asked for (a fallback, an alias): its name in the
        response, else the one the call was sent as. The embedded model
        answers as itself whatever it was called, and may say the name it was
        called by: it is metered as itself.

        One that answered with no known price is priced as the one asked for,
        never at $0: the one rule that neither makes it free nor holds an
        agent for a name its upstream chose. That is a floor, not its cost
        (a router falls back to dearer models too), so the call is marked an
        estimate and its line says the rest is unpriced."""
        named = bill.model if bill is not None else None
        embedded = self._services.config.providers[call.spec.provider].kind == EMBEDDED
        if named is None or named == call.model or embedded:
            return _Answer(call.model, call.model, call.model)
        pricer = self._services.pricer
        if pricer.override_for(call.model) is not None and pricer.override_for(named) is None:
            # The operator priced the name it sends its calls as (a deployment of
            # its own, its own terms): that price is the operator's word for
            # whatever answers there, not a list price found for the name that did.
            return _Answer(call.model, named, call.model, floor=False)
        known = pricer.is_known(named)
        return _Answer(call.model, named, named if known else call.model, floor=not known)

    def _as_asked(self, call: Call, model: str, bill: Bill) -> Bill:
        """A reply that does not say how it was served (fast mode, a service
        tier) is charged as its call asked, where that is the dearer: a
        server that ignored a cheaper tier asked for billed the standard one."""
        asked = replace(bill, variant=dict(call.asked.variant))
        price = self._services.pricer.price
        dearer = _priced(price, model, asked, call.asked)
        plain = _priced(price, model, bill, call.asked)
        if dearer is not None and plain is not None and dearer.cost_usd > plain.cost_usd:
            return asked
        return bill

    def _learned(self, call: Call, bill: Bill, cost: Decimal) -> Settled:
        """What a call settled from its bill teaches the next estimates: its
        cost against its estimated prompt with its real answers, served as it was."""
        expected = Usage(input_tokens=call.estimate.prompt, output_tokens=bill.usage.output_tokens)
        base = self._services.pricer.price(
            call.model, expected, searches=call.asked.searched, variant=bill.variant
        )
        return Settled(
            call.id,
            call.spec.name,
            base.cost_usd,
            call.estimate.unknown,
            call.asked.choices,
            cost,
            bill.usage.input_tokens,
            bill.usage.output_tokens,
            bill.response_id,
            call.asked.context_key,
        )

    def _unbilled(self, call: Call, announced: Bill | None, answer: _Answer) -> Charge:
        """A call settled without its usage: at the larger of its likely cost
        and what the provider announced of it (`announced`: a stream cut; None:
        a whole reply whose usage was missing or not counts). The answer a
        cut stream carried counts too, a token a piece at least: the
        provider wrote it, and bills it, whoever read it."""
        likely, model, renamed = call.estimate.likely, answer.model, answer.renamed
        seen = announced.usage if announced is not None else Usage()
        written = announced.written if announced is not None else 0
        came = "was announced"
        if announced is not None and written > seen.output_tokens:
            seen = seen.model_copy(update={"output_tokens": written})
            announced, came = replace(announced, usage=seen), "came"
        beyond = self._beyond(call, answer, announced, written)
        said = _priced(self._services.pricer.price, answer.priced_as, announced, call.asked)
        floor = answer.floor
        if said is not None and said.cost_usd > likely + beyond:
            line = f"{model} · cut after {usage_text(seen)} {came}, charged that"
            source = answer.source(said.source)
            return Charge(seen, said.cost_usd, source, True, line, (), renamed, floor=floor)
        line = f"{model} · cut before its usage, charged at its estimate"
        if beyond:
            line += f" with the {tokens(written)} out it passed on"
        if announced is None:
            line = f"{model} · no usage the plane could read, charged at its estimate"
        return Charge(seen, likely + beyond, "estimate", True, line, (), renamed, floor=floor)

    def _beyond(self, call: Call, answer: _Answer, announced: Bill | None, written: int) -> Decimal:
        """What the answer a cut stream carried cost past the answer its
        likely cost counts (`Estimate.likely_answers`)."""
        beyond = written - call.estimate.likely_answers
        if announced is None or beyond <= 0:
            return Decimal(0)
        extra = replace(announced, usage=Usage(output_tokens=beyond), searches=0)
        extra = replace(extra, file_searches=0, containers=())
        priced = _priced(self._services.pricer.price, answer.priced_as, extra, call.asked)
        return Decimal(0) if priced is None else priced.cost_usd


def _priced(
    price: Callable[..., Priced], model: str, bill: Bill | None, asked: Asked
) -> Priced | None:
    """What `bill` costs; None without one, or with no price known for the model."""
    if bill is None or bill.usage == Usage():
        return None
    try:
        return price(model, bill.usage, variant=bill.variant, fees=_fees(bill, asked))
    except UnknownPrice:
        return None


def _fees(bill: Bill, asked: Asked) -> Fees:
    """What the call's server tools used that is billed by the use: each
    container at the memory its request asked for."""
    gb = len(bill.containers) * asked.container_gb
    return Fees(bill.searches, bill.file_searches, gb)


def _tools_used(bill: Bill) -> str:
    """The server tools' uses a call is billed for, as its line says them."""
    said = ""
    for count, one, many in (
        (bill.searches, "web search", "web searches"),
        (bill.file_searches, "file search", "file searches"),
        (len(bill.containers), "code container", "code containers"),
    ):
        if count:
            said += f" · {count} {one if count == 1 else many}"
    return said


@dataclass(frozen=True)
class _Answer:
    """Who answered a call, and as which model it is priced (`Charges._answered`)."""

    asked: str
    """The model the call was sent as."""
    model: str
    """The model that answered it."""
    priced_as: str
    floor: bool = False
    """Priced as the model asked for because the one that answered has no
    known price: what it cost is at least that, not that."""

    @property
    def renamed(self) -> str | None:
        """The model the ledger's row is to name instead of the one it was opened with."""
        return self.model if self.model != self.asked else None

    def source(self, priced: str) -> str:
        """The ledger's price source for a price found as `priced_as`."""
        if self.floor:
            return f"{priced}, as {self.asked}: {self.model} answered, {FLOOR}"
        if self.priced_as != self.model:
            return f"{priced}, as {self.asked}: {self.model} answered"
        return priced
