"""`plane web`, attacked: who may start a TUI in a browser.

Against the real server (textual-serve's, behind `plane.cli.web_server`) on a
real port, with real websockets. Each tab's TUI is here a command that
writes a line in a file when it starts, so "no TUI started" is a file read.
Every attempt is a handshake a browser (or anything else) could make: a
page of another site opening the websocket with the session's cookie
(browsers send it for some cross-origin requests, and a page on another
port of this machine is the same site), no cookie, the plane's own token
where the old `plane web` kept it, a session of a `plane web` since
stopped, and one tab over the cap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest

from plane.cli.web_server import COOKIE, SESSIONS, WebServer
from tests.support.local_http import local_client

TOKEN = "the-link-token"
PLANE_TOKEN = "the-planes-own-token"
TRIED: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def tally() -> Iterator[None]:
    yield
    print(f"\nplane web: {len(TRIED)} foreign handshakes tried, 0 TUIs started by them")


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, tabs: int = 8) -> AsyncIterator[tuple[WebServer, Path]]:
    started = tmp_path / "started"
    server = WebServer(
        f"sh -c 'echo tab >> {started}'", TOKEN, tabs=tabs, title="plane", host="127.0.0.1", port=0
    )
    runner = await server.listen()
    try:
        yield server, started
    finally:
        await runner.cleanup()


async def sign_in(server: WebServer, browser: httpx.AsyncClient | None = None) -> str:
    async with contextlib.AsyncExitStack() as stack:
        client = browser if browser is not None else await stack.enter_async_context(local_client())
        found = await client.get(f"{server.public_url}/?token={TOKEN}")
    assert found.status_code == 302
    return found.cookies[COOKIE]


def tabs_started(started: Path) -> int:
    return len(started.read_text().splitlines()) if started.exists() else 0


async def until_started(started: Path, tabs: int) -> None:
    """The TUIs' processes write their line a moment after the handshake."""
    for _ in range(100):
        if tabs_started(started) >= tabs:
            break
        await asyncio.sleep(0.05)
    assert tabs_started(started) == tabs


@dataclass(frozen=True)
class Tab:
    """A browser tab's websocket, and the session it was opened on (closed with it)."""

    socket: aiohttp.ClientWebSocketResponse
    session: aiohttp.ClientSession


async def handshake(server: WebServer, cookies: dict[str, str], origin: str | None) -> Tab | int:
    """The open websocket, or the status the handshake was refused with."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
    if origin is not None:
        headers["Origin"] = origin
    session = aiohttp.ClientSession()
    try:
        socket = await session.ws_connect(
            f"{server.public_url}/ws?width=80&height=24", headers=headers, autoping=False
        )
    except aiohttp.WSServerHandshakeError as refused:
        await session.close()
        return refused.status
    return Tab(socket, session)


async def hang_up(tab: Tab) -> None:
    await tab.socket.close()
    await tab.session.close()


async def test_only_the_servers_own_page_with_a_session_starts_a_tui(tmp_path: Path) -> None:
    async with serving(tmp_path) as (server, started):
        session = await sign_in(server)
        own = server.public_url
        attempts = [
            ({COOKIE: session}, "http://evil.example", 403),
            (
                {COOKIE: session},
                f"http://127.0.0.1:{server.port + 1}",
                403,
            ),  # same site, other port
            ({COOKIE: session}, "null", 403),  # a sandboxed frame, a file:// page
            ({COOKIE: session}, None, 403),  # no Origin: not a browser's page
            ({}, own, 401),
            ({COOKIE: "guessed"}, own, 401),
            ({"plane_token": PLANE_TOKEN}, own, 401),  # where the old plane web kept the token
            ({COOKIE: PLANE_TOKEN}, own, 401),
            ({COOKIE: TOKEN}, own, 401),  # the printed token is not a session
        ]
        for cookies, origin, status in attempts:
            TRIED.append(f"{cookies} {origin}")
            assert await handshake(server, cookies, origin) == status, (cookies, origin)
        assert tabs_started(started) == 0
        async with local_client() as client:
            refused = await client.get(f"{own}/?token={PLANE_TOKEN}")  # the plane's own token
            assert refused.status_code == 401 and COOKIE not in refused.cookies

        socket = await handshake(server, {COOKIE: session}, own)
        assert not isinstance(socket, int)
        await until_started(started, 1)
        await hang_up(socket)


async def test_a_session_ends_with_its_plane_web_and_old_ones_are_forgotten(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path / "first") as (first, _):
        old = await sign_in(first)
    (tmp_path / "second").mkdir()
    async with serving(tmp_path / "second") as (second, started):
        TRIED.append("a stopped plane web's session")
        assert await handshake(second, {COOKIE: old}, second.public_url) == 401
        async with local_client() as browser:
            kept = [await sign_in(second, browser) for _ in range(SESSIONS + 1)]
        TRIED.append("a session pushed out by newer ones")
        assert await handshake(second, {COOKIE: kept[0]}, second.public_url) == 401
        assert tabs_started(started) == 0
        socket = await handshake(second, {COOKIE: kept[-1]}, second.public_url)
        assert not isinstance(socket, int)
        await hang_up(socket)


async def test_the_tab_over_the_cap_gets_a_page_saying_so_and_no_tui(tmp_path: Path) -> None:
    async with serving(tmp_path, tabs=2) as (server, started):
        session = await sign_in(server)
        own = server.public_url
        tabs = [await handshake(server, {COOKIE: session}, own) for _ in range(2)]
        opened = [tab for tab in tabs if not isinstance(tab, int)]
        assert opened == tabs
        async with local_client(cookies={COOKIE: session}) as browser:
            page = await browser.get(own + "/")
            assert page.status_code == 503
            assert "<title>plane</title>" in page.text
            assert "plane web already runs 2 TUIs, its most" in page.text
            assert "close another tab of it, then reload this one" in page.text
            TRIED.append("a third tab")
            assert await handshake(server, {COOKIE: session}, own) == 503
            await until_started(started, 2)

            await hang_up(opened[0])
            for _ in range(50):  # its handler ends once the close is read
                if server.tabs < 2:
                    break
                await asyncio.sleep(0.05)
            assert (await browser.get(own + "/")).status_code == 200
        third = await handshake(server, {COOKIE: session}, own)
        assert not isinstance(third, int)
        await until_started(started, 3)
        await hang_up(third)
        await hang_up(opened[1])
