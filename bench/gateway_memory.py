"""Does a gateway call leave memory behind? A real plane (`plane serve
--http`, a temporary home, SQLite) in a process of its own, the scripted
upstream in another, and this process as the client: `--calls` Chat
Completions calls through the gateway, `--clients` at a time, each its own
question (the loop guard holds a client asking the same one again and
again). The plane's resident memory (VmRSS, /proc) is printed every
`--every` calls, for each setup on a plane of its own:

- streamed or not;
- one session and one tag for every call, or a new session (`session_id`
  header, as Codex sends it) and a new free-form tag (`x-plane-tag`) each call;
- with `--new-connections`, each call on a connection of its own (else the
  clients keep theirs alive).

    .venv/bin/python bench/gateway_memory.py
    .venv/bin/python bench/gateway_memory.py --calls 40000 --every 4000

The aim, ours to set: flat after warm-up. Python's allocator and SQLite's
page cache grow to a ceiling first, so the first half is warm-up; the aim
is that the second half grows the plane by under `AIM_MB` (a leak of
0.5 KB a call would be 5 MB over 10,000 calls).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway import Served

AIM_MB = 2.0
UPSTREAM = """
import sys, time
from tests.support.scripted_llm import ScriptedLLM
llm = ScriptedLLM().start()
print(llm.port, flush=True)
while True:
    time.sleep(60)
"""
"""The scripted upstream; it keeps every request it got, in its own process."""


@dataclass(frozen=True)
class Setup:
    streamed: bool
    fresh: bool
    """A new session and tag each call, or the same ones for all."""

    @property
    def name(self) -> str:
        how = "streamed" if self.streamed else "not streamed"
        each = "new session+tag each call" if self.fresh else "one session+tag"
        return f"{how}, {each}"


class Upstream:
    def __init__(self) -> None:
        root = Path(__file__).resolve().parents[1]
        self.process = subprocess.Popen(
            [sys.executable, "-c", UPSTREAM],
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert self.process.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline())}/v1"

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def call(session: aiohttp.ClientSession, plane: Served, setup: Setup, n: int) -> None:
    label = f"{n}" if setup.fresh else "0"
    headers = {
        "authorization": f"Bearer {plane.keys[0]}",
        "content-type": "application/json",
        "session_id": f"session-{label}",
        "x-plane-tag": f"ticket-{label}",
    }
    body = {
        "model": "zero-model",
        "stream": setup.streamed,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": f"Question {n}: what is {n} + {n}?"}],
    }
    if setup.streamed:
        body["stream_options"] = {"include_usage": True}
    async with session.post(
        f"{plane.url}/v1/chat/completions", data=json.dumps(body), headers=headers
    ) as response:
        text = await response.text()
        if response.status != 200:
            raise RuntimeError(f"a call was answered {response.status}: {text}")


async def drive(plane: Served, setup: Setup, args: argparse.Namespace) -> list[float]:
    """The calls, `--clients` at a time; the plane's RSS before and every `--every`."""
    series = [rss_mb(plane.process.pid)]
    numbers = itertools.count()
    done = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal done
        while (n := next(numbers)) < args.calls:
            await call(session, plane, setup, n)
            done += 1
            if done % args.every == 0:
                series.append(rss_mb(plane.process.pid))
                print(f"  {done:>7,} calls  {series[-1]:6.1f} MB", flush=True)

    connector = aiohttp.TCPConnector(force_close=args.new_connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(args.clients)))
    return series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--new-connections", action="store_true", help="a connection of its own for each call"
    )
    parser.add_argument("--setup", choices=["all", "ss", "sf", "ps", "pf"], default="all")
    args = parser.parse_args()
    setups = {
        "ss": Setup(streamed=True, fresh=False),
        "sf": Setup(streamed=True, fresh=True),
        "ps": Setup(streamed=False, fresh=False),
        "pf": Setup(streamed=False, fresh=True),
    }
    chosen = setups.values() if args.setup == "all" else [setups[args.setup]]
    upstream = Upstream()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for number, setup in enumerate(chosen):
                plane = Served(Path(tmp) / str(number), upstream.base_url, 1, False, None)
                try:
                    print(f"{setup.name}: plane RSS at start {rss_mb(plane.process.pid):.1f} MB")
                    series = asyncio.run(drive(plane, setup, args))
                finally:
                    plane.stop()
                half = series[len(series) // 2]
                grown = series[-1] - half
                verdict = "flat" if grown < AIM_MB else "GROWING"
                print(
                    f"  second half grew {grown:+.1f} MB (aim < {AIM_MB:g} MB): {verdict}",
                    flush=True,
                )
    finally:
        upstream.close()


if __name__ == "__main__":
    main()
