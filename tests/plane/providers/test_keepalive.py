"""Streamed calls reuse their connection: the body's end is received after
the last event (waited for a moment when it has not come yet), so the
connection goes back to the pool (against a real provider, a connection
given up costs a TLS handshake per call)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from plane.providers import http
from plane.providers.base import Provider
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from plane.wire.protocol import Usage
from tests.plane.providers.support import SECRET, ask
from tests.support.scripted_llm import ScriptedLLM

CALLS = 20


async def test_streamed_calls_share_one_connection(provider: Provider, scripted_llm: ScriptedLLM):
    for n in range(CALLS):
        scripted_llm.reply(f"answer {n}", usage=Usage(input_tokens=10, output_tokens=2))
    for n in range(CALLS):
        completion = await provider.complete(ask(stream=True))
        assert completion.text == f"answer {n}"
    assert scripted_llm.connections_accepted / CALLS <= 0.05


async def test_a_stream_whose_end_already_arrived_keeps_its_connection_however_late_the_loop(
    monkeypatch: pytest.MonkeyPatch, retry: RetryPolicy
):
    """A server that sends its last event and the terminating chunk in one
    write (as providers do): the end has been received when the reader stops,
    so nothing is waited for. With the drain's time at 0 (a loop running so
    late that any timer would win), the connection still goes back."""
    monkeypatch.setattr(http, "DRAIN_S", 0.0)
    accepted = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE)
            await reader.readexactly(int(length.group(1)) if length else 0)
            writer.write(_WHOLE_REPLY)
            await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = OpenAIProvider(
        "whole", base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET, retry=retry, timeout_s=2
    )
    try:
        for _ in range(CALLS):
            assert (await provider.complete(ask(stream=True))).text == "hi"
    finally:
        await provider.aclose()
        server.close()
    assert accepted == 1


def _event(data: object) -> bytes:
    payload = f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_WHOLE_REPLY = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
    + _event({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]})
    + _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    + _event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    + _event("[DONE]")
    + b"0\r\n\r\n"
)
