"""What the gateway costs a call: streamed Chat Completions calls straight to
an upstream, and the same calls through a real plane's gateway, with and
without a tag ceiling, in one run: calls/s, the latency a client sees
(median and p99) and the plane's CPU a call.

    .venv/bin/python bench/gateway.py
    .venv/bin/python bench/gateway.py --clients 100 --agents 10 --rounds 5
    .venv/bin/python bench/gateway.py --clients 1 --agents 1     # a call alone, unqueued
    .venv/bin/python bench/gateway.py --profile /tmp/prof   # each plane's cProfile (its CPU)

The upstream is `bench/zero_server.py`, in a process of its own: an
OpenAI-compatible chat-completions endpoint that streams a short answer with
its usage at once. Chat Completions only: the gateway's path (admission, the
pending write, the stream metered, the settle) is the same for Anthropic's
Messages, which would need the zero server to speak them too.

The client is this process: `--clients` coroutines, each making streamed
calls one after another (each its own question, as a client's are: the
loop guard holds an agent sending the same request again and again), its
SSE lines read and each event parsed, on one `aiohttp.ClientSession` (no
cap on connections). aiohttp, not httpx: the client shares the machine's
cores with the plane, and httpx spends several times aiohttp's CPU a call
at 100 clients (bench/http_clients.py), which would be taken from the plane
measured. The sides, each alone, in turns (`--rounds` times, so a load that
comes and goes on the machine falls on each):

- bare: straight to the upstream;
- gateway: through `plane serve --http` in a process of its own (a
  temporary home, SQLite), `--agents` gateway agents with a key each, the
  clients shared out among them, under a ceiling none reaches;
- gateway, tag ceiling: the same, on a plane whose agents.yaml gives a tag
  a ceiling (none reaches it), every other call of each client carrying
  the tag (`x-plane-tag`): a tag's calls are weighed together, whichever
  agent makes them.

For each: calls/s, the latency of each call from its request to its
stream's end (median, p99), and the CPU a call of the plane's process (its
threads included, from /proc) and of this client's. This bench's aims, ours
to set: the gateway adds < 5 ms to the median latency and keeps >= 0.5x bare
calls/s on a 2-core machine at 100 clients; a tag ceiling keeps >= 0.8x of
the plain gateway's calls/s. With clients calling one after another, the
latency at 100 clients is mostly each call's wait behind the others
(clients / calls/s): `--clients 1` shows a call's own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metering import Server, cpu_s, load_after, zero_config

from plane.gateway.keys import Keys
from plane.home import Home

LATENCY_AIM_MS = 5.0
RATE_AIM = 0.5
TAG_AIM = 0.8
TAG = "bench-ticket"
WARMUP_CAP_S = 30.0
"""The longest a side waits for each of its clients to have made a call."""
HISTORY = "What is the weather like? " * 80
"""A conversation of about 2 KB, as the metering bench's bodies run."""

PROFILED = """
import cProfile, sys, time
from plane.entry import main
profiler = cProfile.Profile(time.thread_time)
try:
    profiler.runcall(main, sys.argv[2:])
finally:
    profiler.dump_stats(sys.argv[1])
"""
"""`plane serve` under cProfile, timed by its main thread's CPU: on a machine
others load, wall time would count the moments the thread was not running."""
TAGS = f"tags:\n  {TAG}: {{limitUsd: 1000000}}\n"

Call = Callable[[aiohttp.ClientSession, int, int], Awaitable[None]]


@dataclass
class Side:
    calls: int = 0
    seconds: float = 0.0
    plane_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def add(self, other: Side) -> None:
        self.calls += other.calls
        self.seconds += other.seconds
        self.plane_cpu_s += other.plane_cpu_s
        self.client_cpu_s += other.client_cpu_s
        self.latencies += other.latencies

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def ms(self, quantile: float) -> float:
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]

    @property
    def median_ms(self) -> float:
        return 1000 * statistics.median(self.latencies)

    def per_call_ms(self, cpu_s: float) -> float:
        return 1000 * cpu_s / max(1, self.calls)


def body(question: str) -> bytes:
    return json.dumps(
        {
            "model": "zero-model",
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 256,
            "messages": [
                {"role": "system", "content": "You are a helpful, brief assistant."},
                {"role": "user", "content": f"{HISTORY}{question}"},
            ],
        }
    ).encode()


class Served:
    """`plane serve --http` in a process of its own, with gateway agents and a key each."""

    def __init__(
        self, root: Path, base_url: str, agents: int, tagged: bool, profile: Path | None
    ) -> None:
        root.mkdir()
        self.home = Home(root / "home")
        config = root / "agents.yaml"
        self.names = [f"agent-{n}" for n in range(agents)]
        text = zero_config(base_url, more=TAGS if tagged else "")
        config.write_text(text + "".join(f"  {n}: {{gateway: {{}}}}\n" for n in self.names))
        log = root / "serve.err"
        with log.open("w") as err:
            serve = ["serve", "--config", str(config), "--http", "127.0.0.1:0"]
            run = ["-c", PROFILED, str(profile)] if profile else ["-m", "plane"]
            self.process = subprocess.Popen(
                [sys.executable, *run, *serve],
                env={**os.environ, "PLANE_HOME": str(self.home.root)},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while not (found := re.search(r"the gateway on (http://\S+);", log.read_text())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the plane did not start:\n{log.read_text()}")
            time.sleep(0.1)
        self.url = found.group(1)
        keys = Keys(self.home.gateway_keys)
        self.keys = [keys.make(name) for name in self.names]

    def cpu_s(self) -> float:
        """The process's CPU time so far, its threads included."""
        return cpu_s(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


class Load:
    """`clients` coroutines, each making one call after another until stopped;
    each call's latency kept while `timing`."""

    def __init__(self, session: aiohttp.ClientSession, clients: int, call: Call) -> None:
        self.done = 0
        self.timing = False
        self.latencies: list[float] = []
        self._session = session
        self._call = call
        self._tasks = [asyncio.create_task(self._client(n)) for n in range(clients)]

    async def _client(self, n: int) -> None:
        for made in range(sys.maxsize):
            began = time.perf_counter()
            await self._call(self._session, n, made)
            if self.timing:
                self.latencies.append(time.perf_counter() - began)
            self.done += 1

    async def stop(self) -> None:
        """Stopped; a call that failed meanwhile is raised here."""
        for task in self._tasks:
            task.cancel()
        for outcome in await asyncio.gather(*self._tasks, return_exceptions=True):
            if isinstance(outcome, Exception):
                raise outcome


def streamed(url: str, headers: Callable[[int, int], dict[str, str]]) -> Call:
    """A call: its request streamed to `url`, each SSE event of its answer parsed."""

    async def call(session: aiohttp.ClientSession, client: int, made: int) -> None:
        sent = headers(client, made) | {"content-type": "application/json"}
        question = f" (client {client}, question {made})"
        async with session.post(url, data=body(question), headers=sent) as response:
            if response.status != 200:
                raise RuntimeError(
                    f"a call was answered {response.status}: {await response.text()}"
                )
            async for raw in response.content:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line[6:])

    return call


async def turn(
    clients: int, call: Call, plane: Served | None, warmup: float, seconds: float
) -> Side:
    """One side's turn: counted over `seconds`, once `warmup` seconds have
    passed and every client has made a call (its connection open)."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        load = Load(session, clients, call)
        try:
            deadline = time.perf_counter() + WARMUP_CAP_S
            await asyncio.sleep(warmup)
            while load.done < clients and time.perf_counter() < deadline:  # noqa: ASYNC110 (a count)
                await asyncio.sleep(0.05)
            plane_cpu = plane.cpu_s() if plane else 0.0
            calls, cpu, start = load.done, time.process_time(), time.perf_counter()
            load.timing = True
            await asyncio.sleep(seconds)
            load.timing = False
            calls, cpu = load.done - calls, time.process_time() - cpu
            elapsed = time.perf_counter() - start
            plane_cpu = plane.cpu_s() - plane_cpu if plane else 0.0
        finally:
            await load.stop()
    return Side(calls, elapsed, plane_cpu, cpu, load.latencies)


def run(args: argparse.Namespace, root: Path) -> dict[str, Side]:
    server = Server()
    planes: list[Served] = []
    try:
        profile = args.profile
        plain = Served(
            root / "plain", server.base_url, args.agents, False, profile and profile / "plain.prof"
        )
        planes.append(plain)
        tagged = Served(
            root / "tagged", server.base_url, args.agents, True, profile and profile / "tagged.prof"
        )
        planes.append(tagged)

        def through(plane: Served, tag: bool) -> Call:
            def headers(client: int, made: int) -> dict[str, str]:
                sent = {"authorization": f"Bearer {plane.keys[client % args.agents]}"}
                return sent | {"x-plane-tag": TAG} if tag and made % 2 else sent

            return streamed(f"{plane.url}/v1/chat/completions", headers)

        sides: dict[str, tuple[Call, Served | None]] = {
            "bare": (streamed(f"{server.base_url}/chat/completions", lambda c, m: {}), None),
            "gateway": (through(plain, tag=False), plain),
            "gateway, tag ceiling": (through(tagged, tag=True), tagged),
        }
        totals = {name: Side() for name in sides}
        for _ in range(args.rounds):
            for name, (call, plane) in sides.items():
                side = asyncio.run(turn(args.clients, call, plane, args.warmup, args.seconds))
                totals[name].add(side)
        return totals
    finally:
        for plane in planes:
            plane.stop()
        server.close()


def report(args: argparse.Namespace, sides: dict[str, Side], load_before: str) -> None:
    print(
        f"gateway: {args.clients} clients (aiohttp) on {args.agents} agents, streamed Chat"
        f" Completions, zero-latency upstream; {args.rounds} rounds of {args.seconds:g} s a side"
    )
    print(f"  load average at the start and the end: {load_before}, {load_after()}")
    print(
        f"  {'':22} {'calls/s':>8} {'x bare':>7} {'median ms':>10} {'p99 ms':>8}"
        f" {'plane CPU ms/call':>18} {'client CPU ms/call':>19}"
    )
    bare = sides["bare"]
    for name, side in sides.items():
        plane_cpu = (
            f"{side.per_call_ms(side.plane_cpu_s):18.2f}" if name != "bare" else f"{'-':>18}"
        )
        print(
            f"  {name:22} {side.rate:8,.0f} {side.rate / bare.rate:7.2f} {side.median_ms:10.1f}"
            f" {side.ms(0.99):8.1f} {plane_cpu} {side.per_call_ms(side.client_cpu_s):19.2f}"
        )
    gateway, tagged = sides["gateway"], sides["gateway, tag ceiling"]
    added = gateway.median_ms - bare.median_ms
    met = "met" if added < LATENCY_AIM_MS else "NOT met"
    print(
        f"  the gateway's added latency at the median: {added:.1f} ms"
        f" (aim < {LATENCY_AIM_MS:g} ms: {met})"
    )
    ratio = gateway.rate / bare.rate
    met = "met" if ratio >= RATE_AIM else "NOT met"
    print(f"  the gateway's calls/s: {ratio:.2f}x bare (aim >= {RATE_AIM}x: {met})")
    ratio = tagged.rate / gateway.rate
    met = "met" if ratio >= TAG_AIM else "NOT met"
    print(f"  with a tag ceiling: {ratio:.2f}x the gateway's calls/s (aim >= {TAG_AIM}x: {met})")


def main() -> None:
    load_before = load_after()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument(
        "--agents", type=int, default=100, help="gateway agents; the clients shared out"
    )
    parser.add_argument("--rounds", type=int, default=3, help="turns of every side")
    parser.add_argument("--seconds", type=float, default=5, help="measured, a side a round")
    parser.add_argument("--warmup", type=float, default=1, help="before measuring, a side a round")
    parser.add_argument(
        "--profile", type=Path, help="a folder: each plane's cProfile written there as it stops"
    )
    args = parser.parse_args()
    args.agents = min(args.agents, args.clients)
    with tempfile.TemporaryDirectory() as tmp:
        sides = run(args, Path(tmp))
    report(args, sides, load_before)


if __name__ == "__main__":
    main()
