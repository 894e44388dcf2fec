"""textual-serve's server with the plane's token asked of every request
(see `plane.cli.web`). Imported only by `plane web`: textual-serve and its
templates are no part of any other command's start."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from textual_serve.server import Server

COOKIE = "plane_token"
REFUSED = "The plane's TUI wants its token: open the address `plane web` printed.\n"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class TokenServer(Server):
    """textual-serve's server, with the token asked of every request."""

    def __init__(self, command: str, token: str, **kwargs: Any) -> None:
        super().__init__(command, title="plane", **kwargs)
        self._token = token.encode()

    def initialize_logging(self) -> None:
        """The plane's command says its own lines; textual-serve's banner is not one."""

    async def on_startup(self, app: web.Application) -> None:
        """No banner (see `initialize_logging`)."""

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    def _is_token(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self._token)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self._is_token(request.query.get("token")):
            if request.path == "/":  # keep it in the cookie, out of the address bar
                rest = {k: v for k, v in request.query.items() if k != "token"}
                found = web.HTTPFound(request.rel_url.with_query(rest))
                found.set_cookie(COOKIE, self._token.decode(), httponly=True, samesite="Strict")
                raise found
            return await handler(request)
        if self._is_token(request.cookies.get(COOKIE)):
            return await handler(request)
        return web.Response(status=401, text=REFUSED)
