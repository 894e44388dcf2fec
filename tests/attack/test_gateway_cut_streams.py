"""Attack: the upstream breaks its stream (a TCP reset) at each point of
the protocol. The call is settled, never left pending: at its usage once
the provider has sent it whole, otherwise at the larger of its estimate and
what the provider had announced so far.

A real plane with its HTTP listener; the scripted upstream sends the
provider's events verbatim, then resets the connection.
"""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import (
    chat_chunks,
    chat_stream,
    messages_stream,
    responses_stream,
)

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
START = {"input_tokens": 20, "output_tokens": 1}
"""20 tokens in ($0.02): less than the call's estimate ($0.026)."""


async def cut(gw: GatewayPlane, agent: str, events: list[bytes]) -> bytes:
    """Send `events`, then break the stream; what the client was shown."""
    gw.llm.verbatim(*events, reset=True)
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 1000, "stream": True}
    path, heads = gw.calls_as(agent)
    watching, shown = gw.watch(), b""
    async with local_client(base_url=gw.url, timeout=20) as http:
        with pytest.raises(httpx.HTTPError):  # a broken stream is never shown as whole
            async with http.stream("POST", path, json=body, headers=heads) as answer:
                async for chunk in answer.aiter_raw():
                    shown += chunk
    await gw.settled(watching, agent)
    return shown


async def test_cut_after_the_final_usage_is_charged_that_usage(
    start_gateway: StartGateway,
) -> None:
    """Anthropic's `message_delta` or the Chat Completions usage chunk came,
    then the stream broke before its end: the provider billed that usage."""
    gw = await start_gateway()
    final = {"prompt_tokens": 20, "completion_tokens": 900}
    await cut(gw, "claude", messages_stream(START, {"output_tokens": 900})[:-1])
    await cut(gw, "aider", chat_stream(final)[:-1])
    entries = sorted(await gw.entries(), key=lambda e: e.id)
    assert [(e.status, e.estimated, e.cost_usd) for e in entries] == [
        ("settled", False, Decimal("1.82")),
        ("settled", False, Decimal("1.82")),
    ]


async def test_cut_before_anything_is_charged_the_estimate(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    await cut(gw, "claude", [])
    await cut(gw, "aider", [])
    entries = await gw.entries()
    assert [(e.status, e.price_source) for e in entries] == [("settled", "estimate")] * 2


async def test_a_usage_reported_as_it_goes_is_not_the_final_one(
    start_gateway: StartGateway,
) -> None:
    """A server that puts the usage so far in every chunk (vLLM's
    `continuous_usage_stats`, which a client may ask for): cut after the
    second, the call is charged its estimate ($0.026), not the 20 in and
    2 out that were reported so far ($0.024). Each chunk was shown as it came."""
    gw = await start_gateway()
    so_far = [{"prompt_tokens": 20, "completion_tokens": n} for n in (1, 2)]
    events = chat_chunks(["a", "b"], list(so_far))
    assert await cut(gw, "aider", events) == b"".join(events)
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated, entry.price_source) == ("settled", True, "estimate")


@pytest.mark.parametrize(
    ("agent", "path", "events"),
    [
        ("claude", "/v1/messages", messages_stream(START, {"output_tokens": 900})),
        (
            "aider",
            "/v1/chat/completions",
            chat_stream({"prompt_tokens": 20, "completion_tokens": 900}),
        ),
        ("aider", "/v1/responses", responses_stream({"input_tokens": 20, "output_tokens": 900})),
    ],
)
async def test_a_stream_ends_at_its_last_event_though_its_upstream_keeps_it_open(
    start_gateway: StartGateway, agent: str, path: str, events: list[bytes]
) -> None:
    """The upstream (or a proxy before it) sends the stream's last event
    (`message_stop`, `data: [DONE]`, `response.completed`), then keeps the
    connection open for a minute. The client's stream ends at that event,
    whole, and the call is settled at its usage by then: not left pending,
    its client waiting, until the upstream's read timeout."""
    gw = await start_gateway()
    gw.llm.verbatim(*events, hold_s=60)
    body = {"model": "scripted-model", "max_tokens": 1000, "stream": True}
    if path == "/v1/responses":
        body["input"] = "hello"
    else:
        body |= {"messages": HELLO, "stream_options": {"include_usage": True}}
    if agent == "claude":
        heads = {"x-api-key": gw.keys[agent], "anthropic-version": "2023-06-01"}
    else:
        heads = {"authorization": f"Bearer {gw.keys[agent]}"}
    shown = b""
    async with local_client(base_url=gw.url, timeout=10) as http:
        async with http.stream("POST", path, json=body, headers=heads) as answer:
            async for chunk in answer.aiter_raw():
                shown += chunk
    assert shown == b"".join(events)
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated, entry.cost_usd) == ("settled", False, Decimal("1.82"))
