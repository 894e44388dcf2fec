"""A small real HTTP server answering OpenAI Responses (`/v1/responses`),
which the scripted provider server does not speak: the upstream of the
gateway's Responses tests and of the Codex end-to-end test."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from aiohttp import web

from tests.support.fixtures_gateway import CONFIG

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


def _events(text: str, *, cut: bool) -> list[dict[str, Any]]:
    """A Responses stream as OpenAI sends one: the item and its part opened,
    the text, both closed, then `response.completed` with the usage (left
    out when `cut`)."""
    item = {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant"}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("", None) | {"status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item | {"content": []}},
        {"type": "response.content_part.added", **where, "part": part},
        {"type": "response.output_text.delta", **where, "delta": text},
    ]
    if cut:
        return events
    done_part = part | {"text": text}
    done_item = item | {"status": "completed", "content": [done_part]}
    return [
        *events,
        {"type": "response.output_text.done", **where, "text": text},
        {"type": "response.content_part.done", **where, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": _response(text, USAGE)},
    ]


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
        events = _events("streamed answer", cut=self.cut)
        for n, event in enumerate(events):
            event["sequence_number"] = n
            await out.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await out.write_eof()
        return out


@pytest.fixture
async def responses_upstream() -> AsyncIterator[tuple[Upstream, str]]:
    served = Upstream()
    app = web.Application()
    app.router.add_post("/v1/responses", served.answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    [(_, port)] = runner.addresses
    yield served, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


def responses_config(base_url: str) -> str:
    """The gateway tests' config, with `codex` on a Responses upstream at `base_url`."""
    return CONFIG.replace(
        "providers:\n",
        f"providers:\n  responses-up: {{kind: openai-compatible, base_url: {base_url}}}\n",
    ).replace("agents:\n", "agents:\n  codex: {provider: responses-up, gateway: {}}\n")
