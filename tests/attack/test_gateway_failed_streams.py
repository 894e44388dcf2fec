"""Attack: an Anthropic stream that fails before it starts — an `event:
error` (`overloaded_error`) before any `message_start` — which Claude
Code retries. Anthropic bills failed requests nothing ("In general, failed
requests are not charged, and you will only be billed for successful API
calls and completed tasks": support.claude.com, "How will I be billed for
Claude API use?"), so such a call is written failed, $0, as an upstream's
own error status is; charged its estimate, a provider overloaded for a
while held an agent that had bought nothing.

A stream that fails after it started keeps the rule of a stream cut short:
what the provider announced, at least its estimate, never $0.

A real plane with its HTTP listener and the scripted upstream.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client

pytestmark = [pytest.mark.timeout(30)]

HELLO = [{"role": "user", "content": "hello"}]
OVERLOADED = (
    b"event: error\n"
    b'data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
)
STARTED = (
    b"event: message_start\n"
    + b"data: "
    + json.dumps(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "scripted-model",
                "content": [],
                "usage": {"input_tokens": 2000, "output_tokens": 1},
            },
        }
    ).encode()
    + b"\n\n"
)


async def streamed(gw: GatewayPlane) -> str:
    """claude's streamed call: what its client read."""
    path, heads = gw.calls_as("claude")
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100, "stream": True}
    async with local_client(base_url=gw.url, timeout=10) as http:
        answer = await http.post(path, json=body, headers=heads)
    assert answer.status_code == 200
    return answer.text


async def test_an_anthropic_stream_that_fails_before_it_starts_is_charged_nothing(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.verbatim(OVERLOADED)
    assert "overloaded_error" in await streamed(gw), "the client sees the provider's error"
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd) == ("failed", Decimal(0))
    assert await gw.services.ledger.spend_today("claude") == 0


async def test_an_anthropic_stream_that_fails_once_started_is_charged_what_was_announced(
    start_gateway: StartGateway,
) -> None:
    """2,000 prompt tokens announced ($2.00), then the error: charged at least that."""
    gw = await start_gateway()
    gw.llm.verbatim(STARTED, OVERLOADED)
    assert "overloaded_error" in await streamed(gw)
    [entry] = await gw.entries()
    assert entry.status == "settled"
    assert entry.cost_usd >= Decimal(2), entry.cost_usd
