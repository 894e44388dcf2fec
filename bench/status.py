"""`plane status --json` with 1,000 busy agents, next to its 200 ms aim; the
snapshot request alone over the socket; cold start to the first `status`
answer; and memory per idle agent. One run, real planes (`plane serve`
processes on a temporary home, SQLite file, Unix socket).

    .venv/bin/python bench/status.py
    .venv/bin/python bench/status.py --agents 1000 --repeat 10

Busy: every agent has spent today (`--calls` settled calls each, through the
plane's own `Ledger`) past its $1 ceiling, so it is held, and has
`--waiting` operator messages waiting for it — what a snapshot has to read
for each agent. No provider is called: a held agent takes no turn (its
provider is an address nothing listens on, so a call would fail loudly).

Memory per idle agent is (RSS with `--agents` idle agents - RSS with none)
/ `--agents`, each plane measured once its first `status` is answered and
its agents have settled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plane.clock import SystemClock
from plane.history.conversation import Conversation
from plane.money.ledger import Ledger
from plane.store.sqlite import SqliteDatabase
from plane.wire import protocol as p
from plane.wire.client import NotRunning, PlaneClient
from plane.wire.protocol import Usage

AIM_MS = 200.0
PLANE = Path(sys.executable).with_name("plane")
USAGE = Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=80)

CONFIG = """
defaults:
  limitUsd: 1
  provider: nowhere
  model: bench-model
providers:
  nowhere:
    kind: openai-compatible
    base_url: http://127.0.0.1:9/v1
    models: [bench-model]
    max_retries: 0
pricing:
  bench-model: {input: 1, cached_input: 0.1, output: 2}
"""


def names(agents: int) -> list[str]:
    return [f"agent-{n:04d}" for n in range(agents)]


def write_config(home: Path, agents: int) -> Path:
    listed = "".join(f"  {name}: {{}}\n" for name in names(agents))
    path = home / "agents.yaml"
    path.write_text(CONFIG + ("agents:\n" + listed if agents else "agents: {}\n"))
    return path


async def fill(db_path: Path, agents: int, calls: int, waiting: int) -> None:
    """Today's spend (over the $1 ceiling) and waiting messages for each agent."""
    db = await SqliteDatabase.open(db_path)
    clock = SystemClock()
    ledger, conversation = Ledger(db, clock), Conversation(db, clock)
    cost = Decimal("1.5") / calls

    async def busy(name: str) -> None:
        for _ in range(calls):
            call = await ledger.open_call(name, "nowhere", "bench-model", cost, "estimate")
            await ledger.settle(call, USAGE, cost, "table")
        for n in range(waiting):
            await conversation.append(name, "operator", f"message {n}", held=True, waiting=True)

    await asyncio.gather(*(busy(name) for name in names(agents)))
    await db.close()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def first_status(socket: Path, within_s: float = 120.0) -> p.Snapshot:
    """Poll until the plane answers a `status`; return its snapshot."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            client = await PlaneClient.connect(socket, within_s=within_s)
        except (NotRunning, FileNotFoundError, ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.005)
            continue
        try:
            reply = await client.request(p.Status(), within_s=within_s)
        finally:
            await client.close()
        assert isinstance(reply, p.SnapshotReply)
        return reply.snapshot


class Serving:
    """One `plane serve` on `home`, stopped on leaving."""

    def __init__(self, home: Path, config: Path) -> None:
        self.home, self.config = home, config
        self.env = {**os.environ, "PLANE_HOME": str(home)}
        self.process: asyncio.subprocess.Process | None = None
        self.cold_s = 0.0

    async def __aenter__(self) -> Serving:
        start = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            PLANE, "serve", "--config", self.config, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        await first_status(self.home / "plane.sock")
        self.cold_s = time.perf_counter() - start
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.process is not None
        stop = await asyncio.create_subprocess_exec(
            PLANE, "stop", env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        await stop.wait()
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def settled_rss_kb(self) -> int:
        """RSS once two reads a half-second apart agree within 1%."""
        assert self.process is not None
        before = rss_kb(self.process.pid)
        for _ in range(20):
            await asyncio.sleep(0.5)
            now = rss_kb(self.process.pid)
            if abs(now - before) <= before / 100:
                return now
            before = now
        return before

    def cli_status_ms(self) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [str(PLANE), "status", "--json"], env=self.env, capture_output=True, timeout=60
        )
        took = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode())
        json.loads(done.stdout)
        return took

    async def socket_status_ms(self, repeat: int) -> list[float]:
        client = await PlaneClient.connect(self.home / "plane.sock")
        try:
            took = []
            for _ in range(repeat):
                start = time.perf_counter()
                await client.request(p.Status(), within_s=60)
                took.append((time.perf_counter() - start) * 1000)
            return took
        finally:
            await client.close()


def cli_start_ms(env: dict[str, str]) -> float:
    """The CLI process alone: `plane --version` (interpreter and imports)."""
    start = time.perf_counter()
    subprocess.run([str(PLANE), "--version"], env=env, capture_output=True, timeout=60)
    return (time.perf_counter() - start) * 1000


async def run(args: argparse.Namespace, root: Path) -> None:
    agents = args.agents
    empty, idle, busy = root / "empty", root / "idle", root / "busy"
    for home in (empty, idle, busy):
        home.mkdir()
    async with Serving(empty, write_config(empty, 0)) as plane:
        rss_empty = await plane.settled_rss_kb()
    async with Serving(idle, write_config(idle, agents)) as plane:
        cold_idle = plane.cold_s
        rss_idle = await plane.settled_rss_kb()
    await fill(busy / "plane.db", agents, args.calls, args.waiting)
    async with Serving(busy, write_config(busy, agents)) as plane:
        cold_busy = plane.cold_s
        await plane.settled_rss_kb()  # the agents' first gate checks are done
        snapshot = await first_status(busy / "plane.sock")
        assert len(snapshot.agents) == agents, len(snapshot.agents)
        assert all(a.waiting == args.waiting for a in snapshot.agents), "waiting counts"
        cli = [plane.cli_status_ms() for _ in range(args.repeat)]
        alone = await plane.socket_status_ms(args.repeat * 4)
        bare = [cli_start_ms(plane.env) for _ in range(args.repeat)]
    per_agent_kb = (rss_idle - rss_empty) / agents if agents else 0.0
    cli_ms, alone_ms, bare_ms = (statistics.median(x) for x in (cli, alone, bare))
    met = "met" if cli_ms < AIM_MS else "NOT met"
    print(f"status with {agents:,} busy agents ({args.calls} calls, {args.waiting} waiting each)")
    print(
        f"  plane status --json (CLI process, end to end)  median {cli_ms:6.1f} ms,"
        f" max {max(cli):6.1f} ms: {cli_ms / AIM_MS:.2f}x of the {AIM_MS:.0f} ms aim ({met})"
    )
    print(
        f"  the snapshot request alone, over the socket   median {alone_ms:6.1f} ms,"
        f" max {max(alone):6.1f} ms: {alone_ms / AIM_MS:.2f}x of the aim"
    )
    print(f"  the CLI process starting (plane --version)    median {bare_ms:6.1f} ms")
    print(
        f"cold start to the first status answer: {cold_busy:.2f} s at {agents:,} busy agents,"
        f" {cold_idle:.2f} s at {agents:,} idle"
    )
    print(
        f"memory: RSS {rss_empty / 1024:.0f} MB with no agents, {rss_idle / 1024:.0f} MB with"
        f" {agents:,} idle: {per_agent_kb:.1f} KB per idle agent"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=10, help="settled today, per agent")
    parser.add_argument("--waiting", type=int, default=3, help="messages waiting, per agent")
    parser.add_argument("--repeat", type=int, default=5, help="CLI runs timed")
    parser.add_argument("--dir", type=Path, default=None, help="where the homes go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
