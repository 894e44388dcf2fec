"""OpenAI Responses (`/v1/responses`, what Codex speaks) through the gateway,
with the official `openai` SDK as the client, to a real HTTP server answering
the Responses shapes (tests/support/fixtures_responses.py)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from plane.gateway.keys import Keys
from tests.support.fixtures_gateway import StartGateway
from tests.support.fixtures_responses import COST, Upstream, responses_config
from tests.support.sdks import ON_ONE_WORKER, openai, openai_sdk

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]


async def test_a_responses_call_is_metered_streaming_and_not(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str]
) -> None:
    served, base_url = responses_upstream
    gw = await start_gateway(responses_config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        plain = await client.responses.create(model="scripted-model", input="hello")
        stream = await client.responses.create(model="scripted-model", input="hello", stream=True)
        kinds = [event.type async for event in stream]
    assert plain.output_text == "plain answer"
    assert kinds[-1] == "response.completed"
    entries = await gw.entries()
    assert [(e.agent, e.status, e.estimated, e.cost_usd) for e in entries] == [
        ("codex", "settled", False, COST),
        ("codex", "settled", False, COST),
    ]
    assert len(served.requests) == 2


async def test_a_held_codex_gets_a_400_with_the_planes_sentence(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str]
) -> None:
    served, base_url = responses_upstream
    gw = await start_gateway(responses_config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    await gw.services.gate.ceilings.set("codex", Decimal(0))
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model="scripted-model", input="hello")
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "agent_paused"
    assert error["message"].startswith("codex is paused: its daily ceiling is $0.00")
    assert served.requests == []


async def test_a_responses_stream_cut_before_completed_is_charged_at_its_estimate(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str]
) -> None:
    served, base_url = responses_upstream
    served.cut = True
    gw = await start_gateway(responses_config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    watching = gw.watch()
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        stream = await client.responses.create(
            model="scripted-model", input="hello", stream=True, max_output_tokens=50
        )
        async for _ in stream:
            pass
    await gw.settled(watching, "codex")
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated) == ("settled", True)
    assert entry.cost_usd >= Decimal("0.1")


async def test_function_call_outputs_are_compressed_for_an_agent_that_asks(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str]
) -> None:
    served, base_url = responses_upstream
    text = responses_config(base_url).replace(
        "codex: {provider: responses-up, gateway: {}}",
        "codex: {provider: responses-up, gateway: {compress: true}}",
    )
    gw = await start_gateway(text)
    key = Keys(gw.home.gateway_keys).make("codex")
    listing = json.dumps([{"id": i, "name": f"item {i}", "ok": True} for i in range(200)], indent=2)
    items: list[Any] = [
        {"role": "user", "content": listing},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": listing},
    ]
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        await client.responses.create(model="scripted-model", input=items)
    sent = served.requests[0]["input"]
    assert sent[0]["content"] == listing and len(sent[2]["output"]) < len(listing) / 10
