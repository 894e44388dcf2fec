"""A fleet's size: 10,000 and 100,000 agents on one plane (a real `plane
serve` on a temporary home, its SQLite file and socket), each figure next to
its aim:

- agents.yaml read (`load_config`, this process's CPU): the file the plane
  starts with, every agent a line of it;
- cold start to the first `status` answered;
- memory (RSS) once its agents have settled;
- `plane status --json` (the CLI, end to end) and the snapshot request alone
  over the socket, idle and with `--busy` agents taking turns one after
  another on a zero-latency upstream (bench/zero_server.py);
- a message's round trip (`send` → `sent`), idle and busy;
- busy: the operator's requests (the snapshot, `/limit` read and set, pause,
  resume, interrupt) one after another, their p99 against 200 ms; then
  `/limit 0` to 20 busy agents, and how many of their turns started after it
  (a turn in flight may end; none may start); then a request the plane
  refuses at once (no store, no agent), 100 times: what a request waits for
  the plane's loop to read it and write its reply. They and the busy round trips
  are sent from a process of their own, as a TUI's or the CLI's are: this
  one's loop is busy driving the agents and reading their events, and timed
  there they read its backlog as well as the plane's.

    .venv/bin/python bench/fleet.py                       # 10,000 and 100,000
    .venv/bin/python bench/fleet.py --agents 10000 --busy 1000
    .venv/bin/python bench/fleet.py --agents 100000 --spy /tmp/spy   # py-spy profiles

A long reply comes as its head and parts, each under the frame limit
(protocol 2); the snapshot alone is read here whole, its frames counted.
Where `plane status` fails, its sentence is printed. With `--spy DIR` (py-spy on
the PATH or in the venv), the plane's start, its snapshots and the busy
plane while it answers the operator's requests are sampled, and the
functions holding most samples printed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metering import Server, cpu_s, zero_config
from status import rss_kb

from plane.config import load_config
from plane.wire import protocol as p
from plane.wire.token import read_token

PLANE = Path(sys.executable).with_name("plane")
T = TypeVar("T")

AIMS: dict[int, dict[str, float]] = {
    # 10,000 agents: cold start < 5 s, RSS < 300 MB, status < 300 ms idle, < 500 ms busy.
    10_000: {"start_s": 5, "rss_mb": 300, "idle_ms": 300, "busy_ms": 500},
    # 100,000 agents: first status < 30 s, RSS < 1.5 GB, status < 3 s.
    100_000: {"start_s": 30, "rss_mb": 1536, "idle_ms": 3000, "busy_ms": 3000},
}
REQUEST_AIM_MS = 200.0
PARTS = re.compile(rb'"parts":(\d+)')
"""1,000 busy agents: the operator's requests p99 < 200 ms."""


def names(agents: int) -> list[str]:
    return [f"agent-{n:06d}" for n in range(agents)]


def write_config(home: Path, agents: int, base_url: str) -> Path:
    path = home / "agents.yaml"
    listed = "".join(f"  {name}: {{}}\n" for name in names(agents))
    path.write_text(zero_config(base_url, limit=1000) + listed)
    return path


class Raw:
    """A connection to the plane read with no frame limit: requests as JSON
    lines, replies matched by id (a reply sent as its head and parts waited
    for whole), and the agents whose turns started and finished."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[tuple[float, int, int]]] = {}
        self._parts: dict[int, list[int]] = {}
        """A reply's parts still to come, by its id: [how many, bytes so far, frames]."""
        self.finished: asyncio.Queue[str] = asyncio.Queue()
        self.started: list[tuple[float, str]] = []
        """(when, agent) of every turn started, as read."""
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, socket: Path) -> Raw:
        reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 31)
        raw = cls(reader, writer)
        token = read_token(socket.with_name("token"))
        version = p.PROTOCOL_VERSION
        await raw.ask("hello", protocol_version=version, client="bench", token=token)
        return raw

    async def ask(self, kind: str, **fields: Any) -> tuple[float, int]:
        """(milliseconds, bytes of the reply, all its frames)."""
        took, size, _ = await self.ask_frames(kind, **fields)
        return took, size

    async def ask_frames(self, kind: str, **fields: Any) -> tuple[float, int, int]:
        """(milliseconds, bytes of the reply, how many frames it came in)."""
        ident = next(self._ids)
        future = self._waiting[ident] = asyncio.get_running_loop().create_future()
        start = time.perf_counter()
        self._writer.write(json.dumps({"type": kind, "id": ident, **fields}).encode() + b"\n")
        await asyncio.wait_for(future, 600)
        _, size, frames = future.result()
        return (time.perf_counter() - start) * 1000, size, frames

    async def _read(self) -> None:
        while line := await self._reader.readline():
            if line.startswith(b'{"type":"turn_finished"'):
                self.finished.put_nowait(json.loads(line)["agent"])
                continue
            if line.startswith(b'{"type":"turn_started"'):
                self.started.append((time.perf_counter(), json.loads(line)["agent"]))
                continue
            head = line[:200]
            if b'"id":' not in head or head.startswith(b'{"type":"event'):
                continue
            ident = int(head.split(b'"id":', 1)[1].split(b",", 1)[0].split(b"}", 1)[0])
            if ident in self._parts:  # one more part of a reply
                left = self._parts[ident]
                left[0], left[1], left[2] = left[0] - 1, left[1] + len(line), left[2] + 1
                if left[0] == 0:
                    del self._parts[ident]
                    self._answer(ident, (0.0, left[1], left[2]))
                continue
            if line.startswith(b'{"type":"error"'):
                future = self._waiting.pop(ident, None)
                if future is not None and not future.done():
                    future.set_exception(RuntimeError(json.loads(line)["message"]))
                continue
            parts = PARTS.search(line)
            if parts is not None and int(parts[1]) > 0:
                self._parts[ident] = [int(parts[1]), len(line), 1]
                continue
            self._answer(ident, (0.0, len(line), 1))
        for future in self._waiting.values():
            future.set_exception(ConnectionError("the plane closed the connection"))

    def _answer(self, ident: int, reply: tuple[float, int, int]) -> None:
        future = self._waiting.pop(ident, None)
        if future is not None and not future.done():
            future.set_result(reply)

    async def close(self) -> None:
        self._task.cancel()
        self._writer.close()


async def raw_status(socket: Path) -> tuple[float, int, int]:
    """The snapshot request alone over the socket: (milliseconds, bytes, frames)."""
    raw = await Raw.connect(socket)
    try:
        return await raw.ask_frames("status")
    finally:
        await raw.close()


class Plane:
    """One `plane serve` on `home`, optionally under py-spy; stopped on leaving."""

    def __init__(self, home: Path, config: Path, spy: Path | None) -> None:
        self.home, self.config, self.spy = home, config, spy
        self.env = {**os.environ, "PLANE_HOME": str(home)}
        self.process: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.cold_s = 0.0
        self.cold_cpu_s = 0.0
        """The plane's CPU (user and system) when it answered its first status."""
        self.cold_load = 0.0
        """The machine's load average then: the wall clock moves with it, the CPU less."""

    async def __aenter__(self) -> Plane:
        start = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            PLANE, "serve", "--config", self.config, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.pid = self.process.pid
        spying = None if self.spy is None else spy_on(self.pid, self.spy)
        socket = self.home / "plane.sock"
        while True:
            try:
                await raw_status(socket)
                break
            except (FileNotFoundError, ConnectionError, OSError, RuntimeError):
                if self.process.returncode is not None:
                    raise RuntimeError("the plane exited") from None
                await asyncio.sleep(0.02)
        self.cold_s = time.perf_counter() - start
        self.cold_cpu_s = cpu_s(self.pid)
        self.cold_load = os.getloadavg()[0]
        if spying is not None:
            spying.send_signal(signal.SIGINT)  # py-spy writes what it sampled
            await asyncio.to_thread(spying.wait, 120)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.process is not None
        stop = await asyncio.create_subprocess_exec(
            PLANE, "stop", env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        await stop.wait()
        try:
            await asyncio.wait_for(self.process.wait(), 120)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def settled_rss_mb(self) -> float:
        """RSS once two reads a second apart agree within 1%."""
        before = rss_kb(self.pid)
        for _ in range(60):
            await asyncio.sleep(1)
            now = rss_kb(self.pid)
            if abs(now - before) <= before / 100:
                break
            before = now
        return now / 1024

    def cli_status(self) -> tuple[float, str]:
        """`plane status --json`: (milliseconds, "" or the sentence it failed with)."""
        start = time.perf_counter()
        done = subprocess.run(
            [str(PLANE), "status", "--json"], env=self.env, capture_output=True, timeout=600
        )
        took = (time.perf_counter() - start) * 1000
        return took, "" if done.returncode == 0 else done.stderr.decode().strip()


def spy_on(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling `pid` (50 a second, every thread) into `out`, until SIGINT."""
    return subprocess.Popen(
        [py_spy(), "record", "-r", "50", "-f", "raw", "-o", out, "-p", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: .venv/bin/pip install py-spy")
    return found


def top_functions(raw: Path, count: int = 12) -> list[str]:
    """py-spy's collapsed stacks → the functions at the top of most samples
    (self), and the plane's own functions on most samples (inclusive)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = [frame(f) for f in stack.split(";")]
        total += int(n)
        own[frames[-1][0]] += int(n)
        for name, ours in set(frames):
            if ours:
                inclusive[name] += int(n)
    lines = [f"    {total} samples; self:"]
    lines += [f"    {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(count)]
    lines.append("    inclusive, the plane's own functions:")
    lines += [f"    {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(count)]
    return lines


def frame(text: str) -> tuple[str, bool]:
    """`function (path/file.py:line)` → (`function file.py:line`, whether the
    plane's own, below its command line)."""
    name, _, where = text.rstrip(")").partition(" (")
    ours = ("/plane/" in where or where.startswith("plane/")) and not any(
        part in where for part in ("plane/cli/", "plane/entry.py", "plane/__init__.py")
    )
    return f"{name} {where.rsplit('/', 1)[-1]}", ours


class Busy:
    """`agents` agents each sent a message as soon as its last turn ended."""

    def __init__(self, raw: Raw, agents: list[str]) -> None:
        self.raw, self.agents = raw, agents
        self.turns = 0
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        await self.raw.ask("subscribe")
        self._spawn(self._keep_busy())
        # All at once: one after another, each waits behind the turns of
        # those already sent (the control path queues behind the metering).
        await asyncio.gather(*(self.raw.ask("send", agent=a, text="Go on.") for a in self.agents))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _keep_busy(self) -> None:
        busy = set(self.agents)
        while True:
            agent = await self.raw.finished.get()
            if agent in busy:
                self.turns += 1
                self._spawn(self.raw.ask("send", agent=agent, text="Go on."))

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def round_trips(socket: Path, agents: list[str], repeat: int) -> list[float]:
    raw = await Raw.connect(socket)
    try:
        return [(await raw.ask("send", agent=agents[n % len(agents)], text="hi"))[0]
                for n in range(repeat)]  # fmt: skip
    finally:
        await raw.close()


async def operator_requests(
    socket: Path, busy: list[str], idle: list[str], repeat: int
) -> dict[str, list[float]]:
    """Milliseconds of each of the operator's requests, `repeat` times, one
    after another on a connection of its own: the snapshot, `/limit` read
    and set on a busy agent, a pause and a resume, an interrupt of a turn."""
    raw = await Raw.connect(socket)
    took: dict[str, list[float]] = collections.defaultdict(list)
    try:
        for n in range(repeat):
            working, still = busy[n % len(busy)], idle[n % len(idle)]
            took["status"].append((await raw.ask_frames("status"))[0])
            took["/limit"].append((await raw.ask("send", agent=working, text="/limit"))[0])
            set_to = await raw.ask("send", agent=working, text="/limit 1000")
            took["/limit 1000"].append(set_to[0])
            took["pause"].append((await raw.ask("pause_agent", agent=still, paused=True))[0])
            took["resume"].append((await raw.ask("pause_agent", agent=still, paused=False))[0])
            start = time.perf_counter()
            with contextlib.suppress(RuntimeError):  # its turn may have just ended: answered too
                await raw.ask("interrupt", agent=working)
            took["interrupt"].append((time.perf_counter() - start) * 1000)
    finally:
        await raw.close()
    return took


async def limits_to_zero(socket: Path, agents: list[str]) -> tuple[list[float], dict[str, float]]:
    """`/limit 0` to each of `agents`: the replies' milliseconds, and when
    each reply came (`time.perf_counter`, the same clock in every process)."""
    raw = await Raw.connect(socket)
    replied: dict[str, float] = {}
    took = []
    try:
        for agent in agents:
            took.append((await raw.ask("send", agent=agent, text="/limit 0"))[0])
            replied[agent] = time.perf_counter()
    finally:
        await raw.close()
    return took, replied


async def refusals(socket: Path, repeat: int) -> list[float]:
    """Milliseconds of a request refused at once (a send to no such agent:
    no store, no agent), `repeat` times 10 ms apart: what a request waits
    for the plane's loop to read it and write its reply, and nothing else."""
    raw = await Raw.connect(socket)
    took = []
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            with contextlib.suppress(RuntimeError):  # the refusal
                await raw.ask("send", agent="no-such-agent", text="hi")
            took.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0.01)
    finally:
        await raw.close()
    return took


async def as_the_operator(
    socket: Path, busy: list[str], idle: list[str], repeat: int, zero: list[str]
) -> tuple[dict[str, list[float]], list[float], dict[str, float], list[float]]:
    """The operator's requests, then `/limit 0` to `zero`, then requests refused at once."""
    asked = await operator_requests(socket, busy, idle, repeat)
    took, replied = await limits_to_zero(socket, zero)
    return asked, took, replied, await refusals(socket, 100)


def _run(work: Callable[..., Awaitable[T]], *args: Any) -> T:
    return asyncio.run(work(*args))


async def elsewhere(other: ProcessPoolExecutor, work: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`work(*args)` in `other`, a process of its own, as a TUI's or the CLI's
    requests are: not on this process's loop, which is busy driving a
    thousand agents and reading their events (timed here, a request reads
    that backlog as well as the plane's)."""
    return await asyncio.get_running_loop().run_in_executor(other, _run, work, *args)


def turns_after(busy: Busy, replied: dict[str, float]) -> int:
    """How many turns of the agents `replied` to started more than a second
    after their reply (a turn in flight may end; none may start)."""
    return sum(
        1 for when, agent in busy.raw.started if agent in replied and when > replied[agent] + 1
    )


def send_buffer_mib() -> float:
    """What the kernel gives a socket that asks for more send buffer (the
    plane asks for 4 MiB); 0 where it cannot be read."""
    try:
        return int(Path("/proc/sys/net/core/wmem_max").read_text()) / 2**20
    except (OSError, ValueError):
        return 0.0


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(len(ordered) * 0.99) - 1)]


def stage(what: str) -> None:
    """Where the run is, on stderr: a fleet's run takes minutes."""
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def ratio(value: float, aim: float) -> str:
    return f"{value / aim:5.2f}x of the aim ({'met' if value < aim else 'NOT met'})"


async def run(
    agents: int, args: argparse.Namespace, root: Path, server: Server, other: ProcessPoolExecutor
) -> None:
    aims = AIMS.get(agents, AIMS[10_000])
    home = root / f"home-{agents}"
    home.mkdir()
    config = write_config(home, agents, server.base_url)
    size = config.stat().st_size
    cpu = time.process_time()
    load_config(config)
    read_s = time.process_time() - cpu
    spy = args.spy / f"start-{agents}.txt" if args.spy else None
    everyone = names(agents)
    stage(f"{agents:,} agents: starting the plane")
    async with Plane(home, config, spy) as plane:
        stage("started; memory, then status idle")
        rss = await plane.settled_rss_mb()
        socket = home / "plane.sock"
        cli_idle = [plane.cli_status() for _ in range(args.repeat)]
        raw_idle = [await raw_status(socket) for _ in range(args.repeat)]
        load_idle = os.getloadavg()[0]
        stage("round trips idle")
        trips_idle = await round_trips(socket, everyone[-100:], 20)
        spying = None
        if args.spy:
            snap = args.spy / f"snapshot-{agents}.txt"
            spying = spy_on(plane.pid, snap)
            await asyncio.sleep(1)
            for _ in range(3):
                await raw_status(socket)
            spying.send_signal(signal.SIGINT)
            spying.wait(60)
        busy_client = await Raw.connect(socket)
        busy = Busy(busy_client, everyone[: args.busy])
        stage(f"{args.busy:,} agents made busy")
        await busy.start()
        stage("busy; status and round trips")
        await asyncio.sleep(args.warmup)
        turns = busy.turns
        started = time.perf_counter()
        cli_busy = [await asyncio.to_thread(plane.cli_status) for _ in range(args.repeat)]
        raw_busy = [await raw_status(socket) for _ in range(args.repeat)]
        load_busy = os.getloadavg()[0]
        trips_busy = await elsewhere(other, round_trips, socket, everyone[-100:], 20)
        turns_s = (busy.turns - turns) / (time.perf_counter() - started)
        stage("busy; the operator's requests")
        load_before = os.getloadavg()[0]
        spying = spy_on(plane.pid, args.spy / f"busy-{agents}.txt") if args.spy else None
        asked, zero_ms, replied, refused = await elsewhere(
            other, as_the_operator, socket, busy.agents[:50], everyone[-50:], args.repeat * 7,
            busy.agents[-20:],
        )  # fmt: skip
        if spying is not None:
            spying.send_signal(signal.SIGINT)
            await asyncio.to_thread(spying.wait, 60)
        await asyncio.sleep(3)
        late = turns_after(busy, replied)
        load = (load_before, os.getloadavg()[0])
        await busy.stop()
        await busy_client.close()
    if spy is not None:
        print(f"  py-spy, the start of {agents:,} agents ({spy}):")
        print("\n".join(top_functions(spy)))
    if args.spy:
        snap = args.spy / f"snapshot-{agents}.txt"
        print(f"  py-spy, three snapshots of {agents:,} agents ({snap}):")
        print("\n".join(top_functions(snap)))
        busy_spy = args.spy / f"busy-{agents}.txt"
        print(f"  py-spy, the operator's requests, {args.busy:,} busy ({busy_spy}):")
        print("\n".join(top_functions(busy_spy)))
    report(agents, aims, size, read_s, plane.cold_s, rss, cli_idle, raw_idle, trips_idle,
           cli_busy, raw_busy, trips_busy, args.busy, turns_s)  # fmt: skip
    print(
        f"  the plane's CPU to its first status {plane.cold_cpu_s:8.2f} s"
        f" (the machine's load average {plane.cold_load:.1f} then)"
    )
    print(
        f"  the machine's load average after status idle {load_idle:.1f}, busy {load_busy:.1f};"
        f" a socket's send buffer at most {send_buffer_mib():.1f} MiB (net.core.wmem_max:"
        " a reply longer than the plane's goes in parts, a pass of its loop apart)"
    )
    report_operator(asked, zero_ms, late, args.busy, load)
    print(
        f"  a request refused at once, {args.busy:,} busy ({len(refused)}, 10 ms apart):"
        f" median {statistics.median(refused):6.1f} ms, p99 {p99(refused):7.1f} ms"
    )


def report_operator(
    asked: dict[str, list[float]],
    zero_ms: list[float],
    late: int,
    busy: int,
    load: tuple[float, float],
) -> None:
    everything = [ms for took in asked.values() for ms in took] + zero_ms
    print(
        f"  the operator's requests, {busy:,} busy ({len(everything)} requests;"
        f" the machine's load average {load[0]:.1f} before, {load[1]:.1f} after):"
    )
    for what, took in [*asked.items(), ("/limit 0", zero_ms)]:
        print(f"    {what:12} median {statistics.median(took):6.1f} ms, p99 {p99(took):7.1f} ms")
    top = p99(everything)
    print(f"    all of them p99 {top:7.1f} ms: {ratio(top, REQUEST_AIM_MS)}")
    verdict = "met" if late == 0 else "NOT met"
    print(f"  /limit 0 to {len(zero_ms)} busy agents: {late} turns started after it ({verdict})")


def report(
    agents: int,
    aims: dict[str, float],
    size: int,
    read_s: float,
    cold_s: float,
    rss: float,
    cli_idle: list[tuple[float, str]],
    raw_idle: list[tuple[float, int, int]],
    trips_idle: list[float],
    cli_busy: list[tuple[float, str]],
    raw_busy: list[tuple[float, int, int]],
    trips_busy: list[float],
    busy: int,
    turns_s: float,
) -> None:
    print(
        f"fleet of {agents:,} agents (agents.yaml {size / 1e6:.1f} MB, read in {read_s:.2f} s CPU)"
    )
    print(
        f"  cold start to the first status    {cold_s:8.2f} s     {ratio(cold_s, aims['start_s'])}"
    )
    print(f"  RSS, settled                      {rss:8.0f} MB    {ratio(rss, aims['rss_mb'])}")
    for when, cli, raw, aim in (
        ("idle", cli_idle, raw_idle, aims["idle_ms"]),
        (f"{busy:,} busy", cli_busy, raw_busy, aims["busy_ms"]),
    ):
        failed = {why for _, why in cli if why}
        ms = statistics.median(t for t, _ in cli)
        if failed:
            print(f"  plane status --json, {when:10}  fails: {'; '.join(failed)}")
        else:
            print(f"  plane status --json, {when:10}  {ms:8.0f} ms    {ratio(ms, aim)}")
        raw_ms = statistics.median(t for t, _, _ in raw)
        size, frames = raw[0][1] / 2**20, raw[0][2]
        print(
            f"  the snapshot alone, {when:11}  {raw_ms:8.0f} ms    {ratio(raw_ms, aim)};"
            f" {size:.1f} MiB in {frames} frames ({raw[0][1] / agents:.0f} bytes an agent)"
        )
    for when, trips in (("idle", trips_idle), (f"{busy:,} busy", trips_busy)):
        med, top = statistics.median(trips), max(trips)
        print(
            f"  a message's round trip, {when:8} median {med:6.1f} ms, max {top:7.1f} ms:"
            f" {ratio(top, REQUEST_AIM_MS)} (max against the p99 aim)"
        )
    print(f"  busy agents' turns meanwhile: {turns_s:,.0f} a second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, action="append", help="default: 10,000 and 100,000")
    parser.add_argument("--busy", type=int, default=1000, help="agents taking turns")
    parser.add_argument("--warmup", type=float, default=5, help="s of busy before measuring")
    parser.add_argument("--repeat", type=int, default=3, help="status requests timed, each way")
    parser.add_argument("--spy", type=Path, help="write py-spy profiles here, print their tops")
    parser.add_argument("--dir", type=Path, default=None, help="where the homes go")
    args = parser.parse_args()
    if args.spy:
        args.spy.mkdir(parents=True, exist_ok=True)
    server = Server()
    # One process for every request sent from elsewhere: each spawned one
    # imports this script again (~0.8 CPU-s).
    other = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            for agents in args.agents or [10_000, 100_000]:
                asyncio.run(run(agents, args, Path(tmp), server, other))
    finally:
        other.shutdown()
        server.close()


if __name__ == "__main__":
    main()
