"""A gateway agent's call priced at a floor (its upstream answered with a
model that has no known price) says the rest of its day is unpriced on every
plane of a fleet: two planes in this process on one real PostgreSQL, each
with its gateway. A gateway agent has no lease; its client calls whichever
plane it reached. The floor call made on plane A shows as `+$?` on plane B
(`plane status --json`) at B's next renewal, and stays there once A has
stopped; one made on B shows on A the same way."""

from __future__ import annotations

import asyncio
import json

import pytest

from plane.daemon import fleet
from plane.gateway.keys import Keys
from tests.support.command import plane_cli_async
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane, launch
from tests.support.local_http import local_client
from tests.support.scripted_llm import ScriptedLLM
from tests.support.stream_events import chat_reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0

CONFIG = GATEWAY + "  codex: {provider: scripted, gateway: {}}\n"


async def floor_call(plane: RunningPlane, llm: ScriptedLLM, agent: str) -> None:
    """One call of `agent`'s client through `plane`'s gateway for a model
    with a list price, answered by one with no known price: charged at a floor."""
    key = Keys(plane.home.gateway_keys).make(agent)
    llm.fault(
        200, body=chat_reply({"prompt_tokens": 1000, "completion_tokens": 100}, "mystery-model")
    )
    assert plane.http is not None
    async with local_client(base_url=f"http://127.0.0.1:{plane.plane.http_port}") as http:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        answer = await http.post(
            "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200, answer.text


async def floored(plane: RunningPlane) -> set[str]:
    """The agents `plane status --json` on `plane` says spent an unpriced rest today."""
    status = await plane_cli_async(plane.home.root, "status", "--json")
    assert status.returncode == 0, status.stderr
    return {a["name"] for a in json.loads(status.stdout)["agents"] if a["floor_priced"]}


async def until_floored(plane: RunningPlane, agents: set[str]) -> None:
    while not agents <= await floored(plane):  # noqa: ASYNC110 - the planes' ticks move it
        await asyncio.sleep(0.2)


async def test_a_floor_priced_call_on_one_plane_shows_on_the_other(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    config = CONFIG.replace("{anthropic_url}", scripted_llm.anthropic_url)
    on = ("127.0.0.1", 0)
    a = await launch(tmp_path / "a", scripted_llm, config, http=on)
    running = [a]
    try:
        b = await launch(tmp_path / "b", scripted_llm, config, http=on)
        running.append(b)
        await floor_call(a, scripted_llm, "aider")
        await floor_call(b, scripted_llm, "codex")
        await asyncio.wait_for(until_floored(a, {"aider"}), 5 * LEASE_S)  # its own, at once
        await asyncio.wait_for(until_floored(b, {"aider", "codex"}), 5 * LEASE_S)
        await asyncio.wait_for(until_floored(a, {"aider", "codex"}), 5 * LEASE_S)

        running.remove(a)
        await a.stop()
        assert await floored(b) == {"aider", "codex"}, "A gone, its floor call still counts"
    finally:
        scripted_llm.hang_up()
        for plane in reversed(running):
            await plane.stop()
