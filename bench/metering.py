"""Metered LLM calls through the plane, next to a bare `httpx.AsyncClient`
and a bare `aiohttp.ClientSession` making the same streamed calls to the
same server at the same concurrency, in one run: calls/s and CPU a call.

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
- The bare sides: `--agents` coroutines, each streaming a request body the
  plane sent halfway through its measured run (the histories grow with each
  turn: one of about their average length), reading the SSE lines and
  parsing each event, one call after another, on one client: httpx's own
  pool (no cap), as the aim is stated (httpcore's pool looks at every
  connection it holds on each call, so it falls behind as agents grow); and
  aiohttp on the plane's own connector (plane.providers.connections), the
  HTTP alone under the plane's calls, which shows what the plane adds to it.

Each side runs alone, in turn: measured over `--seconds` once `--warmup`
seconds have passed and each agent has made a call (its connection open).
For each: calls/s, CPU ms per call (this process's CPU time, its threads
included, over the calls made) and new TCP connections per call (as the
server counts them, over the measured window). Aims: the plane's CPU a call
<= 0.6x bare httpx's; the plane at >= 0.7x bare httpx's calls/s; <= 0.05 new
connections per call.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from plane.providers import connections
from plane.wire import protocol as p

RATIO_AIM = 0.7
CPU_AIM = 0.6
CONNECTIONS_AIM = 0.05
SERVER = Path(__file__).with_name("zero_server.py")
WARMUP_CAP_S = 30.0
"""The longest a side waits for each of its agents to have made a call."""

ZERO_CONFIG = """
defaults:
  limitUsd: {limit}
  provider: zero
  model: zero-model
{defaults}providers:
  zero:
    kind: openai-compatible
    base_url: {base_url}
    models: [zero-model]
    max_retries: 0
pricing:
  zero-model: {{input: 1, cached_input: 0.1, output: 2}}
{more}agents:
"""


def zero_config(
    base_url: str, *, limit: int = 1_000_000, defaults: str = "", more: str = ""
) -> str:
    """agents.yaml of a plane on the zero-latency server (the benches' own):
    one model, priced; `defaults` and `more` are lines of their own (a
    default's, a block's); the caller lists the agents after it."""
    return ZERO_CONFIG.format(base_url=base_url, limit=limit, defaults=defaults, more=more)


def cpu_s(pid: int) -> float:
    """A process's CPU so far, user and system, its threads included
    (/proc/PID/stat): what it spent whatever else the machine runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Side:
    calls: int
    seconds: float
    cpu_s: float
    connections: int
    loop_cpu_s: float = 0.0
    """Of `cpu_s`, the event loop's thread's; the rest is SQLite's threads (the plane's)."""

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_s / max(1, self.calls)

    @property
    def loop_ms(self) -> float:
        return 1000 * self.loop_cpu_s / max(1, self.calls)

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
    """`agents` coroutines, each making one call after another until stopped."""

    def __init__(self, agents: int, call: Callable[[int], Awaitable[None]]) -> None:
        self.done = 0
        self._call = call
        self._tasks = [asyncio.create_task(self._agent(n)) for n in range(agents)]

    async def _agent(self, n: int) -> None:
        while True:
            await self._call(n)
            self.done += 1

    async def stop(self, *, raising: bool = True) -> None:
        """Stopped; a call that failed meanwhile is raised here (unless not
        `raising`: stopped on the way out of another failure), not left to
        read as a side that made no calls."""
        for task in self._tasks:
            task.cancel()
        ended = await asyncio.gather(*self._tasks, return_exceptions=True)
        for outcome in ended:
            if raising and isinstance(outcome, Exception):
                raise outcome


async def measure(
    server: Server,
    load: Load,
    agents: int,
    warmup: float,
    seconds: float,
    profile: Path | None,
    midway: Callable[[], None] = lambda: None,
) -> Side:
    """Counted over `seconds`, once `warmup` seconds have passed and every
    agent has made a call (its connection is open; at most `WARMUP_CAP_S`)."""
    deadline = time.perf_counter() + WARMUP_CAP_S
    await asyncio.sleep(warmup)
    while load.done < agents and time.perf_counter() < deadline:  # noqa: ASYNC110 (a count)
        await asyncio.sleep(0.05)
    await asyncio.to_thread(server.reset)
    profiler = cProfile.Profile() if profile else None
    calls, cpu, start = load.done, time.process_time(), time.perf_counter()
    loop = time.thread_time()
    if profiler:
        profiler.enable()
    await asyncio.sleep(seconds / 2)
    midway()
    await asyncio.sleep(seconds / 2)
    if profiler:
        profiler.disable()
    calls, cpu, loop = load.done - calls, time.process_time() - cpu, time.thread_time() - loop
    elapsed = time.perf_counter() - start
    connections = (await asyncio.to_thread(server.stats))["connections"]
    if profiler and profile:
        profiler.dump_stats(profile)
    return Side(calls, elapsed, cpu, connections, loop)


async def plane_side(
    server: Server, agents: int, warmup: float, seconds: float, profile: Path | None
) -> tuple[Side, dict[str, Any]]:
    """The plane's calls/s; and a request body it sent halfway through, for
    the bare sides (its histories grow as it runs: one of average length)."""
    names = [f"agent-{n}" for n in range(agents)]
    text = zero_config(server.base_url, defaults="  max_calls_per_turn: 8\n")
    text += "".join(f"  {n}: {{}}\n" for n in names)
    with tempfile.TemporaryDirectory() as tmp:
        plane = Plane(parse_config(text), Home(Path(tmp) / "home"))
        await plane.startup()
        assert plane.runtime is not None
        provider: Any = plane.runtime.services.providers["zero"]
        latest: list[bytes] = [b"{}"]
        taken: list[bytes] = []
        encode = provider.encode

        def keep_body(request: Any) -> bytes:
            latest[0] = made = encode(request)
            return made

        provider.encode = keep_body
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
            await plane.runtime.api.handle(p.Send(agent=name, text="What is the weather like?"))
            await finished[name].wait()

        watcher = asyncio.create_task(watch())
        load = Load(agents, turn)
        try:
            side = await measure(
                server, load, agents, warmup, seconds, profile, lambda: taken.append(latest[0])
            )
            if watcher.done():
                watcher.result()  # a turn failed: say why
            await load.stop()
        finally:  # the plane stopped whatever failed: its threads would keep the bench alive
            await load.stop(raising=False)
            watcher.cancel()
            plane.bus.unsubscribe(subscription)
            plane.stop_event.set()
            await plane.shutdown()
    return side, json.loads(taken[0])


async def bare_httpx(
    server: Server, agents: int, body: dict[str, Any], warmup: float, seconds: float
) -> Side:
    """The same streamed calls from a bare httpx client (its own pool, no
    cap): no ledger, no history."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=server.base_url, limits=limits) as client:

        async def call(n: int) -> None:
            async with client.stream("POST", "/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        json.loads(line[6:])

        return await _measured(server, agents, call, warmup, seconds)


async def bare_aiohttp(
    server: Server, agents: int, body: dict[str, Any], warmup: float, seconds: float
) -> Side:
    """The same calls from a bare aiohttp client on the plane's connector."""
    url = f"{server.base_url}/chat/completions"
    async with aiohttp.ClientSession(connector=connections.network()) as client:

        async def call(n: int) -> None:
            async with client.post(url, json=body) as response:
                async for raw in response.content:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data: ") and line != "data: [DONE]":
                        json.loads(line[6:])

        return await _measured(server, agents, call, warmup, seconds)


async def _measured(
    server: Server,
    agents: int,
    call: Callable[[int], Awaitable[None]],
    warmup: float,
    seconds: float,
) -> Side:
    load = Load(agents, call)
    side = await measure(server, load, agents, warmup, seconds, None)
    await load.stop()
    return side


def load_after() -> str:
    """The machine's load average over the last minute, as the figures are read beside it."""
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    load_before = load_after()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=8, help="measured, a side")
    parser.add_argument("--warmup", type=float, default=2, help="before measuring, a side")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the plane's side here")
    args = parser.parse_args()
    server = Server()
    try:
        plane, body = asyncio.run(
            plane_side(server, args.agents, args.warmup, args.seconds, args.profile)
        )
        bare = asyncio.run(bare_httpx(server, args.agents, body, args.warmup, args.seconds))
        aio = asyncio.run(bare_aiohttp(server, args.agents, body, args.warmup, args.seconds))
    finally:
        server.close()
    print(f"metering: {args.agents} agents, one call a turn, zero-latency server")
    print(f"  load average at the start and the end: {load_before}, {load_after()}")
    print(
        f"  {'':20} {'calls/s':>9} {'CPU ms/call':>12} {'(event loop)':>13}"
        f" {'x bare httpx':>13} {'new conns/call':>15}"
    )
    for name, side in (("bare httpx", bare), ("bare aiohttp", aio), ("plane", plane)):
        print(
            f"  {name:20} {side.rate:9,.0f} {side.cpu_ms:12.2f} {side.loop_ms:13.2f}"
            f" {side.cpu_ms / bare.cpu_ms:13.2f} {side.per_call:15.3f}"
        )
    cpu = plane.cpu_ms / bare.cpu_ms
    met = "met" if cpu <= CPU_AIM else "NOT met"
    print(f"  plane vs bare httpx: {cpu:.2f}x CPU a call (aim <= {CPU_AIM}x: {met}),", end="")
    ratio = plane.rate / bare.rate
    met = "met" if ratio >= RATIO_AIM else "NOT met"
    print(f" {ratio:.2f}x calls/s (aim >= {RATIO_AIM:.1f}x: {met})")
    print(
        f"  plane vs bare aiohttp: {plane.cpu_ms / aio.cpu_ms:.2f}x CPU a call,"
        f" {plane.rate / aio.rate:.2f}x calls/s"
    )
    met = "met" if plane.per_call <= CONNECTIONS_AIM else "NOT met"
    aim = f"aim <= {CONNECTIONS_AIM}: {met}"
    print(f"  plane: {plane.per_call:.3f} new connections per call ({aim})")


if __name__ == "__main__":
    main()
