"""textual-serve's server behind sessions of its own (see `plane.cli.web`).
Imported only by `plane web`: textual-serve and its templates are no part of
any other command's start.

textual-serve has no authentication: every request it serves (the page, its
scripts, the websocket that starts a TUI) goes through `_guard` here first.

- The address `plane web` prints carries a token of this server's own,
  made when it starts and never written anywhere: not the plane's token,
  which never reaches the browser. Opened, it becomes a session: a random
  id kept here, set as an HttpOnly, SameSite=Strict cookie, and the token
  leaves the address bar. A session can open a TUI — what a TUI can do, a
  session can, and nothing more — and is revoked when `plane web` stops
  (its sessions and its token die with it; a new `plane web` prints a new
  address).
- The websocket, which starts a TUI, is opened only from this server's own
  page: its `Origin` must be the address the browser asked for (another
  site's page, even on this machine, is refused, cookie or not).
- Stopping `plane web` ends each open tab then and there: its TUI quits and
  its page says the session ended (left to the connection's end, a tab ran
  on for its websocket's heartbeat, about 18 s, and ctrl+c seemed to hang).
- At most `tabs` TUIs run at once (each is a process of ~50 MB): the page
  of the tab over the cap says so instead of starting one.
"""

from __future__ import annotations

import asyncio
import html
import re
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from textual_serve.server import Server

COOKIE = "plane_session"
SESSIONS = 64
"""Sessions kept at once; past it, the oldest is forgotten (its tab keeps
running, its cookie opens nothing more)."""
REFUSED = "The plane's TUI wants a session: open the address `plane web` printed.\n"
FOREIGN = "The TUI's websocket opens only from the page of `plane web` itself.\n"
HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
"""A Host header fit to be written into the page (an address, nothing else)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebServer(Server):
    """textual-serve's server, with sessions, an Origin check and a cap on tabs."""

    def __init__(self, command: str, token: str, *, tabs: int, title: str, **kwargs: Any) -> None:
        super().__init__(command, title=title, **kwargs)
        self._token = token.encode()
        self._sessions: OrderedDict[str, None] = OrderedDict()
        self.most_tabs = tabs
        self.tabs = 0
        """TUIs running: websockets open."""
        self._open: set[asyncio.Task[Any]] = set()
        """The open tabs' handlers, ended when `plane web` stops."""

    def initialize_logging(self) -> None:
        """The plane's command says its own lines; textual-serve's banner is not one."""

    async def on_startup(self, app: web.Application) -> None:
        """No banner (see `initialize_logging`)."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Each open tab ends now: its TUI is told to quit and its websocket
        is closed (textual-serve does both when its handler is cancelled)."""
        for tab in list(self._open):
            tab.cancel()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    async def listen(self) -> web.AppRunner:
        """Listen on the host and port (0: a free one, then `self.port` says which)."""
        runner = web.AppRunner(await self._make_app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        self.port = int(runner.addresses[0][1])
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.public_url = f"http://{host}:{self.port}"
        return runner

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """textual-serve's page, titled, with its websocket at the address the
        browser asked for (so the websocket is same-origin, and its cookie goes)."""
        printed = self.public_url
        if HOST.fullmatch(request.host):  # read by super before it first awaits
            self.public_url = f"http://{request.host}"
        try:
            page = await super().handle_index(request)
        finally:
            self.public_url = printed
        if isinstance(page, web.Response) and page.text is not None:
            title = f"<head>\n    <title>{html.escape(self.title)}</title>"
            page.text = page.text.replace("<head>", title, 1)
        return page

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        self.tabs += 1
        handler = asyncio.current_task()
        this_tab = {handler} if handler is not None else set()
        self._open |= this_tab
        try:
            return await super().handle_websocket(request)
        finally:
            self._open -= this_tab
            self.tabs -= 1

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == "/" and "token" in request.query:
            return self._signed_in(request)
        if request.cookies.get(COOKIE) not in self._sessions:
            return web.Response(status=401, text=REFUSED)
        if request.path == "/ws":
            if request.headers.get("Origin") != f"http://{request.host}":
                return web.Response(status=403, text=FOREIGN)
            if self.tabs >= self.most_tabs:
                return web.Response(status=503, text=self._full())
        if request.path == "/" and self.tabs >= self.most_tabs:
            page = _page(self.title, self._full())
            return web.Response(status=503, text=page, content_type="text/html")
        return await handler(request)

    def _signed_in(self, request: web.Request) -> web.StreamResponse:
        """The printed address: a new session, and the address without its token."""
        given = request.query["token"].encode()
        if not secrets.compare_digest(given, self._token):
            return web.Response(status=401, text=REFUSED)
        session = secrets.token_urlsafe(32)
        self._sessions[session] = None
        while len(self._sessions) > SESSIONS:
            self._sessions.popitem(last=False)
        rest = {k: v for k, v in request.query.items() if k != "token"}
        found = web.HTTPFound(request.rel_url.with_query(rest))
        found.set_cookie(COOKIE, session, httponly=True, samesite="Strict")
        raise found

    def _full(self) -> str:
        return (
            f"plane web already runs {self.most_tabs} TUIs, its most (each is a process of "
            f"about 50 MB): close another tab of it, then reload this one."
        )


def _page(title: str, said: str) -> str:
    title, said = html.escape(title), html.escape(said)
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><p>{said}</p></body></html>\n"
    )
