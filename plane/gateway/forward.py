"""One gateway call: who sends it, whether the agent may spend, the ledger,
the upstream, the ledger again, then the client's conversation line.

The order is the plane's: the gate is asked before any byte of a success is
sent; the call is written pending with an estimate before it is forwarded;
it is settled from the upstream's usage, and a stream that ended without
its usage (cut by the upstream, or by a client that left) is charged at its
estimate, never $0. A call the upstream refused or never answered bought
nothing and is marked failed. A call cancelled mid-flight (the plane
stopping) stays pending, and the next start counts its estimate.

The gate and the pending write happen under the agent's lock, so calls
arriving together each see the estimates of those before them: a ceiling is
overshot by at most the calls already in flight when it was reached.

HTTP itself is the listener's (`plane.daemon.http`); this module sees a
request as path, headers and bytes, and answers through a `Responder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import httpx

from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.config import EMBEDDED, EMBEDDED_MODEL
from plane.errors import NoSuchAgent, ProviderError, UnknownPrice
from plane.gateway.keys import Keys
from plane.gateway.routing import (
    Upstream,
    presented_key,
    session,
    upstream,
)
from plane.gateway.wire import (
    Wire,
    asks_for_an_hour,
    event_data,
    prompt_tokens_estimate,
    sse_events,
)
from plane.money.gate import Hold
from plane.money.ledger import FleetFull
from plane.wire.protocol import Usage
from plane.wire.words import UNPRICED, tokens, turn_cost, usage_text

log = logging.getLogger(__name__)

UNKNOWN_KEY = (
    "This key is not a gateway agent's key. `plane key AGENT` makes one for an agent "
    "with a `gateway:` block in agents.yaml."
)


class Responder(Protocol):
    """How the gateway answers its client (the listener implements it)."""

    async def whole(self, status: int, body: bytes, headers: Mapping[str, str]) -> None: ...

    async def open(self, status: int, headers: Mapping[str, str]) -> None: ...

    async def write(self, chunk: bytes) -> None: ...

    def abort(self) -> None:
        """Break the connection: the upstream broke its stream, and the client
        must not take what came before for a whole answer."""


class Refused(Exception):
    """A call answered with an error of the client's API, before the ledger."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.body = body
        """The whole error, when it is more than the API's usual shape."""


class Gateway:
    def __init__(
        self,
        services: Services,
        keys: Keys,
        *,
        publish: Callable[[str], Awaitable[object]],
        spend_notices: Callable[[str], Awaitable[None]],
        tell_hold: Callable[[str, Hold | None], Awaitable[None]],
        transport: httpx.AsyncBaseTransport | None = None,
        embedded: Callable[[], tuple[str, str | None] | None] = lambda: None,
    ) -> None:
        """`publish` sends an agent's row to the clients; `spend_notices`
        says the day's warning and ceiling notices; `tell_hold` why a call was
        refused, once a held spell (all three the crew's);
        `embedded` the embedded model's base URL and key, while it runs."""
        self._services = services
        self._embedded = embedded
        self._keys = keys
        self._publish = publish
        self._spend_notices = spend_notices
        self._tell_hold = tell_hold
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(600, connect=30), transport=transport, trust_env=False
        )
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def aclose(self) -> None:
        await self._http.aclose()

    def agent(self, headers: Mapping[str, str]) -> AgentSpec:
        """The gateway agent this key is, or `Refused` (401)."""
        name = self._keys.agent_of(presented_key(headers))
        try:
            spec = self._services.roster.get(name) if name else None
        except NoSuchAgent:
            spec = None
        if spec is None or spec.gateway is None:
            raise Refused(401, UNKNOWN_KEY)
        return spec

    async def passthrough(
        self, wire: Wire, path: str, headers: Mapping[str, str], raw: bytes, out: Responder
    ) -> None:
        """A call that buys nothing (`/v1/messages/count_tokens`): the agent's key is
        checked, and the upstream's answer is passed on; nothing is metered."""
        try:
            spec = self.agent(headers)
            provider = self._upstream(wire, spec)
        except Refused as refused:
            body = json.dumps(wire.error(refused.status, str(refused))).encode()
            await out.whole(refused.status, body, {})
            return
        try:
            response = await self._http.post(
                provider.url(wire, path), content=raw, headers=provider.headers(wire, headers)
            )
        except httpx.HTTPError as exc:
            message = f"The plane could not reach {spec.name}'s provider {spec.provider!r} ({exc})."
            await out.whole(502, json.dumps(wire.error(502, message)).encode(), {})
            return
        kind = response.headers.get("content-type", "application/json")
        await out.whole(response.status_code, response.content, {"content-type": kind})

    def models(self, headers: Mapping[str, str]) -> list[str]:
        """The models the agent's client may name: its own, and its provider's."""
        return _models_of(self.agent(headers), self._services)

    async def handle(
        self, wire: Wire, headers: Mapping[str, str], raw: bytes, out: Responder
    ) -> None:
        try:
            spec = self.agent(headers)
            body = _body(raw)
            provider = self._upstream(wire, spec)
            body, saved = await self._compressed(wire, spec, body)
            model = body.get("model")
            if not isinstance(model, str) or not model:
                raise Refused(400, "The request names no model.")
            if self._services.config.providers[spec.provider].kind == EMBEDDED:
                model = EMBEDDED_MODEL  # it answers as itself whatever it is called: metered so
            call, estimate = await self._open(wire, spec, model, body)
            opened = _Call(
                call, wire, spec, provider, model, body, estimate, saved, session(headers)
            )
        except Refused as refused:
            shaped = refused.body or wire.error(refused.status, str(refused))
            error = json.dumps(shaped).encode()
            await out.whole(refused.status, error, refused.headers)
            return
        await self._forward(opened, headers, out)

    async def _compressed(
        self, wire: Wire, spec: AgentSpec, body: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        """Tool results compressed, for an agent that asked (`gateway: {compress: true}`);
        in a thread, as the plane's own tool output is (the engine and the ref store block)."""
        refs = self._services.refs
        if spec.gateway is None or not spec.gateway.compress or refs is None:
            return body, 0
        return await asyncio.to_thread(wire.compressed, body, refs.put)

    def _upstream(self, wire: Wire, spec: AgentSpec) -> Upstream:
        try:
            found = upstream(self._services.config.providers[spec.provider], self._embedded())
        except ProviderError as exc:
            raise Refused(503, f"{spec.name}'s provider {spec.provider!r}: {exc}") from None
        if wire.upstream_kind not in found.speaks:
            raise Refused(
                400,
                f"{spec.name}'s provider {spec.provider!r} does not speak {wire.name}; "
                f"point this client at the plane's API that provider speaks.",
            )
        return found

    async def _open(
        self, wire: Wire, spec: AgentSpec, model: str, body: dict[str, Any]
    ) -> tuple[int, Decimal]:
        """Ask the gate, then write the call pending: one step per agent."""
        services = self._services
        known = services.pricer.is_known(model)
        async with self._locks[spec.name]:
            hold = await services.gate.hold(spec.name, price_known=known, model=model)
            await self._tell_hold(spec.name, hold)
            if hold is not None:
                status, error, extra = wire.held(hold.notice, self._seconds_to_reset())
                raise Refused(status, hold.notice, extra, error)
            estimate = Decimal(0)
            if known:
                estimate = services.pricer.estimate(
                    model,
                    prompt_tokens_estimate(body),
                    wire.max_output(body),
                    hour_cache=asks_for_an_hour(body),
                )
            try:
                call = await services.ledger.open_call(
                    spec.name,
                    spec.provider,
                    model,
                    estimate,
                    "estimate" if known else UNPRICED,
                    fleet_ceiling=services.gate.ceilings.fleet(),
                )
            except FleetFull as full:  # refused at admission: held, as by the gate
                notice = services.gate.fleet_notice(spec.name, full.spent, full.ceiling)
                await self._tell_hold(spec.name, Hold("fleet", notice))
                status, error, extra = wire.held(notice, self._seconds_to_reset())
                raise Refused(status, notice, extra, error) from None
        return call, estimate

    def _seconds_to_reset(self) -> int:
        services = self._services
        left = (services.gate.resets_at() - services.clock.now()).total_seconds()
        return max(1, math.ceil(left))

    async def _forward(self, call: _Call, headers: Mapping[str, str], out: Responder) -> None:
        wire, spec = call.wire, call.spec
        request = self._http.build_request(
            "POST",
            call.provider.url(wire),
            json=wire.upstream_body(call.body),
            headers=call.provider.headers(wire, headers),
        )
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            await self._services.ledger.fail(call.id)
            message = f"The plane could not reach {spec.name}'s provider {spec.provider!r} ({exc})."
            await out.whole(502, json.dumps(wire.error(502, message)).encode(), {})
            return
        try:
            if response.status_code != 200:
                await self._refused_upstream(response, call, out)
            elif response.headers.get("content-type", "").startswith("text/event-stream"):
                await self._stream(call, response, out)
            else:
                await self._whole(call, response, out)
        finally:
            await response.aclose()

    async def _refused_upstream(
        self, response: httpx.Response, call: _Call, out: Responder
    ) -> None:
        """The upstream's own error, passed on as it said it: nothing was bought."""
        body = await response.aread()
        await self._services.ledger.fail(call.id)
        passed = {"content-type": response.headers.get("content-type", "application/json")}
        if "retry-after" in response.headers:
            passed["retry-after"] = response.headers["retry-after"]
        await out.whole(response.status_code, body, passed)

    async def _whole(self, call: _Call, response: httpx.Response, out: Responder) -> None:
        try:
            raw = await response.aread()
            usage = call.wire.usage_of(json.loads(raw))
        except (httpx.HTTPError, ValueError, AttributeError):
            # It answered, so it may have billed: the estimate, never nothing.
            await self._settle(call, None)
            message = f"{call.spec.name}'s provider sent a reply the plane could not read."
            await out.whole(502, json.dumps(call.wire.error(502, message)).encode(), {})
            return
        await self._settle(call, usage)
        await out.whole(200, raw, {"content-type": "application/json"})

    async def _stream(self, call: _Call, response: httpx.Response, out: Responder) -> None:
        meter = call.wire.meter(call.body)
        pending = bytearray()
        tail: list[bytes] = []
        """From the event that carries the final usage on: sent once the call is settled,
        so a client that has seen its stream end finds the call in the ledger."""
        try:
            await out.open(200, {"content-type": "text/event-stream", "cache-control": "no-cache"})
            async for chunk in response.aiter_bytes():
                pending += chunk
                for event in sse_events(pending):
                    data = event_data(event)
                    shown = data is None or meter.feed(data)
                    if shown and meter.done:
                        tail.append(event)
                    elif shown:
                        await out.write(event)
        except httpx.HTTPError as exc:
            log.info("%s: the upstream cut a stream (%s)", call.spec.name, exc)
            out.abort()
        except OSError as exc:  # the client left
            log.info("%s: the client left a stream (%s)", call.spec.name, exc)
        await self._settle(call, meter.usage if meter.done else None)
        with contextlib.suppress(OSError):  # a client that left misses only the end
            for event in tail:
                await out.write(event)

    async def _settle(self, call: _Call, usage: Usage | None) -> None:
        """Settle from the usage; without it (a cut stream, a broken body), at the estimate."""
        services, agent, model = self._services, call.spec.name, call.model
        ledger = services.ledger
        unpriced = False
        if usage is None:
            seen = Usage()
            charge = await ledger.settle(call.id, seen, call.estimate, "estimate", estimated=True)
            line = f"{model} · cut before its usage, charged at its estimate"
        else:
            seen = usage
            try:
                price = services.pricer.price(model, usage)
            except UnknownPrice:
                unpriced = True
                charge = await ledger.settle(call.id, usage, Decimal(0), UNPRICED, estimated=True)
            else:
                charge = await ledger.settle(call.id, usage, price.cost_usd, price.source)
            line = f"{model} · {usage_text(seen)}"
        line += f" · {UNPRICED if unpriced else turn_cost(charge.cost_usd)}"
        if call.saved:
            line += f" · compression saved {tokens(call.saved)} chars"
        if call.session:
            line += f" · session {call.session}"
        if services.savings is not None:  # the charts' and /metrics' "compression saved"
            await services.savings.record(agent, model, call.saved, charge.day)
        cost = None if unpriced else charge.cost_usd  # unknown, not $0
        await services.say(agent, "cost", line, cost_usd=cost, usage=seen)
        await self._publish(agent)
        await self._spend_notices(agent)


@dataclass(frozen=True)
class _Call:
    """One forwarded call, written pending as `id`."""

    id: int
    wire: Wire
    spec: AgentSpec
    provider: Upstream
    model: str
    body: dict[str, Any]
    estimate: Decimal
    saved: int
    """Characters compression took out of the request."""
    session: str | None
    """The client's session, as its headers name it."""


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        raise Refused(400, "The request body is not JSON.") from None
    if not isinstance(body, dict):
        raise Refused(400, "The request body is not a JSON object.")
    return body


def _models_of(spec: AgentSpec, services: Services) -> list[str]:
    offered = services.config.providers[spec.provider].models
    return list(dict.fromkeys([spec.model, *offered]))
