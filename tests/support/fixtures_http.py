"""A real local HTTP server whose answers a test writes as a function
(aiohttp's low-level server): where a test needs one reply of its own shape
rather than `scripted_llm`'s script.

It listens on TCP (`url`) and on a Unix socket (`connect`): a provider given
`connect` as its connector reaches this server whatever its URL says, so a
test can build providers on their real URLs (`https://api.openai.com/v1`)
and see the host, path and headers they send. Every request is kept in
`seen`, in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

Answer = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Seen:
    """One request as the server read it."""

    method: str
    host: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def replying(
    body: bytes | dict[str, Any], status: int = 200, content_type: str = "application/json"
) -> Answer:
    """An answer that is always the same: `body` (a dict as JSON)."""
    raw = json.dumps(body).encode() if isinstance(body, dict) else body

    async def answer(request: web.BaseRequest) -> web.StreamResponse:
        return web.Response(status=status, body=raw, content_type=content_type)

    return answer


@dataclass
class LocalServer:
    socket: Path
    answer: Answer = field(default_factory=lambda: replying(b"{}"))
    """How the next request is answered; set it in the test."""
    url: str = ""
    """http://127.0.0.1:PORT"""
    seen: list[Seen] = field(default_factory=list)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.seen.append(Seen(request.method, request.host, request.path, headers, body))
        return await self.answer(request)

    def connect(self) -> aiohttp.BaseConnector:
        """A connector on which this server answers every URL: a `Connect`
        (`plane.providers.connections`)."""
        return aiohttp.UnixConnector(str(self.socket))


@pytest.fixture
async def local_server(tmp_path: Path) -> AsyncIterator[LocalServer]:
    server = LocalServer(tmp_path / "http.sock")
    runner = web.ServerRunner(web.Server(server.handle))
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    await web.UnixSite(runner, str(server.socket)).start()
    [port] = [address[1] for address in runner.addresses if isinstance(address, tuple)]
    server.url = f"http://127.0.0.1:{port}"
    yield server
    await runner.cleanup()
