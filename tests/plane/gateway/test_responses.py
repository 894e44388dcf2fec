"""OpenAI Responses (`/v1/responses`, what Codex speaks) through the gateway,
with the official `openai` SDK as the client. The scripted provider server
speaks Chat Completions and Messages only, so the upstream here is a small
real HTTP server answering the Responses shapes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import openai
import pytest
from aiohttp import web

from plane.gateway.keys import Keys
from tests.support.fixtures_gateway import CONFIG, StartGateway

pytestmark = pytest.mark.timeout(30)

USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 4},
    "total_tokens": 110,
}
COST = Decimal("0.084")
"""60 fresh at $0.001, 40 cached at $0.0001, 10 out (4 of them reasoning) at $0.002."""


def _response(text: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "scripted-model",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


class Upstream:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.cut = False

    async def answer(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if not body.get("stream"):
            return web.json_response(_response("plain answer", USAGE))
        out = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await out.prepare(request)
        events = [
            {
                "type": "response.created",
                "response": _response("", None) | {"status": "in_progress"},
            },
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "streamed answer",
            },
        ]
        if not self.cut:
            events.append(
                {"type": "response.completed", "response": _response("streamed answer", USAGE)}
            )
        for n, event in enumerate(events):
            event["sequence_number"] = n
            await out.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await out.write_eof()
        return out


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    served = Upstream()
    app = web.Application()
    app.router.add_post("/v1/responses", served.answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield served, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


def config(base_url: str) -> str:
    return CONFIG.replace(
        "providers:\n",
        f"providers:\n  responses-up: {{kind: openai-compatible, base_url: {base_url}}}\n",
    ).replace("agents:\n", "agents:\n  codex: {provider: responses-up, gateway: {}}\n")


async def test_a_responses_call_is_metered_streaming_and_not(
    start_gateway: StartGateway, upstream: tuple[Upstream, str]
) -> None:
    served, base_url = upstream
    gw = await start_gateway(config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    async with openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
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


async def test_a_held_codex_gets_usage_limit_reached_with_resets_at(
    start_gateway: StartGateway, upstream: tuple[Upstream, str]
) -> None:
    served, base_url = upstream
    gw = await start_gateway(config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    await gw.services.gate.ceilings.set("codex", Decimal(0))
    async with openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        with pytest.raises(openai.RateLimitError) as refused:
            await client.responses.create(model="scripted-model", input="hello")
    error = refused.value.body
    assert isinstance(error, dict) and error["type"] == "usage_limit_reached"
    midnight = int(gw.services.gate.resets_at().timestamp())
    assert (error["resets_at"], error["resets_in_seconds"]) == (midnight, 12 * 3600)
    assert error["message"].startswith("codex has spent $0.00 today, at its $0.00 daily ceiling")
    assert refused.value.response.headers["retry-after"] == str(12 * 3600)
    assert served.requests == []


async def test_a_responses_stream_cut_before_completed_is_charged_at_its_estimate(
    start_gateway: StartGateway, upstream: tuple[Upstream, str]
) -> None:
    served, base_url = upstream
    served.cut = True
    gw = await start_gateway(config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    watching = gw.watch()
    async with openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
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
    start_gateway: StartGateway, upstream: tuple[Upstream, str]
) -> None:
    served, base_url = upstream
    text = config(base_url).replace(
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
    async with openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as client:
        await client.responses.create(model="scripted-model", input=items)
    sent = served.requests[0]["input"]
    assert sent[0]["content"] == listing and len(sent[2]["output"]) < len(listing) / 10
