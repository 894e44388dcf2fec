"""CPU per streamed call of the HTTP clients the provider path could stand on,
in one run, against the same zero-latency server (bench/zero_server.py):

- bare httpx: one `httpx.AsyncClient` (its own pool, no cap), the body
  streamed, its SSE lines read and each event parsed;
- bare aiohttp: one `aiohttp.ClientSession` (no cap on connections), the
  same call read the same way;
- the plane's provider path: `OpenAIProvider.complete` (plane/providers, on
  aiohttp: the pooled session, retries, SSE, usage, the drain that gives
  the connection back), with no ledger, history or turn around it.

    .venv/bin/python bench/http_clients.py
    .venv/bin/python bench/http_clients.py --agents 100 --seconds 8

Streaming, usage and connection reuse are equal: each side reads every
event to the stream's end on keep-alive connections (the server counts the
new ones: ~0 a call on every side). Each side runs alone, in turn, for
`--seconds` once each agent has made a call. The aim: the plane's
whole metered call at <= 0.6x of one bare httpx call's CPU; the provider
path is its floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metering import Load, Server, Side, measure

from plane.providers.base import ChatMessage, CompletionRequest
from plane.providers.openai import OpenAIProvider

AIM = 0.6
HISTORY = "What is the weather like? " * 80
"""A turn's history of about 2 KB, as the metering bench's bodies run."""

Call = Callable[[int], Awaitable[None]]


def request() -> CompletionRequest:
    return CompletionRequest(
        model="zero-model",
        system="You are a helpful, brief assistant.",
        messages=(ChatMessage("user", HISTORY),),
        max_output_tokens=256,
    )


async def side(server: Server, agents: int, call: Call, warmup: float, seconds: float) -> Side:
    load = Load(agents, call)
    measured = await measure(server, load, agents, warmup, seconds, None)
    await load.stop()
    return measured


async def bare_httpx(server: Server, body: dict[str, Any], args: argparse.Namespace) -> Side:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=server.base_url, limits=limits) as client:

        async def call(n: int) -> None:
            async with client.stream("POST", "/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        json.loads(line[6:])

        return await side(server, args.agents, call, args.warmup, args.seconds)


async def bare_aiohttp(server: Server, body: dict[str, Any], args: argparse.Namespace) -> Side:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(server.base_url + "/", connector=connector) as session:

        async def call(n: int) -> None:
            async with session.post("chat/completions", json=body) as response:
                async for raw in response.content:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data: ") and line != "data: [DONE]":
                        json.loads(line[6:])

        return await side(server, args.agents, call, args.warmup, args.seconds)


async def provider_path(server: Server, args: argparse.Namespace) -> Side:
    provider = OpenAIProvider("zero", base_url=server.base_url)
    asked = request()

    async def call(n: int) -> None:
        completion = await provider.complete(asked)
        assert not completion.usage_estimated, "the usage came back"

    try:
        return await side(server, args.agents, call, args.warmup, args.seconds)
    finally:
        await provider.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100, help="calls in flight")
    parser.add_argument("--seconds", type=float, default=6, help="measured, a side")
    parser.add_argument("--warmup", type=float, default=1, help="before measuring, a side")
    args = parser.parse_args()
    body = OpenAIProvider("zero", base_url="http://unused/v1").body(request())
    server = Server()
    try:
        sides = {
            "bare httpx": asyncio.run(bare_httpx(server, body, args)),
            "bare aiohttp": asyncio.run(bare_aiohttp(server, body, args)),
            "plane's provider path": asyncio.run(provider_path(server, args)),
        }
    finally:
        server.close()
    print(f"HTTP clients: {args.agents} calls in flight, streamed, zero-latency server")
    print(
        f"  {'':22} {'calls/s':>9} {'CPU ms/call':>12} {'x bare httpx':>13} {'new conns/call':>15}"
    )
    httpx_ms = sides["bare httpx"].cpu_ms
    for name, measured in sides.items():
        print(
            f"  {name:22} {measured.rate:9,.0f} {measured.cpu_ms:12.3f}"
            f" {measured.cpu_ms / httpx_ms:13.2f} {measured.per_call:15.3f}"
        )
    path = sides["plane's provider path"].cpu_ms / httpx_ms
    met = "within" if path <= AIM else "over"
    print(
        f"  the provider path alone: {path:.2f}x bare httpx, {met} the {AIM}x aim for a whole call"
    )


if __name__ == "__main__":
    main()
