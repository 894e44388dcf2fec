"""The scripted server itself: its replies are shaped like the providers'
documented ones, and every fault shows up on the wire as it should."""

from __future__ import annotations

import json

import httpx
import pytest

from plane.wire.protocol import Usage
from tests.support import local_http
from tests.support.scripted_llm import ScriptedLLM, derived_usage

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello there"}]}
ANTHROPIC = {"model": "claude-x", "max_tokens": 10, "messages": CHAT["messages"]}


def sse_data(text: str) -> list[str]:
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


def test_openai_reply_carries_cached_tokens_inside_prompt_tokens(scripted_llm: ScriptedLLM):
    usage = Usage(input_tokens=100, cache_read_tokens=60, output_tokens=7)
    scripted_llm.reply("hi", usage=usage, tool_calls=[("read", {"path": "a"})])
    body = local_http.post(f"{scripted_llm.base_url}/chat/completions", json=CHAT).json()
    assert body["usage"]["prompt_tokens"] == 100
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 60
    assert body["usage"]["completion_tokens"] == 7
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "read", "arguments": '{"path": "a"}'}
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert scripted_llm.requests == [CHAT]


def test_anthropic_reply_keeps_cache_tokens_out_of_input_tokens(scripted_llm: ScriptedLLM):
    usage = Usage(input_tokens=100, cache_read_tokens=60, cache_write_tokens=30, output_tokens=7)
    scripted_llm.reply("hi", usage=usage)
    body = local_http.post(f"{scripted_llm.anthropic_url}/v1/messages", json=ANTHROPIC).json()
    assert body["usage"] == {
        "input_tokens": 10,
        "cache_creation_input_tokens": 30,
        "cache_read_input_tokens": 60,
        "output_tokens": 7,
    }
    assert body["content"] == [{"type": "text", "text": "hi"}]


def test_openai_stream_has_usage_only_when_asked(scripted_llm: ScriptedLLM):
    url = f"{scripted_llm.base_url}/chat/completions"
    with_usage = local_http.post(
        url, json=CHAT | {"stream": True, "stream_options": {"include_usage": True}}
    ).text
    without = local_http.post(url, json=CHAT | {"stream": True}).text
    chunks = sse_data(with_usage)
    assert chunks[-1] == "[DONE]"
    final = json.loads(chunks[-2])
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 1
    text = "".join(json.loads(c)["choices"][0]["delta"].get("content") or "" for c in chunks[:-2])
    assert text == "ok"
    assert all("usage" not in json.loads(c) for c in sse_data(without)[:-1])


def test_anthropic_stream_follows_the_documented_event_sequence(scripted_llm: ScriptedLLM):
    scripted_llm.reply("two words", tool_calls=[("grep", {"q": "x"})])
    text = local_http.post(
        f"{scripted_llm.anthropic_url}/v1/messages", json=ANTHROPIC | {"stream": True}
    ).text
    kinds = [json.loads(d)["type"] for d in sse_data(text)]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_cut_stream_ends_before_usage(scripted_llm: ScriptedLLM):
    scripted_llm.cut_stream(after_text="partial answer")
    body = CHAT | {"stream": True, "stream_options": {"include_usage": True}}
    text = local_http.post(f"{scripted_llm.base_url}/chat/completions", json=body).text
    assert "partial" in text and 'usage": {' not in text and "[DONE]" not in text


def test_faults_malformed_reset_and_hang(scripted_llm: ScriptedLLM):
    url = f"{scripted_llm.base_url}/chat/completions"
    scripted_llm.fault(429, retry_after=3).malformed().reset_connection().hang(5)
    faulted = local_http.post(url, json=CHAT)
    assert faulted.status_code == 429 and faulted.headers["retry-after"] == "3"
    with pytest.raises(json.JSONDecodeError):
        local_http.post(url, json=CHAT).json()
    with pytest.raises(httpx.TransportError):
        local_http.post(url, json=CHAT)
    with pytest.raises(httpx.ReadTimeout):
        local_http.post(url, json=CHAT, timeout=httpx.Timeout(5, read=0.2))
    assert len(scripted_llm.requests) == 4 and scripted_llm.pending == 0


def test_default_reply_and_derived_usage_are_deterministic(scripted_llm: ScriptedLLM):
    scripted_llm.default_reply = "fine"
    url = f"{scripted_llm.base_url}/chat/completions"
    first, second = (local_http.post(url, json=CHAT).json() for _ in range(2))
    assert first["usage"] == second["usage"]
    assert first["choices"][0]["message"]["content"] == "fine"
    # "hello there" is 11 characters: ceil(11 / 4) = 3 in; "fine": 1 out.
    assert derived_usage(CHAT, "fine") == Usage(input_tokens=3, output_tokens=1)
    assert first["usage"]["prompt_tokens"] == 3


def test_runs_outside_pytest_as_a_context_manager():
    with ScriptedLLM() as llm:
        url = llm.base_url
        assert local_http.get(f"{url}/models").status_code == 200
    with pytest.raises(httpx.ConnectError):
        local_http.get(f"{url}/models")
