"""Usage normalisation on the providers' documented response shapes (served
as they are by a local server), and replies whose usage cannot be trusted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from plane.providers.anthropic import AnthropicProvider, anthropic_usage
from plane.providers.base import BrokenReply, Provider
from plane.providers.openai import OpenAIProvider, openai_usage
from plane.wire.protocol import Usage
from tests.plane.providers.support import ask
from tests.support.fixtures_http import LocalServer, replying

# From OpenAI's prompt-caching guide: prompt_tokens includes cached_tokens.
OPENAI_DOC: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
}
# From Anthropic's prompt-caching docs: input_tokens excludes both cache counts.
ANTHROPIC_DOC: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Hi"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 21,
        "cache_creation_input_tokens": 188086,
        "cache_read_input_tokens": 0,
        "output_tokens": 393,
    },
}


def sse(events: list[dict[str, Any] | str], named: bool = False) -> bytes:
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        name = f"event: {event['type']}\n" if named and isinstance(event, dict) else ""
        out.append(f"{name}data: {data}\n\n")
    return "".join(out).encode()


def openai_on(server: LocalServer, body: bytes) -> Provider:
    server.answer = replying(body)
    return OpenAIProvider("o", base_url="https://llm.test/v1", connect=server.connect)


def anthropic_on(server: LocalServer, body: bytes) -> Provider:
    server.answer = replying(body)
    return AnthropicProvider("a", api_key="k", connect=server.connect)


def test_openai_cached_tokens_are_part_of_prompt_tokens():
    assert openai_usage(OPENAI_DOC["usage"]) == Usage(
        input_tokens=2006, cache_read_tokens=1920, cache_write_tokens=0, output_tokens=300
    )


def test_anthropic_cache_tokens_are_added_to_input_tokens():
    assert anthropic_usage(ANTHROPIC_DOC["usage"]) == Usage(
        input_tokens=21 + 188086,
        cache_read_tokens=0,
        cache_write_tokens=188086,
        output_tokens=393,
    )
    read = {"input_tokens": 50, "cache_read_input_tokens": 100_000, "output_tokens": 7}
    assert anthropic_usage(read) == Usage(
        input_tokens=100_050, cache_read_tokens=100_000, output_tokens=7
    )


def test_other_openai_compatible_cache_fields():
    deepseek = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    assert openai_usage(deepseek) == Usage(input_tokens=100, cache_read_tokens=64, output_tokens=5)
    openrouter = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 80},
    }
    assert openai_usage(openrouter).cache_write_tokens == 80
    absent = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": None}
    assert openai_usage(absent) == Usage(input_tokens=10, output_tokens=2)


async def test_documented_replies_through_the_clients(local_server: LocalServer):
    openai = openai_on(local_server, json.dumps(OPENAI_DOC).encode())
    got_openai = await openai.complete(ask(stream=False))
    anthropic = anthropic_on(local_server, json.dumps(ANTHROPIC_DOC).encode())
    got_anthropic = await anthropic.complete(ask(stream=False))
    assert got_openai.usage.cache_read_tokens == 1920 and got_openai.model == "gpt-4o-2024-08-06"
    assert got_anthropic.usage.input_tokens == 188107 and got_anthropic.text == "Hi"
    await openai.aclose()
    await anthropic.aclose()


async def test_anthropic_stream_takes_cumulative_usage_from_message_delta(
    local_server: LocalServer,
):
    """Newer API versions repeat the input counts in message_delta; the last
    word wins."""
    body = sse(
        [
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [],
                    "usage": {
                        "input_tokens": 5,
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {
                    "input_tokens": 5,
                    "cache_read_input_tokens": 900,
                    "cache_creation_input_tokens": 40,
                    "output_tokens": 12,
                },
            },
            {"type": "message_stop"},
        ],
        named=True,
    )
    provider = anthropic_on(local_server, body)
    completion = await provider.complete(ask())
    assert completion.usage == Usage(
        input_tokens=945, cache_read_tokens=900, cache_write_tokens=40, output_tokens=12
    )
    assert completion.model == "claude-haiku-4-5" and not completion.usage_estimated
    await provider.aclose()


async def test_an_anthropic_stream_whose_last_usage_says_zero_keeps_what_was_announced(
    local_server: LocalServer,
):
    """Anthropic's counts are cumulative: a server speaking the API that
    says 0 for the prompt in message_delta, after message_start announced
    20,000 tokens, did not make the prompt free."""
    start = {"input_tokens": 20000, "cache_read_input_tokens": 300, "output_tokens": 1}
    body = sse(
        [
            {
                "type": "message_start",
                "message": {"id": "m", "type": "message", "role": "assistant",
                            "model": "claude-haiku-4-5", "content": [], "usage": start},
            },
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "ok"}},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 12},
            },
            {"type": "message_stop"},
        ],
        named=True,
    )  # fmt: skip
    provider = anthropic_on(local_server, body)
    completion = await provider.complete(ask())
    assert completion.usage == Usage(input_tokens=20300, cache_read_tokens=300, output_tokens=12)
    await provider.aclose()


async def test_an_openai_reply_without_usage_is_estimated(local_server: LocalServer):
    reply = {k: v for k, v in OPENAI_DOC.items() if k != "usage"}
    provider = openai_on(local_server, json.dumps(reply).encode())
    completion = await provider.complete(ask(stream=False))
    assert completion.usage_estimated
    assert completion.usage == Usage(input_tokens=8, output_tokens=1)  # 25 chars in, 2 out
    await provider.aclose()


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -3, "completion_tokens": 1},
        {"prompt_tokens": "12", "completion_tokens": 1},
        {"prompt_tokens": 1.5, "completion_tokens": 1},
        {"prompt_tokens": 10**30, "completion_tokens": 1},  # no ledger row holds it
    ],
)
async def test_nonsense_token_counts_are_a_broken_reply(
    local_server: LocalServer, usage: dict[str, Any]
):
    provider = openai_on(local_server, json.dumps(OPENAI_DOC | {"usage": usage}).encode())
    with pytest.raises(BrokenReply, match="unexpected shape"):
        await provider.complete(ask(stream=False))
    await provider.aclose()


async def test_an_error_inside_a_stream_is_reported(local_server: LocalServer):
    openai = openai_on(
        local_server,
        sse(
            [
                {"choices": [{"index": 0, "delta": {"content": "par"}}]},
                {"error": {"message": "upstream overloaded", "code": 502}},
            ]
        ),
    )
    with pytest.raises(BrokenReply, match="upstream overloaded") as caught:
        await openai.complete(ask())
    assert caught.value.usage.output_tokens == 1
    anthropic = anthropic_on(
        local_server,
        sse(
            [
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ],
            named=True,
        ),
    )
    with pytest.raises(BrokenReply, match="overloaded_error"):
        await anthropic.complete(ask())
    await openai.aclose()
    await anthropic.aclose()


async def test_an_anthropic_stream_without_message_start_keeps_the_output_it_was_told(
    local_server: LocalServer,
):
    """llama.cpp's /v1/messages leaves out message_start when the answer
    opens with part of a character: the input is estimated (and the call
    marked so), the output is message_delta's own count, not a guess."""
    body = sse(
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "🌌"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 10},
            },
            {"type": "message_stop"},
        ],
        named=True,
    )
    provider = anthropic_on(local_server, body)
    completion = await provider.complete(ask())
    assert completion.usage_estimated and completion.text == "🌌"
    assert completion.usage.output_tokens == 10 and completion.usage.input_tokens > 0
    await provider.aclose()
