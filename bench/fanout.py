"""Fan-out: the plane's event stream to 1 and to 20 subscribers, in one run.

    .venv/bin/python bench/fanout.py [--agents 200] [--subscribers 20] [--seconds 5]
                                     [--reader-processes 1]

A real plane (a temporary home, its real Unix socket and listener) and
subscribers on connections of their own, as TUIs are: each says hello with
the token, subscribes, and reads its lines. They are read by
`--reader-processes` processes outside the plane's (one by default, its
sockets multiplexed: see READER). The plane's side publishes token
deltas through its own event bus, as turns do.

- Throughput: `--agents` streams publish as fast as the plane delivers (the
  publisher waits while the slowest subscriber has `BACKLOG` events waiting),
  for `--seconds`; events/s that reached every subscriber, with 1 and with
  `--subscribers`. Aim: 20 subscribers >= 0.8x of 1.
- Delay: the same streams paced at `--rate` deltas a second each; from
  publishing to a subscriber reading it, p50/p99 over every subscriber.
  Aim: p99 < 50 ms with 20 subscribers.

A delta carries the moment it was published (CLOCK_MONOTONIC, the same in
every process); a subscriber samples the newest delta of each read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.framing import PROTOCOL_VERSION

THROUGHPUT_AIM = 0.8
BACKLOG = 2_000
"""Events the publisher lets wait for the slowest subscriber (the plane drops one at 10,000)."""
DELAY_AIM_MS = 50.0

READER = r"""
import json, selectors, socket, sys, time
path, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
hello = json.dumps({"type": "hello", "id": 1, "protocol_version": VERSION, "client": "bench",
                    "token": token}).encode() + b"\n"
sel = selectors.DefaultSelector()
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(hello)
    reply = s.makefile("rb").readline()
    if b'"type":"welcome"' not in reply.replace(b" ", b""):
        sys.exit(f"the plane did not welcome the reader: {reply.decode(errors='replace').strip()}")
    s.sendall(b'{"type": "subscribe", "id": 2}\n')
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, {"count": 0, "delays": [], "tail": b""})
print("ready", flush=True)
done = []
while len(done) < n:
    for key, _ in sel.select():
        state, s = key.data, key.fileobj
        data = s.recv(1 << 20)
        chunk = state["tail"] + data
        state["count"] += data.count(b"|")
        at = chunk.rfind(b'"text":"')
        if at >= 0 and (bar := chunk.find(b"|", at)) > 0:  # one delay a read: the newest delta's
            state["delays"].append(time.monotonic() - float(chunk[at + 8:bar]))
        if not data or b'"text":"end"' in chunk:
            sel.unregister(s)
            done.append(state)
        state["tail"] = data[-64:]
print(json.dumps([{"count": d["count"], "delays": d["delays"]} for d in done]), flush=True)
"""
"""Subscribers that read as cheaply as Python can (counting in C, one delay
sampled a read), `n` sockets to a process, multiplexed with epoll: what is
measured is the plane's sending, and on a machine of two cores twenty
reader processes would spend it on switching between themselves (with a
process each, the readers took a whole core and the plane waited on them)."""


async def run(
    agents: int, subscribers: int, seconds: float, rate: float | None, processes: int = 1
) -> dict:
    """Publish for `seconds` with `subscribers` reading; what they received."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        plane = Plane(parse_config("agents: {}\n"), home)
        await plane.startup()
        token = (home.root / "token").read_text().strip()
        shares = [len(range(i, subscribers, processes)) for i in range(processes)]
        readers = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                READER.replace("VERSION", str(PROTOCOL_VERSION)),
                str(home.socket),
                token,
                str(share),
                stdout=asyncio.subprocess.PIPE,
                limit=1 << 28,  # the last line holds every delay seen
            )
            for share in shares
            if share
        ]
        for reader in readers:
            assert reader.stdout is not None
            if not await reader.stdout.readline():  # ready, or gone with its reason on stderr
                sys.exit("a reader ended before it was ready")
        await asyncio.sleep(0.5)  # every subscription taken
        readers_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        plane_before = time.process_time()
        published = await publish(plane, agents, seconds, rate)
        plane.bus.emit(p.TextDelta(agent="end", turn=0, text="end"))
        results = []
        for reader in readers:
            assert reader.stdout is not None
            results.extend(json.loads(await reader.stdout.readline()))
            await reader.wait()
        plane_cpu = time.process_time() - plane_before
        readers_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        readers_cpu = sum(
            getattr(readers_after, f) - getattr(readers_before, f) for f in ("ru_utime", "ru_stime")
        )
        plane.stop_event.set()
        await plane.shutdown()
    delays = sorted(d for r in results for d in r["delays"])
    return {
        "published": published,
        "received": min(r["count"] for r in results),
        "plane_cpu_s": plane_cpu,
        "readers_cpu_s": readers_cpu,
        "p50_ms": 1000 * statistics.median(delays) if delays else float("nan"),
        "p99_ms": 1000 * delays[int(len(delays) * 0.99)] if delays else float("nan"),
    }


async def publish(plane: Plane, agents: int, seconds: float, rate: float | None) -> int:
    """Deltas from `agents` streams; as fast as the plane delivers (a round
    of every agent, then the loop's turn for the writers), or `rate` a second each."""
    names = [f"agent-{i}" for i in range(agents)]
    sent, start = 0, time.monotonic()
    round_s = None if rate is None else 1 / rate
    while time.monotonic() - start < seconds:
        for name in names:
            plane.bus.emit(p.TextDelta(agent=name, turn=1, text=f"{time.monotonic()}|word "))
        sent += agents
        if round_s is None:
            await asyncio.sleep(0)
            # As fast as delivered, never dropped: the bus has no event to wait on (by design
            # it never waits on a client), so the bench looks.
            while plane.bus.backlog() > BACKLOG:  # noqa: ASYNC110
                await asyncio.sleep(0.001)
        else:
            await asyncio.sleep(max(0.0, start + (sent / agents) * round_s - time.monotonic()))
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rate", type=float, default=10, help="deltas a second each (delay)")
    parser.add_argument(
        "--reader-processes", type=int, default=1, help="processes the subscribers are read by"
    )
    args = parser.parse_args()
    procs = max(1, args.reader_processes)
    one = asyncio.run(run(args.agents, 1, args.seconds, None))
    many = asyncio.run(run(args.agents, args.subscribers, args.seconds, None, procs))
    paced = asyncio.run(run(args.agents, args.subscribers, args.seconds, args.rate, procs))
    rate_one = one["received"] / args.seconds
    rate_many = many["received"] / args.seconds
    ratio = rate_many / rate_one
    print(
        f"fan-out: {args.agents} streaming agents, {args.seconds:g} s a side, the subscribers"
        f" read by {procs} process{'es' if procs != 1 else ''}"
    )
    for label, run_ in ((" 1 subscriber  ", one), (f"{args.subscribers} subscribers", many)):
        rate = run_["received"] / args.seconds
        print(
            f"  {label} {rate:10,.0f} events/s delivered to each; CPU s: plane + publisher"
            f" {run_['plane_cpu_s']:.2f}, readers {run_['readers_cpu_s']:.2f}"
        )
    met = "met" if ratio >= THROUGHPUT_AIM else "NOT met"
    print(f"  ratio {ratio:.2f}x (aim >= {THROUGHPUT_AIM:.1f}x: {met})")
    met = "met" if paced["p99_ms"] < DELAY_AIM_MS else "NOT met"
    print(
        f"  delay at {args.rate:g} deltas/s per agent, {args.subscribers} subscribers: "
        f"p50 {paced['p50_ms']:.1f} ms, p99 {paced['p99_ms']:.1f} ms "
        f"= {paced['p99_ms'] / DELAY_AIM_MS:.2f}x of the {DELAY_AIM_MS:.0f} ms aim ({met})"
    )


if __name__ == "__main__":
    main()
