"""Attack: an upstream that misbehaves on the wire, against the plane's
client (the providers' and the gateway's, both on aiohttp):

- a redirect to another server: not followed, so the API key goes nowhere
  else (aiohttp follows redirects by default, and keeps `x-api-key` across
  origins);
- a stream whose end never comes after its last event: the call returns
  within the drain's bound, and its connection is not reused;
- a stream compressed with gzip: read as any other;
- a stream that ends without a blank line after its last event.
"""

from __future__ import annotations

import asyncio
import gzip
import re

import pytest
from aiohttp import web

from plane.errors import ProviderError
from plane.providers import http
from plane.providers.anthropic import AnthropicProvider
from plane.providers.base import Provider
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from tests.plane.providers.support import SECRET, ask
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.fixtures_http import LocalServer
from tests.support.local_http import local_client
from tests.support.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.timeout(30)

NO_RETRIES = RetryPolicy(max_retries=0)


def elsewhere(llm: ScriptedLLM) -> web.Response:
    return web.Response(status=307, headers={"location": f"{llm.base_url}/chat/completions"})


def providers_on(url: str) -> list[Provider]:
    return [
        OpenAIProvider("o", base_url=f"{url}/v1", api_key=SECRET, retry=NO_RETRIES),
        AnthropicProvider("a", base_url=url, api_key=SECRET, retry=NO_RETRIES),
    ]


async def test_a_providers_redirect_is_not_followed_and_the_key_goes_nowhere_else(
    local_server: LocalServer, scripted_llm: ScriptedLLM
):
    async def redirect(request: web.BaseRequest) -> web.Response:
        return elsewhere(scripted_llm)

    local_server.answer = redirect
    for provider in providers_on(local_server.url):
        try:
            with pytest.raises(ProviderError, match=r"refused \(HTTP 307\)"):
                await provider.complete(ask())
        finally:
            await provider.aclose()
    assert len(local_server.seen) == 2
    assert scripted_llm.received == []


async def test_the_gateways_upstream_redirect_is_passed_on_not_followed(
    start_gateway: StartGateway, local_server: LocalServer, scripted_llm: ScriptedLLM
):
    async def redirect(request: web.BaseRequest) -> web.Response:
        return elsewhere(scripted_llm)

    local_server.answer = redirect
    gw = await start_gateway(CONFIG.replace("{base_url}", f"{local_server.url}/v1"))
    headers = {"authorization": f"Bearer {gw.keys['aider']}"}
    body = {"model": "scripted-model", "messages": [{"role": "user", "content": "hi"}]}
    async with local_client() as client:
        answer = await client.post(f"{gw.url}/v1/chat/completions", json=body, headers=headers)
    assert answer.status_code == 307
    assert len(local_server.seen) == 1 and scripted_llm.received == []
    [entry] = await gw.entries()
    assert entry.status == "failed"


_LAST = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}\n\n'
    b"data: [DONE]\n\n"
)


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


async def test_a_stream_whose_end_never_comes_returns_within_the_drain_and_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
):
    """The last event, then nothing: no terminating chunk, the connection held open."""
    monkeypatch.setattr(http, "DRAIN_S", 0.2)
    accepted = 0
    held: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        held.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + _chunk(_LAST)
        )
        await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = OpenAIProvider("held", base_url=f"http://127.0.0.1:{port}/v1", retry=NO_RETRIES)
    try:
        for _ in range(2):
            completion = await asyncio.wait_for(provider.complete(ask()), 5)
            assert completion.text == "hi" and not completion.usage_estimated
    finally:
        await provider.aclose()
        for writer in held:
            writer.close()
        server.close()
    assert accepted == 2


async def test_a_gzipped_stream_and_one_without_its_last_blank_line_are_read(
    local_server: LocalServer,
):
    bodies = [
        (gzip.compress(_LAST), {"content-encoding": "gzip"}),
        (_LAST.removesuffix(b"\n\n"), {}),
    ]

    async def answer(request: web.BaseRequest) -> web.Response:
        body, headers = bodies.pop(0)
        return web.Response(body=body, headers=headers, content_type="text/event-stream")

    local_server.answer = answer
    provider = OpenAIProvider("o", base_url=f"{local_server.url}/v1", retry=NO_RETRIES)
    try:
        for _ in range(2):
            completion = await provider.complete(ask())
            assert completion.text == "hi" and completion.usage.input_tokens == 5
            assert not completion.usage_estimated
    finally:
        await provider.aclose()
