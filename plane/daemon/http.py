"""The HTTP listener (`plane serve --http HOST:PORT`): the gateway's APIs.

aiohttp rather than Starlette + uvicorn: `web.AppRunner` runs inside the
plane's own event loop, started and stopped from `startup()` and
`shutdown()` like the socket listener, with no second server lifecycle, no
signal handling of its own and no thread (it is also what textual-serve
embeds). Its `shutdown_timeout` lets requests in flight finish on stop: a
client's call in flight is a call already written in the ledger.

Routes: `POST /v1/messages` (Anthropic), `POST /v1/chat/completions` and
`POST /v1/responses` (OpenAI), `POST /v1/messages/count_tokens` (passed to the upstream, free,
not metered), `GET /v1/models` (the agent's provider's models, in the shape of
the API the client speaks), `GET /metrics` (Prometheus, behind the plane's
token: `plane.daemon.metrics`), `GET`/`POST /approve` (an alert's signed
link: `plane.daemon.approvals`, with `notify:`). Anything else is aiohttp's
plain 404.

Nobody unknown costs anything (`Limits` has the figures):

- the key (or the token, for `/metrics`) is checked from the headers, before
  a byte of the body is read; without it the answer is a 401 in the API's
  own shape and the connection is closed, its body never read, let alone
  held (aiohttp stops reading a connection once ~128 KiB of it wait unread);
- a connection that has not presented a key is a stranger (`plane.daemon.door`):
  few are held at once, each briefly, its request headers counted
  (`_Connection`); aiohttp's keep-alive timeout closes a connection that
  sends no whole request headers soon after it opened or after its last
  answer (slow headers included);
- a body, read only for a client with a key, is bounded in size, in the time
  it may take to arrive, and, over all calls in flight together, in the
  bytes held (`plane.daemon.bodies`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from plane.daemon.bodies import Bodies
from plane.daemon.door import Door
from plane.daemon.failed import store_away
from plane.daemon.metrics import CONTENT_TYPE
from plane.errors import LedgerError, StoreError
from plane.gateway.apis import WIRES, ChatCompletions, Messages, Wire
from plane.gateway.forward import Gateway
from plane.gateway.refused import GatewayRefused
from plane.wire.words import store_failed

log = logging.getLogger(__name__)

HEAD_BYTES = 64 << 10
"""A request's line and headers, from a connection that has not presented a key."""
_HEAD_SAID = b"The request's headers are over the plane's 64 KiB limit.\n"
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_HEAD_SAID), _HEAD_SAID)
)


@dataclass(frozen=True)
class Limits:
    """What one client, and all clients together, may hold of the listener."""

    body_bytes: int = 32 << 20
    """A request's body, images and long histories included."""
    bodies_bytes: int = 256 << 20
    """The bodies of all calls in flight together (each is held until its call ends)."""
    body_s: float = 60.0
    """A body must have arrived whole within this long of its headers."""
    idle_s: float = 10.0
    """A connection that sends no whole request headers within this long of
    opening, or of its last answer, is closed (aiohttp's keep-alive timeout)."""
    strangers: int = 128
    """Connections held at once that have not yet presented a key."""
    stranger_s: float = 10.0
    """How long a connection may stay without presenting a key."""


class _Responder:
    """The gateway's answer, written on an aiohttp response."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self.response: web.StreamResponse | None = None

    async def whole(self, status: int, body: bytes, headers: Mapping[str, str]) -> bool:
        kind = headers.get("content-type", "application/json")
        rest = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        response = web.Response(status=status, body=body, headers=rest, content_type=None)
        response.headers["Content-Type"] = kind
        self.response = response
        try:
            await response.prepare(self._request)
            await response.write_eof()
        except OSError:  # the client left (aiohttp's reset is a ConnectionResetError)
            return False
        return True

    async def open(self, status: int, headers: Mapping[str, str]) -> None:
        self.response = web.StreamResponse(status=status, headers=dict(headers))
        await self.response.prepare(self._request)

    async def write(self, chunk: bytes) -> None:
        assert self.response is not None
        await self.response.write(chunk)

    def abort(self) -> None:
        if self._request.transport is not None:
            self._request.transport.abort()

    def gone(self) -> bool:
        transport = self._request.transport
        return transport is None or transport.is_closing()


class _Connection(web.RequestHandler):
    """aiohttp's connection, a stranger at the door from when it opens until
    it presents a key (`HttpListener._known`) or closes.

    A stranger's request headers are counted as they arrive: aiohttp bounds
    each line and their number, not their sum (128 lines of 8 KiB: a
    megabyte held a connection while it trickles in), so past `HEAD_BYTES`
    a stranger gets 431 and is closed. Once a head is whole, its request is
    aiohttp's and the key's to decide; the next head is counted afresh
    after the answer (`answered`)."""

    __slots__ = ("_door", "_head", "_tail")

    def __init__(self, manager: web.Server, door: Door, **knobs: Any) -> None:
        super().__init__(manager, **knobs)
        self._door = door
        self._head: int | None = 0
        """Bytes of the head arriving; None while a whole one is being answered."""
        self._tail = b""
        """The last bytes seen, in case a head's blank line spans two reads."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._door.arrived(self, self.force_close)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._door.left(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head is not None and self in self._door:
            if (self._tail + data).find(b"\r\n\r\n") >= 0:
                self._head = None
            elif (head := self._head + len(data)) > HEAD_BYTES:
                if self.transport is not None:
                    self.transport.write(_HEAD_TOO_LARGE)
                self.force_close()
                return
            else:
                self._head, self._tail = head, data[-3:]
        super().data_received(data)

    def answered(self) -> None:
        self._head, self._tail = 0, b""


Scrape = Callable[[], Awaitable[bytes]]
"""The metrics' text, a recent reading (`plane.daemon.metrics.Metrics.scrape`)."""
Approve = Callable[[web.Request], Awaitable[web.Response]]
"""An alert's link followed (`plane.daemon.approvals.Approvals.handle`)."""


class HttpListener:
    def __init__(
        self,
        gateway: Gateway,
        grace_s: float,
        *,
        metrics: Scrape | None = None,
        token: str | None = None,
        limits: Limits = Limits(),
        approve: Approve | None = None,
    ) -> None:
        self.gateway = gateway
        self.limits = limits
        self.door = Door(limits.strangers, limits.stranger_s)
        self.bodies = Bodies(limits.body_bytes, limits.bodies_bytes, limits.body_s)
        self._metrics = metrics
        self._token = token
        app = web.Application(client_max_size=limits.body_bytes)
        for path, wire in WIRES.items():
            app.router.add_post(path, self._calls(wire))
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        if metrics is not None and token:
            app.router.add_get("/metrics", self._scrape)
        if approve is not None:  # the link is its own proof: signed, single-use
            app.router.add_get("/approve", approve)
            app.router.add_post("/approve", approve)
        app.on_response_prepare.append(_answered)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=grace_s)
        self._server: asyncio.Server | None = None
        self.port: int | None = None

    async def listen(self, host: str, port: int) -> int:
        """Listen on `host:port` (0: a free port); returns the port."""
        await self._runner.setup()
        manager = self._runner.server
        assert manager is not None
        loop = asyncio.get_running_loop()
        knobs: dict[str, Any] = {
            "loop": loop,
            "access_log": None,
            "keepalive_timeout": self.limits.idle_s,
            "lingering_time": 0,  # a body left unread is not drained: the connection closes
        }
        self._server = await loop.create_server(
            lambda: _Connection(manager, self.door, **knobs), host, port, reuse_address=True
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        """Stop accepting; calls in flight finish within the grace."""
        if self._server is not None:
            self._server.close()
        await self._runner.cleanup()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def _known(self, request: web.Request, headers: Mapping[str, str]) -> None:
        """The key is an agent's, or `GatewayRefused` (401); read from the headers alone."""
        self.gateway.agent(headers)
        self.door.known(request.protocol)

    def _calls(self, wire: Wire) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def answer(request: web.Request) -> web.StreamResponse:
            out = _Responder(request)
            headers = _lowered(request)
            try:
                self._known(request, headers)
                async with self.bodies.read(request) as raw:
                    await self.gateway.handle(wire, headers, raw, out)
            except GatewayRefused as refused:  # no key, or a body the plane will not hold
                return _refusal(wire, refused)
            except (LedgerError, sqlite3.Error) as error:  # the store away: the call stops here
                said = store_away(error, changes=False) or (
                    str(error) if isinstance(error, LedgerError) else store_failed("call", error)
                )
                log.warning("gateway: %s: %s", wire.path, said)
                if out.response is None:
                    await out.whole(503, json.dumps(wire.error(503, said)).encode(), {})
            except Exception:
                log.exception("gateway: %s", wire.path)
                if out.response is None:
                    message = "The plane failed to handle this call; see plane.log."
                    body = json.dumps(wire.error(500, message)).encode()
                    await out.whole(500, body, {})
            assert out.response is not None
            return out.response

        return answer

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        out = _Responder(request)
        headers = _lowered(request)
        wire = WIRES[Messages.path]
        try:
            self._known(request, headers)
            async with self.bodies.read(request) as raw:
                await self.gateway.passthrough(wire, request.path, headers, raw, out)
        except GatewayRefused as refused:
            return _refusal(wire, refused)
        assert out.response is not None
        return out.response

    async def _models(self, request: web.Request) -> web.Response:
        headers = _lowered(request)
        wire = WIRES[Messages.path if "anthropic-version" in headers else ChatCompletions.path]
        try:
            self._known(request, headers)
            models = self.gateway.models(headers)
        except GatewayRefused as refused:
            return _refusal(wire, refused)
        return web.json_response(wire.listing(models))

    async def _scrape(self, request: web.Request) -> web.Response:
        """`/metrics`, for the operator's Prometheus only: the plane's token
        (the file `token` in its home) as a bearer token, compared in constant
        time. Without it, 401 and nothing about any agent."""
        assert self._metrics is not None and self._token is not None
        given = request.headers.get("Authorization", "")
        scheme, _, presented = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            presented.strip().encode(), self._token.encode()
        ):
            refused = web.Response(
                status=401,
                text="/metrics wants the plane's token: "
                "Authorization: Bearer <the file token in the plane's home>\n",
                headers={"WWW-Authenticate": 'Bearer realm="plane"'},
            )
            refused.force_close()
            return refused
        self.door.known(request.protocol)
        try:
            body = await self._metrics()
        except (StoreError, LedgerError) as error:  # a row no plane wrote: one sentence names it
            log.warning("/metrics: %s", error)
            return web.Response(status=500, text=f"{error}\n")
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE
        return response


async def _answered(request: web.Request, response: web.StreamResponse) -> None:
    if isinstance(request.protocol, _Connection):
        request.protocol.answered()


def _lowered(request: web.Request) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


def _refusal(wire: Wire, refused: GatewayRefused) -> web.Response:
    """The refusal in the API's own shape; the connection closes after it, so
    whatever body the client is still sending is never read."""
    body = refused.body or wire.error(refused.status, str(refused))
    response = web.json_response(body, status=refused.status, headers=refused.headers)
    response.force_close()
    return response
