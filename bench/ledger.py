"""Settled calls per second through the plane's ledger, next to raw sqlite3
on the same disk, in one run; then the first gate check of a day at 100k
calls.

    .venv/bin/python bench/ledger.py
    .venv/bin/python bench/ledger.py --agents 100 --seconds 5 --dir /var/tmp

The two sides run in turns (`--rounds` of each, raw first), so a load that
comes and goes on the machine falls on both; the ratio is of the totals.
The plane's side: `--agents` coroutines, each opening a call (pending, at its
estimate) and settling it, through `Ledger` on its `Database` (one writer
thread, group commit). The raw side: one INSERT and one COMMIT per call
with the sqlite3 module, WAL and synchronous=NORMAL, as the plane sets them,
on the plane's own schema. The aim is at least 1.0x.

CPU a settled call against raw sqlite3 **at the same batch size**: the raw
side again, committing as many inserts at once as the plane's calls shared a
commit in the same round (one thread, no event loop). The aim: at most 2x.
Beside it, the floor under the plane's figure: its own statements alone at
that batch (each transaction the settling updates of the calls opened in the
one before, the pending inserts of as many new ones and the day's sums, as
the plane's writer commits them), one thread, no event loop, no Python but
theirs; and the event loop's part of a call that no ledger can take out (two
futures awaited in turn, resolved a batch at a time by a thread). The two
together are what the plane's figure cannot go under.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import sqlite3
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path

from plane import collector
from plane.clock import ManualClock
from plane.money.call_writes import CLOSE, OPEN_BARE
from plane.money.day_sums import DaySums
from plane.money.ledger import Ledger
from plane.store.migrations import MIGRATIONS, postgres_own
from plane.store.sqlite import SqliteDatabase, _connect_writer
from plane.wire.protocol import Usage

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=80)
ESTIMATE, COST = Decimal("0.05"), Decimal("0.0123")
"""Made once, as `USAGE`: a price's own arithmetic is the caller's, not the ledger's."""
AIM = 1.0
CPU_AIM = 2.0
"""The plane's CPU a settled call, at most this many times raw sqlite3's at the same batch size."""


def schema(path: Path, steps: int = len(MIGRATIONS)) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for script in MIGRATIONS[:steps]:
        if "decimal_sum" not in script and not postgres_own(script):
            conn.executescript(script)
    conn.execute(f"PRAGMA user_version = {steps}")
    return conn


def raw(path: Path, seconds: float, batch: int = 1) -> tuple[int, float]:
    """Calls done and seconds taken: one insert per call and one commit per
    `batch` calls, one thread (the schema made on the first round)."""
    conn = schema(path) if not path.exists() else sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")  # per connection (WAL stays set in the file)
    insert = (
        "INSERT INTO calls (agent, day, at, provider, model, input_tokens, cache_read_tokens,"
        " output_tokens, cost_usd, price_source, status) VALUES (?, ?, ?, 'p', 'm', 1200,"
        " 1000, 80, '0.0123', 'table', 'settled')"
    )
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(max(1, 100 // batch)):
            conn.execute("BEGIN")
            for _ in range(batch):
                conn.execute(insert, (f"agent-{done % 100}", "2026-11-29", NOON.isoformat()))
                done += 1
            conn.execute("COMMIT")
    conn.close()
    return done, elapsed


def statements(path: Path, seconds: float, batch: int) -> tuple[int, float]:
    """Calls done and CPU seconds taken by the ledger's own statements alone,
    `batch` calls a commit (as `raw`), one transaction as the plane's writer
    makes it: the settling updates of the calls opened in the one before, the
    pending inserts of `batch` new calls, and the day's sums (`DaySums`, as the
    writer ends a transaction), on the plane's writer connection and schema."""
    if not path.exists():
        asyncio.run(migrated(path))
    conn = _connect_writer(path)
    sums, done, calls = DaySums(), 0, list[tuple[str, int | None]]()
    cpu, start = time.process_time(), time.perf_counter()
    pending = ("", "2026-11-29", NOON.isoformat(), "p", "m", "0.05", "estimate")
    settled = (NOON.isoformat(), 1200, 1000, 0, 0, 80, "0.0123", "table")
    while time.perf_counter() - start < seconds:
        conn.execute("BEGIN IMMEDIATE")
        for agent, call in calls:
            conn.execute(CLOSE, (*settled, call))
            sums.add_on("2026-11-29", agent, COST)
        calls = []
        for n in range(batch):
            row = (f"agent-{(done + n) % 100}", *pending[1:])
            calls.append((row[0], conn.execute(OPEN_BARE, row).lastrowid))
        sums.write(conn)
        conn.execute("COMMIT")
        done += batch
    taken = time.process_time() - cpu
    conn.close()
    return done, taken


async def hops(agents: int, seconds: float) -> tuple[int, float]:
    """Calls done and the event loop's CPU seconds for the part of a settled
    call no ledger can take out: two writes awaited in turn, each a future
    that a thread resolves a batch at a time (as the writer: a queue, a wait
    standing for the batch's SQL, one hand-over to the loop), and nothing else."""
    loop = asyncio.get_running_loop()
    writes: queue.SimpleQueue[asyncio.Future[None] | None] = queue.SimpleQueue()

    def deliver(batch: list[asyncio.Future[None]]) -> None:
        for future in batch:
            future.set_result(None)

    def writer() -> None:
        while (first := writes.get()) is not None:
            batch = [first]
            while (more := _taken(writes)) is not None:
                batch.append(more)
            time.sleep(0.0003)
            loop.call_soon_threadsafe(deliver, batch)

    def put() -> asyncio.Future[None]:
        future: asyncio.Future[None] = loop.create_future()
        writes.put(future)
        return future

    done, deadline = 0, time.perf_counter() + seconds

    async def agent() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await put()
            await put()
            done += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    cpu = time.thread_time()
    await asyncio.gather(*(agent() for _ in range(agents)))
    taken = time.thread_time() - cpu
    writes.put(None)
    thread.join()
    return done, taken


def _taken(writes: queue.SimpleQueue[asyncio.Future[None] | None]) -> asyncio.Future[None] | None:
    try:
        return writes.get_nowait()
    except queue.Empty:
        return None


async def migrated(path: Path) -> None:
    """The plane's schema made at `path` (as the plane opens its file)."""
    await (await SqliteDatabase.open(path)).close()


async def plane(path: Path, agents: int, seconds: float) -> tuple[int, float, dict[str, float]]:
    """Calls done and seconds taken through the ledger, and what each call
    cost the database."""
    db = await SqliteDatabase.open(path)
    ledger = Ledger(db, ManualClock(NOON))
    await ledger.spend_today("agent-0")
    collector.freeze()  # as the daemon does once started
    before = dict(vars(db.counts))
    done = 0
    cpu, loop_cpu = time.process_time(), time.thread_time()
    start = time.perf_counter()
    deadline = start + seconds

    async def agent(name: str) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            call = await ledger.open_call(name, "p", "m", ESTIMATE, "estimate")
            await ledger.settle(call, USAGE, COST, "table")
            done += 1

    await asyncio.gather(*(agent(f"agent-{n}") for n in range(agents)))
    elapsed = time.perf_counter() - start
    per_call = {k: (v - before[k]) / done for k, v in vars(db.counts).items()}
    per_call["cpu"] = time.process_time() - cpu  # both threads, the calls alone
    per_call["loop_cpu"] = time.thread_time() - loop_cpu  # the event loop's thread alone
    await db.close()
    return done, elapsed, per_call


async def counted(path: Path, agents: int, calls: int, without: Sequence[str] = ()) -> int:
    """`plane`'s calls, `calls` for each agent and no clock: for an
    instruction count (`--counted`), which the load does not move; with the
    indexes named in `without` dropped first, for what each costs a call."""
    db = await SqliteDatabase.open(path)
    for index in without:
        await db.write(partial(_drop, index=index))
    ledger = Ledger(db, ManualClock(NOON))
    await ledger.spend_today("agent-0")
    collector.freeze()

    async def agent(name: str) -> None:
        for _ in range(calls):
            call = await ledger.open_call(name, "p", "m", ESTIMATE, "estimate")
            await ledger.settle(call, USAGE, COST, "table")

    await asyncio.gather(*(agent(f"agent-{n}") for n in range(agents)))
    commits = db.counts.commits
    await db.close()
    return commits


def _drop(conn: sqlite3.Connection, index: str) -> None:
    conn.execute(f'DROP INDEX "{index}"')


async def first_check(path: Path, calls: int, agents: int = 100) -> tuple[float, float]:
    """Milliseconds for the first gate check of a day with `calls` calls in
    it: through the ledger (the spend table), and summing the day's calls
    as the ledger did before that table."""
    conn = schema(path, 3)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status)"
        " VALUES (?, '2026-11-29', '', 'p', 'm', '0.0123', 'table', 'settled')",
        ((f"agent-{n % agents}",) for n in range(calls)),
    )
    conn.execute("COMMIT")
    conn.close()
    await (await SqliteDatabase.open(path)).close()  # migrates: the sums are filled once
    db = await SqliteDatabase.open(path)
    start = time.perf_counter()
    await Ledger(db, ManualClock(NOON)).spend_today("agent-0")
    now = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    rows = await db.fetchall("SELECT agent, cost_usd FROM calls WHERE day = ?", "2026-11-29")
    sums: dict[str, Decimal] = {}
    for row in rows:
        sums[row["agent"]] = sums.get(row["agent"], Decimal(0)) + Decimal(row["cost_usd"])
    summed = (time.perf_counter() - start) * 1000
    await db.close()
    return now, summed


def load_after() -> str:
    """The machine's load average over the last minute, as the figures are read beside it."""
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    load_before = load_after()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=1.0, help="per side, per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100_000, help="in the day, for the gate")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go")
    parser.add_argument(
        "--counted",
        type=int,
        default=0,
        metavar="CALLS",
        help="only the plane's side, CALLS settled calls an agent, untimed: run twice under"
        " valgrind --tool=callgrind --fair-sched=yes (say 20 and 60), and the difference of"
        " the instructions over the calls between is the instructions a settled call",
    )
    parser.add_argument(
        "--without-index",
        action="append",
        default=[],
        metavar="NAME",
        help="with --counted: drop this index of the plane's schema first (repeatable)",
    )
    args = parser.parse_args()
    if args.counted:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            total = args.agents * args.counted
            commits = asyncio.run(
                counted(Path(tmp) / "plane.db", args.agents, args.counted, args.without_index)
            )
        print(f"{total:,} settled calls, {commits / total:.3f} commits a call")
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        where = Path(tmp)
        raw_done = raw_time = plane_done = plane_time = raw_cpu = plane_cpu = 0.0
        batched_done = batched_cpu = loop_cpu = own_done = own_cpu = hops_done = hops_cpu = 0.0
        ratios, cpu_ratios, batches = [], [], []
        for _ in range(args.rounds):
            cpu = time.process_time()
            n, t = raw(where / "raw.db", args.seconds)
            raw_cpu += time.process_time() - cpu
            raw_done, raw_time = raw_done + n, raw_time + t
            m, u, per_call = asyncio.run(plane(where / "plane.db", args.agents, args.seconds))
            plane_cpu += per_call["cpu"]
            loop_cpu += per_call["loop_cpu"]
            plane_done, plane_time = plane_done + m, plane_time + u
            ratios.append((m / u) / (n / t))
            batch = max(1, round(1 / per_call["commits"]))
            cpu = time.process_time()
            b, _ = raw(where / "raw.db", args.seconds, batch)
            round_cpu = time.process_time() - cpu
            batched_done, batched_cpu = batched_done + b, batched_cpu + round_cpu
            batches.append(batch)
            d, c = statements(where / "statements.db", args.seconds, batch)
            own_done, own_cpu = own_done + d, own_cpu + c
            h, c = asyncio.run(hops(args.agents, args.seconds))
            hops_done, hops_cpu = hops_done + h, hops_cpu + c
            cpu_ratios.append((per_call["cpu"] / m) / (round_cpu / b))
        raw_rate, rate = raw_done / raw_time, plane_done / plane_time
        gate_ms, summed_ms = asyncio.run(first_check(where / "gate.db", args.calls))
    ratio = rate / raw_rate
    rounds = f"{args.rounds} rounds of {args.seconds:g} s a side, in turns"
    print(f"ledger on {where} ({args.agents} agents, {rounds})")
    print(f"  load average at the start and the end: {load_before}, {load_after()}")
    raw_us, plane_us = raw_cpu / raw_done * 1e6, plane_cpu / plane_done * 1e6
    print(f"  raw sqlite3 insert+commit  {raw_rate:9,.0f} calls/s  {raw_us:5.1f} us CPU a call")
    print(
        f"  plane open_call+settle     {rate:9,.0f} calls/s  {plane_us:5.1f} us CPU a call"
        f" ({loop_cpu / plane_done * 1e6:.1f} of it on the event loop's thread)"
    )
    met = "met" if ratio >= AIM else "NOT met"
    spread = f"rounds {min(ratios):.2f}x to {max(ratios):.2f}x"
    print(f"  ratio {ratio:.2f}x (aim >= {AIM:.1f}x: {met}; {spread})")
    batched_us = batched_cpu / batched_done * 1e6
    cpu_ratio = plane_us / batched_us
    print(
        f"  raw sqlite3 at the plane's batch ({min(batches)} to {max(batches)} calls a commit)"
        f"  {batched_us:5.1f} us CPU a call"
    )
    own_us = own_cpu / own_done * 1e6
    print(
        f"  the plane's own statements alone at that batch (one thread, no event loop)"
        f"  {own_us:5.1f} us CPU a call ({own_us / batched_us:.2f}x raw's)"
    )
    hops_us = hops_cpu / hops_done * 1e6
    print(
        f"  the event loop's part no ledger takes out (two futures a call, resolved a batch"
        f" at a time by a thread)  {hops_us:5.1f} us CPU a call ({hops_us / batched_us:.2f}x raw's)"
    )
    cpu_met = "met" if cpu_ratio <= CPU_AIM else "NOT met"
    print(
        f"  CPU a settled call, plane vs raw at the same batch: {cpu_ratio:.2f}x"
        f" (aim <= {CPU_AIM:.0f}x: {cpu_met};"
        f" rounds {min(cpu_ratios):.2f}x to {max(cpu_ratios):.2f}x)"
    )
    print(
        f"  per call: {per_call['writes']:.2f} writes, {per_call['batches']:.3f} writer hops,"
        f" {per_call['commits']:.3f} commits, {per_call['reads']:.3f} reads"
    )
    print(
        f"first gate check of a day at {args.calls:,} calls: {gate_ms:.1f} ms"
        f" (summing the day's calls: {summed_ms:.0f} ms)"
    )


if __name__ == "__main__":
    main()
