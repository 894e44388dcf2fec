"""Gateway call latency with and without looping `/metrics` scrapers, in one run.

    .venv/bin/python bench/metrics_scrapes.py
    .venv/bin/python bench/metrics_scrapes.py --scrapers 8 --rounds 30 --ledger 1000000

A real `plane serve --http` in a subprocess, its gateway agent on a small
Anthropic-shaped upstream here (aiohttp, in a thread: it answers at once,
and writes each answer in one piece, so no delayed ACK stands in for the
plane's own time), and a ledger of `--ledger` settled calls (copied from one
real call, written before the plane starts), so each reading of the sums has
work to do. The bench's process makes gateway calls one after another and
takes the median latency of them alone and while `--scrapers` scrapers in
another process scrape `/metrics` in a loop (raw HTTP, no pause between
scrapes: as fast as the plane answers). The two go in turns, `--calls` calls
each, `--rounds` times (the scrapers' process stopped with SIGSTOP while the
calls go alone), so a load that comes and goes on the machine falls on both.
It prints both medians, their ratio and how many scrapes were answered; the
aim is a ratio of at most 1.5. On a machine others load too, it reads high.

Before a scrape was served a recent reading, every scrape summed the whole
ledger again: eight scrapers slowed calls about 7x at the median (10-14x here
on a 100,000-call ledger).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plane.gateway.keys import Keys
from plane.home import Home

AIM = 1.5
LISTEN = ("--http", "127.0.0.1:0")
CONFIG = """
providers:
  upstream:
    kind: anthropic
    base_url: {url}
    models: [bench-model]
    max_retries: 0
pricing:
  bench-model: {{input: 1, output: 2}}
agents:
  claude: {{provider: upstream, model: bench-model, limitUsd: 1000000, gateway: {{}}}}
"""
ASKED = itertools.count()
"""Numbers each call's question, across rounds."""
CALL = {"model": "bench-model", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
ANSWER = json.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [{"type": "text", "text": "hello"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 2},
    }
).encode()


class Upstream:
    """Anthropic's Messages, answered at once, on a loop of its own in a thread."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Upstream:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._listen())
        self._ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", self._answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"

    async def _answer(self, request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=ANSWER, content_type="application/json")


class Served:
    def __init__(self, root: Path, upstream_url: str) -> None:
        self.root = root
        self.home = root / "home"
        self.config = root / "agents.yaml"
        self.config.write_text(CONFIG.format(url=upstream_url))
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> None:
        log = self.root / "serve.err"
        with log.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "plane", "serve", "--config", str(self.config), *LISTEN],
                env={**os.environ, "PLANE_HOME": str(self.home)},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while not (
            found := re.search(r"the gateway on http://127\.0\.0\.1:(\d+)", log.read_text())
        ):
            assert self.process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the plane did not start"
            time.sleep(0.1)
        self.port = int(found.group(1))

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


def fill(db: Path, calls: int) -> None:
    """`calls` settled calls in the ledger, copies of the one there."""
    conn = sqlite3.connect(db)
    columns = (
        "agent, day, at, provider, model, input_tokens, cache_read_tokens, cache_write_tokens,"
        " output_tokens, cost_usd, price_source, status, estimated"
    )
    with conn:
        while (have := conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]) < calls:
            conn.execute(
                f"INSERT INTO calls ({columns}) SELECT {columns} FROM calls LIMIT ?",
                (calls - have,),
            )
    conn.close()


async def latencies(url: str, key: str, calls: int) -> list[float]:
    taken = []
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(calls):
            # Each call its own question: the same one sent again and again is
            # a loop the plane's guard holds.
            call = {**CALL, "messages": [{"role": "user", "content": f"hi {next(ASKED)}"}]}
            began = time.perf_counter()
            answer = await client.post(f"{url}/v1/messages", json=call, headers=headers)
            taken.append(time.perf_counter() - began)
            assert answer.status_code == 200, answer.text
    return taken


async def scrape(url: str, token: str, scrapers: int) -> None:
    """The scrapers' process: scrape until SIGTERM, then print how many scrapes.
    Raw HTTP/1.1 on kept-alive connections: a client library would spend
    more of the machine's two cores than the plane does answering it."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)  # from here a SIGTERM ends the count, never the process
    host, port = url.removeprefix("http://").split(":")
    ask = f"GET /metrics HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n"
    done = 0

    async def loop() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection(host, int(port))
        while not stop.is_set():
            writer.write(ask.encode())
            assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            length = 0
            while (line := await reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            done += 1
        writer.close()

    await asyncio.gather(*(loop() for _ in range(scrapers)))
    print(done, flush=True)


def scrapers(url: str, token: str, count: int) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--scrape", url, token, str(count)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def measure(url: str, key: str, token: str, args: argparse.Namespace) -> None:
    asyncio.run(latencies(url, key, 5))  # connections and caches warm
    alone: list[float] = []
    scraped: list[float] = []
    scraping = scrapers(url, token, args.scrapers)
    assert scraping.stdout is not None
    scraping.stdout.readline()  # started (on a loaded machine, seconds), then under way:
    time.sleep(1.0)
    for _ in range(args.rounds):
        scraping.send_signal(signal.SIGSTOP)  # stopped, their connections open and idle
        time.sleep(0.1)
        alone += asyncio.run(latencies(url, key, args.calls))
        scraping.send_signal(signal.SIGCONT)
        time.sleep(0.2)
        scraped += asyncio.run(latencies(url, key, args.calls))
    scraping.terminate()
    out, _ = scraping.communicate(timeout=60)
    quiet, busy = statistics.median(alone), statistics.median(scraped)
    ratio = busy / quiet
    scrapes = int(out.split()[-1])
    print(f"ledger: {args.ledger:,} calls; {args.scrapers} scrapers looping ({scrapes:,} scrapes)")
    print(f"median gateway call: {quiet * 1000:.1f} ms alone, {busy * 1000:.1f} ms while scraped")
    print(f"ratio {ratio:.2f} (aim: at most {AIM}) {'ok' if ratio <= AIM else 'OVER'}")


def main() -> None:
    if sys.argv[1:2] == ["--scrape"]:
        url, token, count = sys.argv[2:5]
        asyncio.run(scrape(url, token, int(count)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapers", type=int, default=8)
    parser.add_argument("--calls", type=int, default=20, help="calls timed a round, each side")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ledger", type=int, default=100_000, help="settled calls in the ledger")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Upstream() as upstream:
        root = Path(tmp)
        served = Served(root, upstream.url)
        served.start()
        key = Keys(Home(served.home).gateway_keys).make("claude")
        try:
            asyncio.run(latencies(f"http://127.0.0.1:{served.port}", key, 1))
        finally:
            served.stop()
        fill(served.home / "plane.db", args.ledger)
        served.start()
        try:
            token = (served.home / "token").read_text().strip()
            measure(f"http://127.0.0.1:{served.port}", key, token, args)
        finally:
            served.stop()


if __name__ == "__main__":
    main()
