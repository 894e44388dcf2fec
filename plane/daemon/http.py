"""The HTTP listener (`plane serve --http HOST:PORT`): the gateway's APIs.

aiohttp rather than Starlette + uvicorn: `web.AppRunner` and `TCPSite` run
inside the plane's own event loop, started and stopped from `startup()` and
`shutdown()` like the socket listener, with no second server lifecycle, no
signal handling of its own and no thread (it is also what textual-serve
embeds). Its `shutdown_timeout` lets requests in flight finish on stop: a
client's call in flight is a call already written in the ledger.

Routes: `POST /v1/messages` (Anthropic), `POST /v1/chat/completions` and
`POST /v1/responses` (OpenAI), `POST /v1/messages/count_tokens` (passed to the upstream, free,
not metered), `GET /v1/models` (the agent's provider's models, in the shape of
the API the client speaks), `GET /metrics` (Prometheus, behind the plane's
token: `plane.daemon.metrics`). Anything else is aiohttp's plain 404.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from plane.daemon.metrics import CONTENT_TYPE
from plane.gateway.forward import Gateway, Refused
from plane.gateway.wire import WIRES, ChatCompletions, Messages, Wire

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 << 20
"""A client's request, images and long histories included."""


class _Responder:
    """The gateway's answer, written on an aiohttp response."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self.response: web.StreamResponse | None = None

    async def whole(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        kind = headers.get("content-type", "application/json")
        rest = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        response = web.Response(status=status, body=body, headers=rest, content_type=None)
        response.headers["Content-Type"] = kind
        self.response = response
        await response.prepare(self._request)
        await response.write_eof()

    async def open(self, status: int, headers: Mapping[str, str]) -> None:
        self.response = web.StreamResponse(status=status, headers=dict(headers))
        await self.response.prepare(self._request)

    async def write(self, chunk: bytes) -> None:
        assert self.response is not None
        await self.response.write(chunk)

    def abort(self) -> None:
        if self._request.transport is not None:
            self._request.transport.abort()


Scrape = Callable[[], Awaitable[bytes]]
"""The metrics' text, read fresh (`plane.daemon.metrics.Metrics.scrape`)."""


class HttpListener:
    def __init__(
        self,
        gateway: Gateway,
        grace_s: float,
        *,
        metrics: Scrape | None = None,
        token: str | None = None,
    ) -> None:
        self.gateway = gateway
        self._metrics = metrics
        self._token = token
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        for path, wire in WIRES.items():
            app.router.add_post(path, self._calls(wire))
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        if metrics is not None and token:
            app.router.add_get("/metrics", self._scrape)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=grace_s)
        self.port: int | None = None

    async def listen(self, host: str, port: int) -> int:
        """Listen on `host:port` (0: a free port); returns the port."""
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server  # aiohttp keeps the bound sockets here only
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else port
        return self.port

    async def close(self) -> None:
        """Stop accepting; calls in flight finish within the grace."""
        await self._runner.cleanup()

    def _calls(self, wire: Wire) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def answer(request: web.Request) -> web.StreamResponse:
            out = _Responder(request)
            raw = await request.read()
            headers = {k.lower(): v for k, v in request.headers.items()}
            try:
                await self.gateway.handle(wire, headers, raw, out)
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
        headers = {k.lower(): v for k, v in request.headers.items()}
        wire = WIRES[Messages.path]
        await self.gateway.passthrough(wire, request.path, headers, await request.read(), out)
        assert out.response is not None
        return out.response

    async def _models(self, request: web.Request) -> web.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        wire = WIRES[Messages.path if "anthropic-version" in headers else ChatCompletions.path]
        try:
            models = self.gateway.models(headers)
        except Refused as refused:
            return web.json_response(
                wire.error(refused.status, str(refused)), status=refused.status
            )
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
            return web.Response(
                status=401,
                text="/metrics wants the plane's token: "
                "Authorization: Bearer <the file token in the plane's home>\n",
                headers={"WWW-Authenticate": 'Bearer realm="plane"'},
            )
        body = await self._metrics()
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE
        return response
