"""Metered calls per second: one plane on SQLite, one on PostgreSQL, three on
one PostgreSQL, side by side, in one run.

    .venv/bin/python bench/planes.py
    .venv/bin/python bench/planes.py --agents 30 --seconds 5

A metered call here is the ledger's part of one: admitted against the fleet's
ceiling and written pending at its estimate (one transaction, the fleet row
locked), then settled (another), through `Ledger` on the plane's store with
its writer thread and group commit; the provider is left out, so what is
measured is what the store costs. Each plane is a process of its own with
`--agents` agents calling at once, the agents shared out among the planes.
PostgreSQL is `PLANE_TEST_PG` when set, else a server started for the run in
a temporary directory (tests/support/postgres.py), on this machine's disk
with fsync off: the figures compare the engines' designs, not a production
server's disks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plane.clock import ManualClock
from plane.money.ledger import Ledger
from plane.store import open_store
from plane.wire.protocol import Usage

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=1200, cache_read_tokens=1000, output_tokens=80)
FLEET = Decimal(10**9)
"""A fleet ceiling no run reaches: every call is admitted, through the lock."""


async def plane(store: str | None, path: Path, agents: list[str], seconds: float, name: str) -> int:
    """Calls settled in `seconds` by one plane's `agents`, all calling at once."""
    db = await open_store(store, path)
    ledger = Ledger(db, ManualClock(NOON), plane=name if store else None)
    await ledger.spend_today(agents[0])
    done = 0
    stop = time.perf_counter() + seconds

    async def agent(name: str) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            call = await ledger.open_call(
                name, "p", "m", Decimal("0.02"), "estimate", fleet_ceiling=FLEET
            )
            await ledger.settle(call, USAGE, Decimal("0.0123"), "table")
            done += 1

    await asyncio.gather(*(agent(a) for a in agents))
    await db.close()
    return done


def run_planes(store: str | None, root: Path, planes: int, agents: int, seconds: float) -> float:
    """Calls/s of `planes` processes together (each its own store connection)."""
    names = [f"agent-{n}" for n in range(agents)]
    specs = [
        {
            "store": store,
            "path": str(root / f"plane-{i}.db"),
            "agents": names[i::planes],
            "seconds": seconds,
            "name": f"p{i}",
        }
        for i in range(planes)
    ]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--plane", json.dumps(spec)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for spec in specs
    ]
    total = 0
    for child in children:
        out, _ = child.communicate(timeout=seconds + 120)
        if child.returncode != 0:
            raise SystemExit(f"a plane failed ({child.returncode})")
        total += int(out.strip().splitlines()[-1])
    return total / seconds


def fresh_database(server: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return server.rpartition("/")[0] + "/" + name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--plane", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plane:  # one plane, in its own process
        spec = json.loads(args.plane)
        run = plane(
            spec["store"], Path(spec["path"]), spec["agents"], spec["seconds"], spec["name"]
        )
        print(asyncio.run(run))
        return

    server_url = os.environ.get("PLANE_TEST_PG")
    server = None
    with tempfile.TemporaryDirectory(prefix="plane-bench-") as tmp:
        root = Path(tmp)
        if not server_url:
            from tests.support.postgres import Server

            pg_root = Path(tempfile.mkdtemp(prefix="plane-bench-pg-"))
            server = Server(pg_root)
            server.start()
            server_url = server.url
        try:
            sqlite = run_planes(None, root, 1, args.agents, args.seconds)
            one = run_planes(fresh_database(server_url), root, 1, args.agents, args.seconds)
            three = run_planes(fresh_database(server_url), root, 3, args.agents, args.seconds)
        finally:
            if server is not None:
                server.stop()
                shutil.rmtree(server.root, ignore_errors=True)
    print(f"metered calls/s, {args.agents} agents calling at once, {args.seconds:g} s each:")
    print(f"  one plane on SQLite          {sqlite:8.0f}")
    print(f"  one plane on PostgreSQL      {one:8.0f}   {one / sqlite:.2f}x SQLite")
    print(f"  three planes on PostgreSQL   {three:8.0f}   {three / one:.2f}x one plane")


if __name__ == "__main__":
    main()
