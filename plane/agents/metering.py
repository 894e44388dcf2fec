"""One metered LLM call: ledger first, then the provider, then the ledger again.

The call is written pending with an estimate before it is sent, settled with
the provider's usage when the answer arrives, and only then does anything
about it reach a client. A call that raised (no response) is marked failed
and costs nothing; a call cancelled mid-flight (the plane shutting down)
stays pending, so the next start counts its estimate as interrupted.

Under a ceiling above the agent's (the fleet's, its group's), the call is
admitted as it is written, counting every call in flight at its estimate:
the most each may cost, so the day ends at most one call over. A call
refused only for those (what was spent is under the ceiling) is no hold,
and nothing is said of it: it waits until a call closes, and is admitted
again (`_admitted`).

With several planes, a call admitted while this plane held the agent's
lease is sent only if it still does by this machine's clock once the
admission is back (a plane paused or cut off between the two sends
nothing): otherwise the call is closed as failed, unsent, and the turn ends
(`LeaseLost`). A call in flight when the lease could have run out by the
database's (no renewal came: the plane cut off) is cancelled and the turn
ends the same way, so no two planes' calls for one agent are in flight at
once. It may have been billed, so it counts its estimate, interrupted:
written by this plane under the turn's fence (its renewal may only have come
late, and then no other plane would ever sweep it), or, when another plane
has taken the agent, by that plane's sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from plane.agents.services import Services
from plane.errors import AlreadyClosed, LeaseLost, LedgerError, ProviderError, UnknownPrice
from plane.history.folds import Folds
from plane.money.attribution import NO_HISTORY, HistoryPieces, Piece, add_message, of_request
from plane.money.ledger import Charge, Full, Ledger
from plane.providers.base import (
    BrokenReply,
    ChatMessage,
    Completion,
    CompletionRequest,
    ToolSpec,
)
from plane.providers.once import OncePerObject
from plane.wire.protocol import TextDelta, Usage
from plane.wire.words import UNPRICED, whole_text

log = logging.getLogger(__name__)

IN_FLIGHT_RECHECK_S = 1.0
"""How long a call held back by calls in flight waits for one of this
plane's to close before it asks again: another plane's closing is not told
here."""


@dataclass(frozen=True)
class Metered:
    completion: Completion
    charge: Charge
    priced: bool
    failure: str | None = None
    """The provider answered but the reply was unusable: charged, then stopped."""


HistoryFigures = tuple[int, HistoryPieces]
"""A history's characters (the estimate's) and its pieces (cost by tool's)."""


def _add(figures: HistoryFigures, message: ChatMessage) -> HistoryFigures:
    return figures[0] + len(message.content), add_message(figures[1], message)


_HISTORIES = Folds((0, NO_HISTORY), _add)
"""Each history's figures, kept for its next call (`plane.history.folds`)."""


def _estimated_chars(tool: ToolSpec) -> int:
    return len(str(tool.parameters)) + len(tool.description)


_tool_chars = OncePerObject(_estimated_chars)
"""A tool's characters in the estimate, once a tool (`plane.providers.once`)."""
_tools_chars: OncePerObject[tuple[ToolSpec, ...], int] = OncePerObject(
    lambda tools: sum(map(_tool_chars, tools))
)
"""And a call's tools', once the toolbox's tuple of them (the same from call to call)."""


def prompt_tokens_estimate(request: CompletionRequest) -> int:
    chars = len(request.system) + _HISTORIES.fold(request.messages)[0]
    chars += _tools_chars(request.tools)
    return math.ceil(chars / 3.5)


async def metered_call(
    services: Services,
    agent: str,
    provider_name: str,
    request: CompletionRequest,
    turn: int,
    counted: Callable[[Decimal], object] | None = None,
) -> Metered:
    """The call, written pending, made, and settled at its cost before
    anything of it is shown. `counted` is told the cost once it is written,
    even if the turn is cut meanwhile (`Ledger.settle`)."""
    provider = services.providers[provider_name]
    known = services.pricer.is_known(request.model)
    estimate = (
        services.pricer.estimate(
            request.model, prompt_tokens_estimate(request), request.max_output_tokens
        )
        if known
        else Decimal(0)
    )
    ledger = services.ledger
    source = "estimate" if known else UNPRICED  # in flight, cut or swept: never read as $0
    call = await _admitted(services, agent, provider_name, request.model, estimate, source)
    if ledger.plane is not None and not services.ownership.owns(agent):
        await ledger.fail(call)  # not sent: nothing was bought
        raise LeaseLost(f"{agent}'s lease ran low before its call was sent")

    async def on_text(text: str) -> None:
        services.emit(TextDelta(agent=agent, turn=turn, text=whole_text(text)))

    try:
        completion = whole(
            await services.ownership.within_lease(
                agent, provider.complete(request, on_text=on_text)
            )
        )
    except LeaseLost:
        await _cut(ledger, call)
        raise
    except BrokenReply as broken:
        # It answered, so it may have billed: charge the estimate, never nothing.
        charge, priced = await _settle(
            services, call, request.model, broken.usage, estimated=True, counted=counted
        )
        nothing = Completion("", (), broken.usage, request.model, usage_estimated=True)
        return Metered(nothing, charge, priced, failure=str(broken))
    except ProviderError:
        await ledger.fail(call)
        raise
    pieces = (
        ()
        if completion.usage_estimated
        else of_request(request, _HISTORIES.fold(request.messages)[1])
    )
    charge, priced = await _settle(
        services,
        call,
        request.model,
        completion.usage,
        estimated=completion.usage_estimated,
        pieces=pieces,
        counted=counted,
    )
    return Metered(completion, charge, priced)


async def _admitted(
    services: Services, agent: str, provider: str, model: str, estimate: Decimal, source: str
) -> int:
    """The call written pending at `estimate`, admitted under the ceilings
    above its agent's (the fleet's, its group's). One refused only because
    the calls in flight count the most each may cost (`Full.by_calls_in_flight`:
    what was spent is under the ceiling) is no hold: it waits until a call
    closes and is admitted again, with the ceilings as they are then (a
    `/limit group NAME 0` meanwhile stops it). Each call in flight still counts
    its most, so the day ends at most one call over, as before."""
    ledger, ceilings = services.ledger, services.gate.ceilings
    while True:
        seen = ledger.closes
        try:
            return await ledger.open_call(
                agent,
                provider,
                model,
                estimate,
                source,
                fleet_ceiling=ceilings.fleet(),
                group=ceilings.groups.budget(agent),
            )
        except Full as full:
            if not full.by_calls_in_flight:
                raise
            log.debug("%s's call waits for the calls in flight: %s", agent, full)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ledger.after_close(seen), IN_FLIGHT_RECHECK_S)


def whole(completion: Completion) -> Completion:
    """The completion with each lone surrogate a model wrote (valid JSON, not
    text: nothing could store or show it) as U+FFFD (`whole_text`)."""
    calls = tuple(
        replace(
            call,
            id=whole_text(call.id),
            name=whole_text(call.name),
            arguments=whole_text(call.arguments),
        )
        for call in completion.tool_calls
    )
    return replace(completion, text=whole_text(completion.text), tool_calls=calls)


async def _cut(ledger: Ledger, call: int) -> None:
    """The call, cut with its lease running low, counted at its estimate by
    this plane, which may still hold the lease (its renewal only late): no
    other plane would ever sweep it. If another plane took the agent, its
    sweep counted the call already; if the store stays away past the
    ledger's patience, the lease has run out meanwhile, and the renewal that
    takes it anew sweeps the call. If its answer settled it meanwhile (or
    the operator's cut counted it), it is closed already: nothing to cut."""
    try:
        await ledger.cut(call)
    except AlreadyClosed as exc:
        log.info("a call of %s cut in flight was closed already: %s", ledger.plane, exc)
    except (LeaseLost, LedgerError) as exc:
        log.info("a call of %s cut in flight is left to the sweep: %s", ledger.plane, exc)


async def _settle(
    services: Services,
    call: int,
    model: str,
    usage: Usage,
    *,
    estimated: bool,
    pieces: Sequence[Piece] = (),
    counted: Callable[[Decimal], object] | None = None,
) -> tuple[Charge, bool]:
    """Settle the call; with the request's `pieces`, its cost is attributed
    to them (cost by tool) in the same transaction."""
    try:
        price = services.pricer.price(model, usage)
    except UnknownPrice:
        charge = await services.ledger.settle(
            call, usage, Decimal(0), UNPRICED, estimated=True, counted=counted
        )
        return charge, False
    parts = services.pricer.attribute(model, pieces, usage, price.cost_usd) if pieces else ()
    charge = await services.ledger.settle(
        call,
        usage,
        price.cost_usd,
        price.source,
        estimated=estimated,
        parts=parts,
        counted=counted,
    )
    return charge, True
