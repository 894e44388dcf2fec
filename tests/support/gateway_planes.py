"""Two planes of a fleet on one real PostgreSQL, each with its gateway on a
real port, and aider's client calling through either (as behind a load
balancer): what the attack tests of a gateway agent across planes share;
and one such plane alone, for a test that plays the other plane itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from plane.clock import ManualClock
from plane.daemon import fleet
from plane.daemon.events import Subscription
from plane.gateway.keys import Keys
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane, launch
from tests.support.fleet_members import NOON
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply, ScriptedLLM

TOLD_S = 6.0
"""How soon the other plane refuses once the hold is made: well within a
renewal (`LEASE_S / 3`), so only the notice can have told it."""
SAME = {
    "model": "scripted-model",
    "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hello. What shall I look at?"},
        {"role": "user", "content": "the open issues"},
    ],
}
"""A conversation under way, sent again and again: a client going round."""
HELD = "aider is held: its client sent the same request 5 times in a row"
ASKED = {
    "model": "scripted-model",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 10,
}
"""One short call of aider's client: what the tests of its spend send."""


def aider_alerting(receiver: Receiver) -> str:
    """aider, a gateway agent of $1 a day, alerting `receiver`."""
    return GATEWAY.replace(
        "aider: {provider: scripted, gateway: {}}",
        "aider: {provider: scripted, gateway: {}, limitUsd: 1}",
    ) + (f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n")


async def two_planes(
    root: Path,
    llm: ScriptedLLM,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    lease_s: float,
    *,
    config: str = GATEWAY,
    clock: ManualClock | None = None,
) -> tuple[RunningPlane, RunningPlane, str]:
    """Planes A and B on the store at `url`, each with its gateway listening,
    and aider's key, which both read (the same file in each home); `config`:
    the gateway agents and what a test adds to them (a tag, alerts), `clock`:
    one both planes read, so a test moves their day at once."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", lease_s)
    text = config.replace("{anthropic_url}", llm.anthropic_url)
    on = ("127.0.0.1", 0)
    a = await launch(root / "a", llm, text, clock, http=on)
    try:
        b = await launch(root / "b", llm, text, clock, http=on)
    except BaseException:
        await a.stop()
        raise
    key = Keys(a.home.gateway_keys).make("aider")
    b.home.gateway_keys.write_bytes(a.home.gateway_keys.read_bytes())
    return a, b, key


@contextlib.asynccontextmanager
async def two_running(
    root: Path,
    llm: ScriptedLLM,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    lease_s: float,
    *,
    config: str = GATEWAY,
    clock: ManualClock | None = None,
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """`two_planes`, both stopped once done (the scripted model's streams
    hung up first, so no call waits on one)."""
    a, b, key = await two_planes(root, llm, url, monkeypatch, lease_s, config=config, clock=clock)
    try:
        yield a, b, key
    finally:
        llm.hang_up()
        await b.stop()
        await a.stop()


def at_noon(
    root: Path,
    llm: ScriptedLLM,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    lease_s: float,
    config: str,
) -> contextlib.AbstractAsyncContextManager[tuple[RunningPlane, RunningPlane, str]]:
    """`two_running` with `config`, both planes on one clock at noon."""
    clock = ManualClock(NOON)
    return two_running(root, llm, url, monkeypatch, lease_s, config=config, clock=clock)


@contextlib.asynccontextmanager
async def one_running(
    root: Path,
    llm: ScriptedLLM,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    lease_s: float,
    config: str,
    clock: ManualClock,
) -> AsyncIterator[tuple[RunningPlane, str]]:
    """One plane of the fleet on the store at `url` and on `clock`, its
    gateway listening, and aider's key; stopped once done (the scripted
    model's streams hung up first)."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", lease_s)
    text = config.replace("{anthropic_url}", llm.anthropic_url)
    running = await launch(root, llm, text, clock, http=("127.0.0.1", 0))
    try:
        yield running, Keys(running.home.gateway_keys).make("aider")
    finally:
        llm.hang_up()
        await running.stop()


async def call(
    plane: RunningPlane,
    key: str,
    body: dict[str, Any] = SAME,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """One call of aider's client (Chat Completions) through `plane`'s
    gateway; `headers`: what it sends besides its key (a tag)."""
    async with local_client(base_url=f"http://127.0.0.1:{plane.plane.http_port}") as http:
        return await http.post(
            "/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {key}", **(headers or {})},
        )


async def spends(plane: RunningPlane, key: str, tokens: int) -> None:
    """One call of aider's through `plane`, costing `tokens` thousandths of a dollar."""
    plane.llm.default_reply = Reply("ok", Usage(input_tokens=tokens))
    answer = await call(plane, key, ASKED)
    assert answer.status_code == 200, answer.text


async def shown(
    subscription: Subscription, wanted: Callable[[p.AgentState], bool], within: float
) -> None:
    """Until a plane has shown a row of aider that `wanted` accepts."""

    async def one() -> None:
        while (event := await subscription.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.name == "aider":
                if wanted(event.agent):
                    return

    await asyncio.wait_for(one(), within)


async def until_held(plane: RunningPlane, held: bool, within: float = TOLD_S) -> None:
    """Until `plane`'s row of aider says it is held by the loop guard (or not)."""

    async def look() -> None:
        while True:
            state = await plane.rows.state("aider")
            if (state.status == "held" and state.hold_reason == "loop") == held:
                return
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(look(), within)
    except TimeoutError:
        said = "held" if held else "no longer held"
        message = f"the other plane's row of aider is not {said} after {within} s"
        raise AssertionError(message) from None


async def charged(plane: RunningPlane) -> int:
    """The calls in the fleet's ledger today."""
    return len(await plane.services.ledger.entries(plane.clock.now().date()))


async def refused_on(plane: RunningPlane, key: str, llm: ScriptedLLM) -> httpx.Response:
    """aider's next call through `plane`: refused, nothing sent upstream or charged."""
    sent, counted = len(llm.requests), await charged(plane)
    answer = await call(plane, key)
    assert answer.status_code == 400, answer.text
    assert len(llm.requests) == sent, "the refused call reached the provider"
    assert await charged(plane) == counted, "the refused call was charged"
    return answer
