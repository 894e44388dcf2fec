"""The official `anthropic` and `openai` SDKs as clients, through the
gateway to the scripted provider: metered, refused in their shape when held,
cut streams charged at their estimate, unknown keys refused."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

import httpx2
import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.sdk_replies import text_of
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk, openai, openai_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]

CLAUDE_USAGE = Usage(
    input_tokens=100, cache_read_tokens=20, cache_write_tokens=30, output_tokens=10
)
"""50 fresh at $0.001, 20 read at $0.0001, 30 written at $0.00125, 10 out at $0.002."""
CLAUDE_COST = Decimal("0.1095")
CHAT_USAGE = Usage(input_tokens=100, cache_read_tokens=40, output_tokens=10)
CHAT_COST = Decimal("0.084")
"""60 fresh at $0.001, 40 cached at $0.0001, 10 out at $0.002."""


def claude(gw: GatewayPlane, key: str | None = None) -> anthropic.AsyncAnthropic:
    return anthropic_sdk(base_url=gw.url, api_key=key or gw.keys["claude"], max_retries=0)


def chat(gw: GatewayPlane, key: str | None = None) -> openai.AsyncOpenAI:
    return openai_sdk(base_url=f"{gw.url}/v1", api_key=key or gw.keys["aider"], max_retries=0)


HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]
HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


async def test_an_anthropic_call_is_metered_from_its_usage(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    gw.llm.reply("hi there", usage=CLAUDE_USAGE)
    async with claude(gw) as client:
        reply = await client.messages.create(
            model="scripted-model",
            max_tokens=100,
            messages=HELLO,
            extra_headers={"X-Claude-Code-Session-Id": "5e55-10n"},
        )
    assert text_of(reply) == "hi there"
    [entry] = await gw.entries()
    assert (entry.agent, entry.status, entry.estimated) == ("claude", "settled", False)
    assert entry.usage == CLAUDE_USAGE
    assert entry.cost_usd == CLAUDE_COST
    assert await gw.services.ledger.spend_today("claude") == CLAUDE_COST
    line = (await gw.said("claude"))[-1]
    assert line.kind == "cost" and line.cost_usd == CLAUDE_COST
    assert line.text == "scripted-model · 100 in (20 cached) · 10 out · $0.11 · session 5e55-10n"
    assert (await gw.rows.state("claude")).spend_today_usd == CLAUDE_COST
    assert gw.llm.received[0].headers.get("anthropic-version")


async def test_an_anthropic_stream_is_metered_from_message_start_and_delta(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.reply("streamed words here", usage=CLAUDE_USAGE)
    async with claude(gw) as client:
        async with client.messages.stream(
            model="scripted-model", max_tokens=100, messages=HELLO
        ) as stream:
            text = "".join([piece async for piece in stream.text_stream])
    assert text == "streamed words here"
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated, entry.usage) == ("settled", False, CLAUDE_USAGE)
    assert entry.cost_usd == CLAUDE_COST


async def test_writes_to_the_one_hour_cache_are_metered_at_their_own_rate(
    start_gateway: StartGateway,
) -> None:
    """The stream's `message_start` splits the writes (`cache_creation`): 10 of
    the 30 kept for an hour cost $0.002 each, not the 5-minute $0.00125."""
    gw = await start_gateway()
    hour = CLAUDE_USAGE.model_copy(update={"cache_write_1h_tokens": 10})
    gw.llm.reply("kept an hour", usage=hour)
    async with claude(gw) as client:
        async with client.messages.stream(
            model="scripted-model", max_tokens=100, messages=HELLO
        ) as stream:
            await stream.until_done()
    [entry] = await gw.entries()
    assert entry.usage == hour
    assert entry.cost_usd == CLAUDE_COST + 10 * (Decimal("0.002") - Decimal("0.00125"))


async def test_a_chat_completions_call_is_metered_with_its_cached_tokens(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.reply("fine", usage=CHAT_USAGE)
    async with chat(gw) as client:
        reply = await client.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
    assert reply.choices[0].message.content == "fine"
    [entry] = await gw.entries()
    assert (entry.agent, entry.status, entry.usage) == ("aider", "settled", CHAT_USAGE)
    assert entry.cost_usd == CHAT_COST


async def test_a_chat_stream_is_metered_though_the_client_asked_no_usage(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.reply("one two three", usage=CHAT_USAGE)
    async with chat(gw) as client:
        stream = await client.chat.completions.create(
            model="scripted-model",
            messages=HELLO_CHAT,
            stream=True,
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert all(c.choices for c in chunks), "the usage chunk it did not ask for reached it"
    assert gw.llm.requests[0]["stream_options"] == {"include_usage": True}
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated, entry.usage) == ("settled", False, CHAT_USAGE)
    assert entry.cost_usd == CHAT_COST


async def over_its_ceiling(gw: GatewayPlane) -> None:
    """claude's one call of the day: $0.11, over the $0.10 ceiling set first."""
    await gw.services.gate.ceilings.set("claude", Decimal("0.10"))
    gw.llm.reply("first", usage=CLAUDE_USAGE)
    async with claude(gw) as client:  # likely $0.03: it fits, and bills $0.11
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)


async def test_over_its_ceiling_claude_gets_429_with_retry_after_to_midnight(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await over_its_ceiling(gw)
    async with claude(gw) as client:
        with pytest.raises(anthropic.RateLimitError) as refused:
            await client.messages.create(model="scripted-model", max_tokens=100, messages=HELLO)
    error = refused.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == str(12 * 3600)  # noon to 00:00 UTC
    assert isinstance(error.body, dict), "the error's body is JSON"
    assert error.body["error"]["type"] == "rate_limit_error"
    notice = error.body["error"]["message"]
    assert notice.startswith("claude has spent $0.11 today, over its $0.10 daily ceiling")
    assert "00:00 UTC" in notice
    assert len(gw.llm.requests) == 1, "the refused call reached the upstream"
    assert len(await gw.entries()) == 1
    assert any(m.text == notice for m in await gw.said("claude"))


async def test_a_held_clients_retries_are_told_once_across_a_restart(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await over_its_ceiling(gw)
    async with claude(gw) as client:
        for _ in range(2):
            with pytest.raises(anthropic.RateLimitError):
                await client.messages.create(model="scripted-model", max_tokens=100, messages=HELLO)
    gw = await start_gateway(restart=gw)
    async with claude(gw) as client:
        with pytest.raises(anthropic.RateLimitError):
            await client.messages.create(model="scripted-model", max_tokens=100, messages=HELLO)
    told = [m for m in await gw.said("claude") if m.text.startswith("claude has spent")]
    assert len(told) == 1, [m.text for m in told]


async def test_over_its_ceiling_a_chat_client_gets_400_saying_why(
    start_gateway: StartGateway,
) -> None:
    """Over a ceiling, the code says a ceiling was reached; a ceiling of
    $0.00 is a pause, which no spend reached, and says so."""
    gw = await start_gateway()
    gw.llm.reply("fine", usage=CHAT_USAGE)
    async with chat(gw) as client:
        await client.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
    held = {
        Decimal("0.05"): ("daily_ceiling_reached", "aider has spent $0.08 today, over its $0.05"),
        Decimal(0): ("agent_paused", "aider is paused: its daily ceiling is $0.00"),
    }
    for ceiling, (code, said) in held.items():
        await gw.services.gate.ceilings.set("aider", ceiling)
        async with chat(gw) as client:
            with pytest.raises(openai.BadRequestError) as refused:
                await client.chat.completions.create(
                    model="scripted-model",
                    messages=HELLO_CHAT,
                    stream=True,
                )
        assert refused.value.status_code == 400
        assert (refused.value.code, said in refused.value.message) == (code, True), ceiling
    assert len(gw.llm.requests) == 1 and len(await gw.entries()) == 1


async def test_a_stream_cut_midway_is_charged_at_its_estimate(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.cut_stream("half an answer", reset=True)
    watching = gw.watch()
    async with claude(gw) as client:
        # The client's connection breaks too: it must not take half an answer for one.
        with pytest.raises((anthropic.APIError, httpx2.RemoteProtocolError)):
            async with client.messages.stream(
                model="scripted-model", max_tokens=100, messages=HELLO
            ) as stream:
                async for _ in stream.text_stream:
                    pass
                await stream.get_final_message()
    line = await gw.settled(watching, "claude")
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated) == ("settled", True)
    assert entry.cost_usd > Decimal("0.2"), "100 output tokens at $0.002 are in the estimate"
    assert await gw.services.ledger.spend_today("claude") == entry.cost_usd
    assert "charged at its estimate" in line.text and line.cost_usd == entry.cost_usd


async def test_a_chat_stream_cut_before_its_usage_is_charged_at_its_estimate(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    gw.llm.cut_stream("half an answer")
    async with chat(gw) as client:
        stream = await client.chat.completions.create(
            model="scripted-model",
            messages=HELLO_CHAT,
            stream=True,
            max_tokens=50,
        )
        async for _ in stream:
            pass
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated) == ("settled", True)
    assert entry.cost_usd >= Decimal("0.1"), "50 output tokens at $0.002 are in the estimate"


@pytest.mark.parametrize("key", ["nobody-s-key", "plane-demo-abc"])
async def test_an_unknown_key_gets_401_in_each_apis_shape(
    start_gateway: StartGateway, key: str
) -> None:
    gw = await start_gateway()
    async with claude(gw, key) as client:
        with pytest.raises(anthropic.AuthenticationError) as by_anthropic:
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert isinstance(body := by_anthropic.value.body, dict)
    assert body["error"]["type"] == "authentication_error"
    async with chat(gw, key) as oa:
        with pytest.raises(openai.AuthenticationError) as by_openai:
            await oa.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
    assert "plane key AGENT" in by_openai.value.message
    assert gw.llm.requests == [] and await gw.entries() == []


async def test_a_rotated_key_replaces_the_old_one(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    from plane.gateway.keys import Keys

    old = gw.keys["claude"]
    gw.llm.reply("ok")
    async with claude(gw, old) as client:  # the plane has read the keys once
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    new = Keys(gw.home.gateway_keys).make("claude")
    async with claude(gw, old) as client:
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    gw.llm.reply("ok")
    async with claude(gw, new) as client:
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert gw.home.gateway_keys.stat().st_mode & 0o777 == 0o600
    assert (
        old not in gw.home.gateway_keys.read_text() and new not in gw.home.gateway_keys.read_text()
    )
