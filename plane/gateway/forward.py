"""One gateway call: who sends it, whether the agent may spend, the ledger,
the upstream, the ledger again, then the client's conversation line.

The order is the plane's: the gate is asked before any byte of a success is
sent; the call is written pending at its likely cost before it is forwarded;
it is settled from the upstream's usage, and a stream that ended without
its usage (cut by the upstream, or by a client that left) is charged the
larger of its likely cost and what the provider had already announced,
never $0. A call the upstream refused or never answered bought nothing and
is marked failed, as is an Anthropic stream failed before it started (an
`error` event before any usage or piece of the answer), which Anthropic
documents it does not bill. A call cancelled mid-flight (the plane stopping) stays
pending, and the next start counts its estimate.

Admission is weighed in dollars (`plane.gateway.admission`), under the
agent's lock (and its group's and its tag's, where they have a ceiling),
which the pending write and every settle also take: calls arriving
together each see those before them, and a call that must wait for calls
in flight is woken by each one that settles.

HTTP itself is the listener's (`plane.daemon.http`); this module sees a
request as path, headers and bytes, and answers through a `Responder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

import aiohttp

from plane.agents import notices
from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.agents.workers import Workers
from plane.config import EMBEDDED, EMBEDDED_MODEL
from plane.errors import LedgerError, NoSuchAgent, ProviderError
from plane.gateway.admission import WAIT_S, Admission, TagFullSaid
from plane.gateway.apis import Bill, StreamMeter, Wire, sse_events
from plane.gateway.carried import session_of, tag_of
from plane.gateway.charges import Call, Charge, Charges
from plane.gateway.containers import Containers
from plane.gateway.keys import Keys
from plane.gateway.learned import Learning
from plane.gateway.refused import GatewayRefused
from plane.gateway.repeats import LOOKS
from plane.gateway.routing import Upstream, presented_key, upstream
from plane.money.limits import Priced, steps_down
from plane.providers import connections
from plane.store.engine import Database
from plane.wire.protocol import Usage
from plane.wire.words import UNPRICED, at_a_floor, tokens, turn_cost

__all__ = ["Gateway", "Responder"]

log = logging.getLogger(__name__)

UPSTREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, connect=30, sock_read=600)
"""Connecting may take 30 s; each read of a stream (a model thinking) up to 10 minutes."""

NESTED = "The request body is nested deeper than the plane reads."
MOST_NESTING = 200
"""How deep a request body's arrays and objects may nest: far past any
client's (tool schemas included), well within what every reader of it in
the plane (the estimate, compression, attribution, the loop guard) can walk."""

LOOK_HERE_BYTES = 8192
"""A request up to this size is read for the loop guard on the event loop
(tens of microseconds, less than handing it to a thread and back); a
larger one in a thread."""

UNKNOWN_KEY = (
    "This key is not a gateway agent's key. `plane key AGENT` makes one for an agent "
    "with a `gateway:` block in agents.yaml."
)


class Responder(Protocol):
    """How the gateway answers its client (the listener implements it)."""

    async def whole(self, status: int, body: bytes, headers: Mapping[str, str]) -> bool:
        """The whole answer; False when the client had left and nobody got it."""

    async def open(self, status: int, headers: Mapping[str, str]) -> None: ...

    async def write(self, chunk: bytes) -> None: ...

    def abort(self) -> None:
        """Break the connection: the upstream broke its stream, and the client
        must not take what came before for a whole answer."""

    def gone(self) -> bool:
        """The client has closed its connection: nobody will read an answer."""


class Gateway:
    def __init__(
        self,
        services: Services,
        workers: Workers,
        keys: Keys,
        db: Database,
        *,
        changed: Callable[[str], None],
        spend_notices: Callable[[str], Awaitable[None]],
        connect: connections.Connect | None = None,
        embedded: Callable[[], tuple[str, str | None] | None] = lambda: None,
        wait_s: float = WAIT_S,
        tag_full: TagFullSaid | None = None,
    ) -> None:
        """`workers` are told the model each agent's client names and why a
        call was refused (admission's); `changed` tells the rows an agent's
        row changed (shown to whoever watches, `Rows.changed`); `spend_notices`
        says the day's warning and ceiling notices (after a turn's); `embedded`
        the embedded model's base URL and key, while it runs;
        `db` keeps what the estimates learn (`plane.gateway.learned`);
        `connect` replaces the network (`plane.providers.connections`);
        `tag_full` is told of a call its tag's ceiling refused (the alerts')."""
        self._services = services
        self._embedded = embedded
        self._keys = keys
        self._changed = changed
        self._spend_notices = spend_notices
        # The providers' pool: no cap on calls in flight, idle connections kept.
        self._http = connections.session(connect, UPSTREAM_TIMEOUT)
        self._workers = workers
        self._flying: defaultdict[str, dict[int, _Flight]] = defaultdict(dict)
        """Each agent's calls in flight, and whether another call of its
        overlapped them: a fan-out (parallel calls, the same one sent many
        times at once) is not one conversation going round, and the loop
        guard does not see it. A call whose client has left overlaps nothing
        that comes after: a client that cuts its stream and asks again is
        one conversation, while the plane is still finishing the call it left."""
        self._charges = Charges(services, Containers())
        self.learning = Learning(db)
        self.admission = Admission(services, workers, self.learning, wait_s, tag_full)

    async def aclose(self) -> None:
        await self._http.close()

    def agent(self, headers: Mapping[str, str]) -> AgentSpec:
        """The gateway agent this key is, or `GatewayRefused` (401)."""
        name = self._keys.agent_of(presented_key(headers))
        try:
            spec = self._services.roster.get(name) if name else None
        except NoSuchAgent:
            spec = None
        if spec is None or spec.gateway is None:
            raise GatewayRefused(401, UNKNOWN_KEY)
        return spec

    def _still(self, spec: AgentSpec, headers: Mapping[str, str]) -> None:
        """The key is still `spec`'s agent's, or `GatewayRefused` (401), as
        for a key that is no agent's: a call that waited for room while its
        key was replaced is not sent. A call already sent finishes."""
        if self.agent(headers).name != spec.name:
            raise GatewayRefused(401, UNKNOWN_KEY)

    async def passthrough(
        self, wire: Wire, path: str, headers: Mapping[str, str], raw: bytes, out: Responder
    ) -> None:
        """A call that buys nothing (`/v1/messages/count_tokens`): the agent's key is
        checked, and the upstream's answer is passed on; nothing is metered."""
        try:
            spec = self.agent(headers)
            provider = self._upstream(wire, spec)
        except GatewayRefused as refused:
            body = json.dumps(wire.error(refused.status, str(refused))).encode()
            await out.whole(refused.status, body, {})
            return
        sent = provider.headers(wire, headers) | {"content-type": "application/json"}
        try:
            async with self._http.post(
                provider.url(wire, path), data=raw, headers=sent, allow_redirects=False
            ) as response:
                body = await response.read()
        except aiohttp.ClientError as exc:
            message = f"The plane could not reach {spec.name}'s provider {spec.provider!r} ({exc})."
            await out.whole(502, json.dumps(wire.error(502, message)).encode(), {})
            return
        kind = response.headers.get("content-type", "application/json")
        await out.whole(response.status, body, {"content-type": kind})

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
            sent = body  # as its client sent it: what the loop guard sees
            body, saved = await self._compressed(wire, spec, body)
            model = body.get("model")
            if not isinstance(model, str) or not model:
                raise GatewayRefused(400, "The request names no model.")
            if self._services.config.providers[spec.provider].kind == EMBEDDED:
                model = EMBEDDED_MODEL  # it answers as itself whatever it is called: metered so
            named = model
            model, body = await self._stepped_down(spec, model, body)
            wide = "context-1m" in headers.get("anthropic-beta", "")
            asked = wire.asked(body)
            tag = tag_of(headers, body, wire.upstream_kind)
            client_session = session_of(headers, body)
            call, estimate = await self.admission.open(
                wire,
                spec,
                model,
                asked,
                wide,
                tag=tag,
                session=client_session,
                still=lambda: self._still(spec, headers),
            )
            self._workers[spec.name].client_model = named  # its row: what it asked for
            opened = Call(
                call,
                wire,
                spec,
                provider,
                model,
                body,
                asked,
                estimate,
                saved,
                client_session,
                tag=tag,
                sent=sent if self._workers[spec.name].guard.settings.enabled else None,
                sent_bytes=len(raw),
            )
        except GatewayRefused as refused:
            shaped = refused.body or wire.error(refused.status, str(refused))
            error = json.dumps(shaped).encode()
            await out.whole(refused.status, error, refused.headers)
            return
        flying = self._flying[spec.name]
        answering = [flight for flight in flying.values() if not flight.out.gone()]
        for flight in answering:
            flight.overlapped = True
        flying[opened.id] = _Flight(out, overlapped=bool(answering))
        await self._forward(opened, headers, out)

    async def _compressed(
        self, wire: Wire, spec: AgentSpec, body: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        """Tool results compressed, for an agent that asked (`gateway: {compress: true}`);
        in a thread, as the plane's own tool output is (the engine and the ref store block).
        A request with no tool result is passed as it came, with no thread's hop."""
        refs, compressing = self._services.refs, self._services.config.compression.enabled
        if spec.gateway is None or not spec.gateway.compress or refs is None or not compressing:
            return body, 0
        if not wire.has_results(body):
            return body, 0
        return await asyncio.to_thread(wire.compressed, body, refs.put)

    async def _stepped_down(
        self, spec: AgentSpec, model: str, body: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """The model the call is sent with: the client's, or from its agent's
        `fallback.at` of its ceiling the fallback (only when its own block
        sets one), said once per switch, as its going back the same day is.
        The upstream answers as that model, so the response's `model` and the
        call's line name the one that answered."""
        fallback, services = spec.fallback, self._services
        if fallback is None or model == fallback.model:
            return model, body
        ceiling = services.gate.ceilings.of(spec.name)
        spent = await services.ledger.spend_today(spec.name)
        spent -= services.ledger.in_flight(spec.name)
        day = await services.ledger.today()
        priced = Priced(floor_priced=self._workers[spec.name].floor_today)
        if ceiling is None or not steps_down(spent, ceiling, fallback.at):
            if await services.conversation.forget_today(
                spec.name, "fallback", day, services.gate.ceilings.changes
            ):
                # Its ceiling was raised or removed while it ran on its fallback.
                said = notices.back_on(spec.name, model, spent, ceiling, fallback.at, priced)
                await services.add_message(spec.name, "plane", said)
            return model, body
        # One with no price is not switched to: admission holds the agent (`Unpriced`).
        if services.pricer.is_known(fallback.model) and await services.conversation.first_today(
            spec.name, "fallback", day
        ):
            said = notices.stepped_down(
                spec.name, fallback.model, spent, ceiling, fallback.at, priced
            )
            await services.add_message(spec.name, "plane", said)
        return fallback.model, {**body, "model": fallback.model}

    def _upstream(self, wire: Wire, spec: AgentSpec) -> Upstream:
        try:
            found = upstream(self._services.config.providers[spec.provider], self._embedded())
        except ProviderError as exc:
            raise GatewayRefused(503, f"{spec.name}'s provider {spec.provider!r}: {exc}") from None
        if wire.upstream_kind not in found.speaks:
            raise GatewayRefused(
                400,
                f"{spec.name}'s provider {spec.provider!r} does not speak {wire.name}; "
                f"point this client at the plane's API that provider speaks.",
            )
        return found

    async def _forward(self, call: Call, headers: Mapping[str, str], out: Responder) -> None:
        wire, spec = call.wire, call.spec
        sent = call.provider.headers(wire, headers) | {"content-type": "application/json"}
        try:
            await self._exchange(call, sent, out)
        finally:
            self.admission.forget(spec.name, call.id)
            self._flying[spec.name].pop(call.id, None)

    async def _exchange(self, call: Call, headers: dict[str, str], out: Responder) -> None:
        wire, spec = call.wire, call.spec
        if out.gone():  # it left while its call waited for room: nothing is sent, or bought
            log.info("%s: the client left before its call was sent", spec.name)
            await self._fail(call)
            return
        body = connections.json_body(wire.upstream_body(call.body))
        try:
            response = await self._http.post(
                call.provider.url(wire), data=body, headers=headers, allow_redirects=False
            )
        except aiohttp.ClientError as exc:
            await self._fail(call)
            message = f"The plane could not reach {spec.name}'s provider {spec.provider!r} ({exc})."
            await _answer(out, spec.name, 502, json.dumps(wire.error(502, message)).encode(), {})
            return
        try:
            if response.status != 200:
                await self._refused_upstream(response, call, out)
            elif response.headers.get("content-type", "").startswith("text/event-stream"):
                await self._stream(call, response, out)
            else:
                await self._whole(call, response, out)
        finally:
            response.release()

    async def _refused_upstream(
        self, response: aiohttp.ClientResponse, call: Call, out: Responder
    ) -> None:
        """The upstream's own error, passed on as it said it: nothing was bought."""
        try:
            body = await response.read()
        except aiohttp.ClientError:
            body = b""
        await self._fail(call)
        passed = {"content-type": response.headers.get("content-type", "application/json")}
        if "retry-after" in response.headers:
            passed["retry-after"] = response.headers["retry-after"]
        await _answer(out, call.spec.name, response.status, body, passed)

    async def _whole(self, call: Call, response: aiohttp.ClientResponse, out: Responder) -> None:
        try:
            raw = await response.read()
            bill = call.wire.bill_of(json.loads(raw))
        except (aiohttp.ClientError, ValueError, AttributeError):
            # It answered, so it may have billed: the estimate, never nothing.
            await self._settle(call, None, whole=False)
            message = f"{call.spec.name}'s provider sent a reply the plane could not read."
            error = json.dumps(call.wire.error(502, message)).encode()
            await _answer(out, call.spec.name, 502, error, {})
            return
        await self._settle(call, bill)  # bought whether or not its client is still there
        await _answer(out, call.spec.name, 200, raw, {"content-type": "application/json"})

    async def _stream(self, call: Call, response: aiohttp.ClientResponse, out: Responder) -> None:
        """The upstream's events passed on as they come, to the stream's last
        (`StreamMeter.ended`), where the client's answer ends whether or not
        the upstream closes (its connection, left unfinished, is then closed,
        not kept for the next call); the call is settled before that end."""
        meter = call.wire.meter(call.body)
        tail: list[bytes] = []
        """From the event that carries the final usage (or the last event) on: sent once
        the call is settled, so a client that has seen its stream end finds the call in
        the ledger."""
        left = False
        """The client cut the stream (it left while the provider was still answering)."""
        try:
            await out.open(200, {"content-type": "text/event-stream", "cache-control": "no-cache"})
            await self._relay(call, response, meter, out, tail)
        except _UpstreamCut as exc:
            log.info("%s: the upstream cut a stream (%s)", call.spec.name, exc.__cause__)
            out.abort()
        except OSError as exc:  # the client left
            log.info("%s: the client left a stream (%s)", call.spec.name, exc)
            left = True
        if meter.failed:  # the provider failed it before it started, and bills nothing
            await self._fail(call)
        else:
            await self._settle(call, meter.bill, whole=meter.done, watched=meter.done or left)
        with contextlib.suppress(OSError):  # a client that left misses only the end
            await _write(out, tail)

    async def _relay(
        self,
        call: Call,
        response: aiohttp.ClientResponse,
        meter: StreamMeter,
        out: Responder,
        tail: list[bytes],
    ) -> None:
        """Read the upstream's events up to the stream's last, or its end:
        each to the client, or, from the final usage on, to `tail`. The events
        that arrived together go to the client in one write (one send, not
        one an event), as soon as they arrived."""
        pending = bytearray()
        tightened = False
        while chunk := await _upstream(response):
            pending += chunk
            shown_now: list[bytes] = []
            for event in sse_events(pending):
                shown = meter.event(event)
                if meter.announced and not tightened:
                    await _write(out, shown_now)  # what came before, not held for admission
                    tightened = await self._announced(call, meter.usage)
                if shown and (meter.done or meter.ended):
                    tail.append(event)
                elif shown:
                    shown_now.append(event)
                if meter.ended:
                    break
            await _write(out, shown_now)
            if meter.ended:
                return

    async def _announced(self, call: Call, usage: Usage) -> bool:
        """What the provider announced of the call's prompt, to admission; True once told."""
        agent, asked, estimate = call.spec.name, call.asked, call.estimate
        await self.admission.announced(agent, call.id, call.model, asked, estimate, usage)
        return True

    async def _fail(self, call: Call) -> None:
        """No response: nothing was bought, and room is free for those waiting."""
        async with self.admission.closing(call.spec.name, call.id):
            await self._services.ledger.fail(call.id)

    async def _settle(
        self, call: Call, bill: Bill | None, *, whole: bool = True, watched: bool | None = None
    ) -> None:
        """Settle from the provider's bill; a call that ended without it (a cut
        stream, a broken body) at the larger of its likely cost and what the
        provider had announced. Priced before admission's locks are taken
        (`plane.gateway.charges`): they are held for the ledger's write alone,
        and the learned estimates move before the calls waiting for room are
        woken.

        What the loop guard sees of a call is its request, the client's own:
        it is shown a whole answer's (`whole`), and one whose stream its
        client cut (`watched`): what it sent again is the same whoever read
        the answer, so a client that cuts every stream and asks the same
        again repeats itself. Not one the provider cut short (an error in
        its stream, a reset, a reply the plane could not read): the client
        asking again retries, it does not repeat."""
        watched = whole if watched is None else watched
        charged = self._charges.of(call, bill if whole else None, None if whole else bill)
        ledger = self._services.ledger
        async with self.admission.closing(call.spec.name, call.id):
            settled = await ledger.settle(
                call.id,
                charged.usage,
                charged.cost,
                charged.source,
                estimated=charged.estimated,
                parts=charged.parts,
                model=charged.renamed,
            )
            if charged.learned is not None:
                await self.learning.learn(charged.learned)
        try:  # in the ledger now: the answer is the client's, whatever fails after
            # Kept beside the call's line, in the same commit.
            kept = self.learning.keep(charged.learned) if charged.learned is not None else None
            try:
                await self._said(call, charged, settled.day)
            finally:
                if kept is not None:
                    await kept
            if watched:  # one the provider cut short: its retry is no repeat
                await self._watched(call, charged)
        except (LedgerError, sqlite3.Error) as error:
            agent = call.spec.name
            log.warning(
                "%s: call %d was recorded; what is said of it failed: %s", agent, call.id, error
            )

    async def _watched(self, call: Call, charged: Charge) -> None:
        """Show the agent's loop guard the call just settled, unless another
        call of its ran at the same time; a loop it finds holds the agent
        (its next calls refused, said once in its conversation) until the
        operator resumes it. On a shared store the count is the fleet's:
        the calls its client made through every plane (plane/agents/guard_book.py)."""
        worker = self._workers[call.spec.name]
        flight = self._flying[call.spec.name].pop(call.id, None)
        if call.sent is None or flight is None or flight.overlapped or worker.looping is not None:
            return
        # Read once the call is settled (never on the way to admission); a long
        # conversation, a large body to hash, in a thread. A short one costs
        # less to read here than a thread's hop.
        read = LOOKS[call.wire.path]
        if call.sent_bytes <= LOOK_HERE_BYTES:
            look = read(call.sent)
        else:
            look = await asyncio.to_thread(read, call.sent)
        step, guards = look.step(charged.cost, self._services.clock.now()), self._services.guards
        if guards.shared:  # its client may call any plane: the fleet's count
            loop = await guards.step_shared(call.spec.name, worker.guard.settings, step)
        else:
            loop = worker.guard.step(step)
        if loop is not None:
            await worker.call_held(await worker.hold_loop(loop))

    async def _said(self, call: Call, charged: Charge, day: date) -> None:
        """The call's quiet line in the conversation, its row, the day's notices."""
        services, agent = self._services, call.spec.name
        shown = UNPRICED if charged.unpriced else turn_cost(charged.cost)
        if charged.floor:
            shown = at_a_floor(shown)
        line = charged.line + f" · {shown}"
        if call.saved:
            line += f" · compression saved {tokens(call.saved)} chars"
        if call.tag:
            line += f" · tag {call.tag}"
        if call.session:
            line += f" · session {call.session}"
        # The charts' and /metrics' "compression saved".
        await services.savings.record(agent, call.model, call.saved, day)
        cost = None if charged.unpriced else charged.cost  # unknown, not $0
        await services.add_message(agent, "cost", line, cost_usd=cost, usage=charged.usage)
        if charged.floor and agent in self._workers:  # its row says the rest is unpriced
            self._workers[agent].floor_on = day
        self._changed(agent)
        await self._spend_notices(agent)


async def _answer(
    out: Responder, agent: str, status: int, body: bytes, headers: Mapping[str, str]
) -> None:
    """A whole answer to a call that was forwarded; a client that left
    misses it, which the log says in one line (nothing is broken)."""
    if not await out.whole(status, body, headers):
        log.info("%s: the client left before its answer", agent)


async def _write(out: Responder, events: list[bytes]) -> None:
    """`events` to the client in one write, and the list emptied."""
    if events:
        joined = b"".join(events)
        events.clear()
        await out.write(joined)


@dataclass
class _Flight:
    """A call in flight: who waits for its answer, and whether another call
    of its agent's overlapped it (`Gateway._flying`)."""

    out: Responder
    overlapped: bool = False


class _UpstreamCut(Exception):
    """The upstream's stream broke. Its own class: a client that left raises
    an `OSError` that is an aiohttp `ClientError` too (both sides are aiohttp)."""


async def _upstream(response: aiohttp.ClientResponse) -> bytes:
    """What has arrived of the upstream's body; b"" at its end."""
    try:
        return await response.content.readany()
    except aiohttp.ClientError as exc:
        raise _UpstreamCut from exc


def _body(raw: bytes) -> dict[str, Any]:
    not_json: list[str] = []  # Python's reader takes NaN and Infinity; JSON has neither
    try:
        body = json.loads(raw, parse_constant=not_json.append)
    except ValueError:
        raise GatewayRefused(400, "The request body is not JSON.") from None
    except RecursionError:
        raise GatewayRefused(400, NESTED) from None
    if not_json:
        raise GatewayRefused(
            400, f"The request body is not JSON: {not_json[0]} is not a JSON value."
        )
    if not isinstance(body, dict):
        raise GatewayRefused(400, "The request body is not a JSON object.")
    if _nested_past(body, MOST_NESTING):
        raise GatewayRefused(400, NESTED)
    return body


def _nested_past(value: Any, most: int) -> bool:
    """Whether `value`'s arrays and objects nest deeper than `most` (read
    without recursion: the depth is what is in question)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > most:
            return True
        stack.extend((child, depth + 1) for child in item)
    return False


def _models_of(spec: AgentSpec, services: Services) -> list[str]:
    offered = services.config.providers[spec.provider].models
    return list(dict.fromkeys([spec.model, *offered]))
