"""Metered LLM calls per second through the plane, next to a bare
`httpx.AsyncClient` making the same streamed calls to the same server at the
same concurrency, in one run.

    .venv/bin/python bench/metering.py
    .venv/bin/python bench/metering.py --agents 1000 --seconds 10
    .venv/bin/python bench/metering.py --profile /tmp/plane.prof   # cProfile of the plane's side

The server is `bench/zero_server.py`, in a process of its own: an
OpenAI-compatible chat-completions endpoint that streams a short answer with
its usage at once, on keep-alive connections.

- The plane's side: a real plane (a temporary home, its SQLite file) with
  `--agents` agents on that server. Each agent is sent a message, and when
  its turn finishes, the next: every turn is one metered call (written
  pending, sent, streamed, settled), its answer and cost line stored, its
  events published (one subscriber: this bench, waiting for the turns' ends).
- The bare side: `--agents` coroutines, each streaming the plane's own first
  request body, reading the SSE lines and parsing each event, one call after
  another, on one client.

For each side: calls/s, CPU ms per call (this process's CPU time, its
threads included, over the calls made) and new TCP connections per call (as
the server counts them, over the measured window). Aims (issue 14): the
plane at >= 0.7x the bare client's calls/s, <= 0.05 new connections per call.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from plane.providers import connections
from plane.wire import protocol as p

RATIO_AIM = 0.7
CONNECTIONS_AIM = 0.05
SERVER = Path(__file__).with_name("zero_server.py")
WARMUP_S = 1.0
"""Each side runs this long before it is measured: connections open, caches warm."""

CONFIG = """
defaults:
  limitUsd: 1000000
  provider: zero
  model: zero-model
  max_calls_per_turn: 8
providers:
  zero:
    kind: openai-compatible
    base_url: {base_url}
    models: [zero-model]
    max_retries: 0
pricing:
  zero-model: {{input: 1, cached_input: 0.1, output: 2}}
agents:
"""


@dataclass
class Side:
    calls: int
    seconds: float
    cpu_s: float
    connections: int

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_s / max(1, self.calls)

    @property
    def per_call(self) -> float:
        return self.connections / max(1, self.calls)


class Server:
    """The zero-latency server's process, and its counts."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        port = int(self.process.stdout.readline())
        self.url = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.url}/v1"

    def stats(self) -> dict[str, int]:
        return dict(httpx.get(f"{self.url}/stats").json())

    def reset(self) -> None:
        httpx.post(f"{self.url}/reset")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


class Load:
    """`agents` coroutines, each making one call after another while the
    load runs; paused, they finish the calls in flight and wait."""

    def __init__(self, name: str, agents: int, call: Callable[[int], Awaitable[None]]) -> None:
        self.name = name
        self.side = Side(0, 0.0, 0.0, 0)
        self._call = call
        self._running = asyncio.Event()
        self._in_flight = 0
        self._drained = asyncio.Event()
        self._stop = False
        self.done = 0
        self._tasks = [asyncio.create_task(self._agent(n)) for n in range(agents)]

    async def _agent(self, n: int) -> None:
        while True:
            await self._running.wait()
            if self._stop:
                return
            self._in_flight += 1
            try:
                await self._call(n)
                self.done += 1
            finally:
                self._in_flight -= 1
                if not self._in_flight:
                    self._drained.set()

    async def run_for(self, seconds: float) -> None:
        self._running.set()
        await asyncio.sleep(seconds)
        self._drained.clear()
        self._running.clear()
        if self._in_flight:
            await self._drained.wait()

    async def stop(self) -> None:
        self._stop = True
        self._running.set()
        await asyncio.gather(*self._tasks)


async def phase(server: Server, load: Load, seconds: float, profiler: Any) -> None:
    """`load` alone for `seconds`, counted into its side."""
    await asyncio.to_thread(server.reset)
    calls, cpu, start = load.done, time.process_time(), time.perf_counter()
    if profiler:
        profiler.enable()
    await load.run_for(seconds)
    if profiler:
        profiler.disable()
    side = load.side
    side.calls += load.done - calls
    side.cpu_s += time.process_time() - cpu
    side.seconds += time.perf_counter() - start
    side.connections += (await asyncio.to_thread(server.stats))["connections"]


async def bench(
    server: Server, agents: int, seconds: float, rounds: int, profile: Path | None
) -> list[Side]:
    """The plane, bare httpx, and bare httpx on the plane's pool, taking
    turns for `rounds` rounds (the machine's load drifts alike for each)."""
    names = [f"agent-{n}" for n in range(agents)]
    text = CONFIG.format(base_url=server.base_url) + "".join(f"  {n}: {{}}\n" for n in names)
    with tempfile.TemporaryDirectory() as tmp:
        plane = Plane(parse_config(text), Home(Path(tmp) / "home"))
        await plane.startup()
        provider: Any = plane.services.providers["zero"]
        bodies: list[dict[str, Any]] = []
        body = provider.body

        def first_body(request: Any) -> dict[str, Any]:
            made: dict[str, Any] = body(request)
            bodies.append(made)
            provider.body = body  # once: the plane's own method from then on
            return made

        provider.body = first_body
        subscription = plane.bus.subscribe()
        finished = {n: asyncio.Event() for n in names}

        async def watch() -> None:
            while (event := await subscription.next()) is not None:
                if isinstance(event, p.TurnFinished):
                    if not event.ok:
                        raise RuntimeError(f"a turn failed: {event}")
                    finished[event.agent].set()

        async def turn(n: int) -> None:
            name = names[n]
            finished[name].clear()
            await plane.api.send(name, "What is the weather like?")
            await finished[name].wait()

        watcher = asyncio.create_task(watch())
        loads = [Load("plane", agents, turn)]
        await loads[0].run_for(WARMUP_S)
        if watcher.done():
            watcher.result()  # a turn failed: say why
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        bare = httpx.AsyncClient(base_url=server.base_url, limits=limits)
        pooled = httpx.AsyncClient(base_url=server.base_url, transport=connections.pooled())
        for client, name in ((bare, "bare httpx"), (pooled, "bare, plane's pool")):
            loads.append(Load(name, agents, streamed(client, bodies[0])))
            await loads[-1].run_for(WARMUP_S)
        profiler = cProfile.Profile() if profile else None
        for _ in range(rounds):
            for load in loads:
                await phase(server, load, seconds / rounds, profiler if load is loads[0] else None)
        if watcher.done():
            watcher.result()
        for load in loads:
            await load.stop()
        await bare.aclose()
        await pooled.aclose()
        plane.bus.unsubscribe(subscription)
        watcher.cancel()
        plane.stop_event.set()
        await plane.shutdown()
    if profiler and profile:
        profiler.dump_stats(profile)
    return [load.side for load in loads]


def streamed(client: httpx.AsyncClient, body: dict[str, Any]) -> Callable[[int], Awaitable[None]]:
    """One call as a bare client makes it: streamed, each event parsed."""

    async def call(n: int) -> None:
        async with client.stream("POST", "/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line[6:])

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=8, help="measured, a side")
    parser.add_argument("--rounds", type=int, default=6, help="the sides take turns this often")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the plane's side here")
    args = parser.parse_args()
    server = Server()
    try:
        plane, bare, pooled = asyncio.run(
            bench(server, args.agents, args.seconds, args.rounds, args.profile)
        )
    finally:
        server.close()
    print(f"metering: {args.agents} agents, one call a turn, zero-latency server")
    print(f"  {'':20} {'calls/s':>9} {'CPU ms/call':>12} {'new conns/call':>15}")
    for name, side in (("bare httpx", bare), ("bare, plane's pool", pooled), ("plane", plane)):
        print(f"  {name:20} {side.rate:9,.0f} {side.cpu_ms:12.2f} {side.per_call:15.3f}")
    ratio = plane.rate / bare.rate
    met = "met" if ratio >= RATIO_AIM else "NOT met"
    print(f"  plane vs bare httpx: {ratio:.2f}x calls/s (aim >= {RATIO_AIM:.1f}x: {met}),", end="")
    print(f" {bare.cpu_ms / plane.cpu_ms:.2f}x CPU a call")
    ratio = plane.rate / pooled.rate
    print(f"  plane vs bare on the plane's pool: {ratio:.2f}x calls/s,", end="")
    print(f" {pooled.cpu_ms / plane.cpu_ms:.2f}x CPU a call")
    met = "met" if plane.per_call <= CONNECTIONS_AIM else "NOT met"
    aim = f"aim <= {CONNECTIONS_AIM}: {met}"
    print(f"  plane: {plane.per_call:.3f} new connections per call ({aim})")


if __name__ == "__main__":
    main()
