"""A real plane with its gateway on a real TCP port, gateway agents on the
scripted provider server (which speaks both APIs), and a key for each."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.events import EventBus, Subscription
from plane.daemon.server import Plane
from plane.gateway.apis import Wire
from plane.gateway.forward import Responder
from plane.gateway.keys import Keys
from plane.home import Home
from plane.wire import protocol as p
from tests.support.local_http import local_client
from tests.support.migrated import lay_store
from tests.support.plane_parts import PlaneParts
from tests.support.scripted_llm import ScriptedLLM

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

CONFIG = """
defaults:
  limitUsd: 10
  provider: scripted
  model: scripted-model
providers:
  scripted:
    kind: openai-compatible
    base_url: {base_url}
    models: [scripted-model]
    max_retries: 0
  scripted-anthropic:
    kind: anthropic
    base_url: {anthropic_url}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model:
    {input: 1000, cached_input: 100, cache_write: 1250, cache_write_1h: 2000, output: 2000}
agents:
  claude: {provider: scripted-anthropic, gateway: {}}
  aider: {provider: scripted, gateway: {}}
  demo: {}
"""
"""$1000 per 1M input tokens is $0.001 a token: costs in tests are round."""


@dataclass
class Arrivals:
    """The calls that reached the gateway (refused ones too, which no
    upstream sees), and the most it had at once."""

    count: int = 0
    now: int = 0
    most_at_once: int = 0


@dataclass
class GatewayPlane(PlaneParts):
    plane: Plane
    home: Home
    clock: ManualClock
    llm: ScriptedLLM
    keys: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.plane.http_port}"

    def calls_as(self, agent: str) -> tuple[str, dict[str, str]]:
        """The path and headers `agent`'s client calls with: claude speaks
        Anthropic Messages, the others OpenAI Chat Completions."""
        key = self.keys[agent]
        if agent == "claude":
            return "/v1/messages", {"x-api-key": key, "anthropic-version": "2023-06-01"}
        return "/v1/chat/completions", {"authorization": f"Bearer {key}"}

    async def scrape(self) -> str:
        """`GET /metrics` with the plane's token, as a scraper asks: the text
        of its answer, which must be a 200."""
        token = self.home.token.read_text()
        async with local_client() as client:
            answer = await client.get(
                f"{self.url}/metrics", headers={"Authorization": f"Bearer {token}"}
            )
        assert answer.status_code == 200, answer.text
        return answer.text

    async def entries(self) -> list[p.LedgerEntry]:
        return await self.services.ledger.entries(self.clock.now().date())

    def watch(self) -> Subscription:
        """Subscribe before a call, then `await settled(...)` on it."""
        return self.plane.bus.subscribe()

    async def settled(
        self, watching: Subscription, agent: str, within: float = 10
    ) -> p.ConversationMessage:
        """The cost line of `agent`'s next settled call: the gateway says it
        after the ledger has it, so the test need not guess when."""

        async def wait() -> p.ConversationMessage:
            while True:
                event = await watching.next()
                if isinstance(event, p.MessageAppended) and event.message.agent == agent:
                    if event.message.kind == "cost":
                        return event.message

        return await asyncio.wait_for(wait(), within)

    def arrivals(self) -> Arrivals:
        """Count the calls the gateway is handed from now on (its listener's
        own calls, passed through unchanged)."""
        gateway = self.gateway
        handle = gateway.handle
        seen = Arrivals()

        async def counted(
            wire: Wire, headers: Mapping[str, str], raw: bytes, out: Responder
        ) -> None:
            seen.count += 1
            seen.now += 1
            seen.most_at_once = max(seen.most_at_once, seen.now)
            try:
                await handle(wire, headers, raw, out)
            finally:
                seen.now -= 1

        gateway.handle = counted
        return seen

    async def said(self, agent: str) -> list[p.ConversationMessage]:
        return await self.services.conversation.history(agent, 50)


StartGateway = Callable[..., Awaitable[GatewayPlane]]


@pytest.fixture
async def start_gateway(
    tmp_path: Path, scripted_llm: ScriptedLLM, migrated_store: Path
) -> AsyncIterator[StartGateway]:
    running: list[Plane] = []

    async def start(
        config_text: str = CONFIG,
        *,
        restart: GatewayPlane | None = None,
        bus: EventBus | None = None,
    ) -> GatewayPlane:
        """A gateway plane; with `restart`, that one stopped first and this one
        on its home and clock (its keys made again); `bus`, what it tells its
        clients on, given."""
        if restart is not None:
            running.remove(restart.plane)
            restart.plane.stop_event.set()
            await restart.plane.shutdown()
        text = config_text.replace("{base_url}", scripted_llm.base_url)
        text = text.replace("{anthropic_url}", scripted_llm.anthropic_url)
        home = Home(tmp_path / "home")
        lay_store(home, migrated_store)
        clock = restart.clock if restart is not None else ManualClock(NOON)
        plane = Plane(parse_config(text), home, clock, http=("127.0.0.1", 0))
        if bus is not None:
            plane.bus = bus
        await plane.startup()
        running.append(plane)
        keys = Keys(home.gateway_keys)
        made = {name: keys.make(name) for name in ("claude", "aider")}
        return GatewayPlane(plane, home, clock, scripted_llm, made)

    yield start
    for plane in running:
        plane.stop_event.set()
        await plane.shutdown()
