"""A real local receiver for the plane's alerts (aiohttp): a webhook at
`/hook` and an ntfy-shaped topic at `/topic`, which reads the `Actions`
header as ntfy's server does (its documented "simple" format: actions split
at `;`, fields at `,`, values quoted with `"` or `'` when they hold either,
`action, label, url` positional or `key=value`), so a test sees the buttons
a phone would show and can tap one (`tap`) as ntfy's app does: the action's
method, to its URL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.support.local_http import local_client


@dataclass(frozen=True)
class Button:
    action: str
    label: str
    url: str
    method: str = "POST"
    clear: bool = False


@dataclass
class Receiver:
    """What a webhook and an ntfy topic were sent, in order."""

    url: str = ""
    got: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    failures: int = 0
    """Answer this many requests with a 500 first."""
    hang: asyncio.Event | None = None
    """While set to an unset event, every request waits on it."""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/topic" and "Actions" in request.headers:
            try:
                ntfy_actions(request.headers["Actions"])
            except ValueError as refused:  # as ntfy answers a header it cannot parse
                return web.Response(status=400, text=str(refused))
        self.got.append((request.path, dict(request.headers), await request.read()))
        self.arrived.set()
        if self.hang is not None:
            await self.hang.wait()
        if self.failures:
            self.failures -= 1
            return web.Response(status=500)
        return web.Response(text="ok")

    def hooks(self) -> list[dict[str, Any]]:
        return [json.loads(body) for path, _, body in self.got if path == "/hook"]

    async def until_hook(self, event: str, timeout_s: float = 10, *, count: int = 1) -> None:
        """Until `count` webhooks for `event` have arrived: the notifier reads rows
        from the event bus in its own task, so a row published is not yet an alert sent."""
        async with asyncio.timeout(timeout_s):
            while sum(h["event"] == event for h in self.hooks()) < count:
                self.arrived.clear()
                await self.arrived.wait()

    async def until_topics(self, count: int, timeout_s: float = 10) -> None:
        """Until `count` ntfy notifications have arrived: the webhook and the
        topic are each their own receiver's queue, so one arriving says
        nothing of the other."""
        async with asyncio.timeout(timeout_s):
            while len(self.topics()) < count:
                self.arrived.clear()
                await self.arrived.wait()

    def topics(self) -> list[tuple[str, str]]:
        return [(h["Title"], body.decode()) for path, h, body in self.got if path == "/topic"]

    def buttons(self) -> list[list[Button]]:
        """Each ntfy notification's buttons, as the phone shows them."""
        return [ntfy_actions(h.get("Actions", "")) for path, h, _ in self.got if path == "/topic"]


async def tap(button: Button) -> httpx.Response:
    """What ntfy's app sends when an `http` button is tapped."""
    assert button.action == "http"
    async with local_client() as client:
        return await client.request(button.method, button.url)


def ntfy_actions(header: str) -> list[Button]:
    """The `Actions` header in ntfy's simple format; ValueError where ntfy refuses it."""
    buttons = []
    for action in _split(header, ";"):
        fields: dict[str, str] = {}
        for place, part in enumerate(_split(action, ",")):
            key, value = _key_value(part)
            key = key or {0: "action", 1: "label", 2: "url"}.get(place, "")
            if not key:
                raise ValueError(f"term {part!r} needs a key")
            fields[key] = value
        if fields.get("action") not in ("view", "http", "broadcast") or not fields.get("label"):
            raise ValueError(f"not an action: {action!r}")
        buttons.append(
            Button(
                fields["action"],
                fields["label"],
                fields.get("url", ""),
                fields.get("method", "POST").upper(),
                fields.get("clear", "false") == "true",
            )
        )
    if len(buttons) > 3:
        raise ValueError("too many actions, only 3 allowed")
    return buttons


def _split(text: str, by: str) -> list[str]:
    """`text` split at `by` outside quotes; empty parts dropped."""
    parts, current, quote = [], "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == by:
            parts.append(current)
            current = ""
            continue
        current += char
    if quote:
        raise ValueError("unterminated quote")
    return [p.strip() for p in [*parts, current] if p.strip()]


def _key_value(part: str) -> tuple[str, str]:
    """`key=value` (the key a bare word before `=`), or a positional value; quotes taken off."""
    key, eq, rest = part.partition("=")
    if eq and key.strip().replace(".", "").replace("_", "").isalnum() and key[:1] not in "\"'":
        return key.strip().lower(), _unquote(rest.strip())
    return "", _unquote(part)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    got = Receiver()
    app = web.Application()
    app.router.add_post("/hook", got.handle)
    app.router.add_post("/topic", got.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    [(_, port)] = runner.addresses
    got.url = f"http://127.0.0.1:{port}"
    yield got
    if got.hang is not None:
        got.hang.set()
    await runner.cleanup()
