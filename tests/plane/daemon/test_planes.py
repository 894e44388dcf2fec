"""Several planes on one PostgreSQL (the issue's test): three real `plane
serve` processes, 30 agents on the scripted provider, concurrent turns, one
plane SIGKILLed mid-turn. Its agents move to the others within the lease; no
billed call is lost or counted twice; no agent and not the fleet passes its
ceiling by more than the stated bound; a client of a surviving plane sees
all 30 agents and their owners."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.protocol import Usage
from tests.support.fleet_members import serve
from tests.support.scripted_llm import Reply
from tui.app import PlaneApp
from tui.link import Address, Backoff
from tui.widgets.agent_list import AgentList

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

AGENTS = [f"a{n:02}" for n in range(30)]
LEASE_S = 3
AGENT_LIMIT = Decimal("0.25")
FLEET_LIMIT = Decimal("5")
CALL = Usage(input_tokens=50, output_tokens=20)
"""$0.09 a call at these prices, under its estimate (the prompt, and 50 output tokens)."""
MAX_CALLS = 2

CONFIG = f"""
defaults:
  limitUsd: {AGENT_LIMIT}
  provider: scripted
  model: scripted-model
  max_output_tokens: 50
  max_calls_per_turn: {MAX_CALLS}
fleet:
  limitUsd: {FLEET_LIMIT}
providers:
  scripted:
    kind: openai-compatible
    base_url: {{base_url}}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {{input: 1000, cached_input: 100, output: 2000}}
agents:
""" + "".join(f"  {name}: {{tools: []}}\n" for name in AGENTS)


def rows(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def wait_for(what, within: float, message: str):
    deadline = time.monotonic() + within
    while True:
        found = what()
        if found:
            return found
        assert time.monotonic() < deadline, message
        time.sleep(0.2)


async def send_all(home: Path, text: str) -> None:
    client = await PlaneClient.connect(home / "plane.sock")
    try:
        for agent in AGENTS:
            await client.request(p.Send(agent=agent, text=f"{text} {agent}"))
    finally:
        await client.close()


async def snapshot(home: Path) -> p.Snapshot:
    client = await PlaneClient.connect(home / "plane.sock")
    try:
        reply = await client.request(p.Status())
    finally:
        await client.close()
    assert isinstance(reply, p.SnapshotReply)
    return reply.snapshot


async def tui_rows(home: Path) -> list[str]:
    """The agents' rows the real TUI draws, attached to the plane in `home`."""
    app = PlaneApp(Address(path=home / "plane.sock"), backoff=Backoff(first=0.05, most=0.3))
    async with app.run_test(size=(100, 40)) as pilot:
        names: list[str] = []
        for _ in range(300):
            names = list(app.main_screen.query_one(AgentList).names)
            if len(names) == len(AGENTS):
                break
            await pilot.pause(0.05)
        return names


def test_three_planes_thirty_agents_one_killed_mid_turn(tmp_path, scripted_llm, postgres_url):
    url = postgres_url
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    scripted_llm.default_reply = Reply("done", usage=CALL, delay_s=1.5)
    names = ["p0", "p1", "p2"]
    homes = [tmp_path / name for name in names]
    pairs = zip(homes, names, strict=True)
    planes = [serve(home, config, url, name, LEASE_S) for home, name in pairs]
    try:
        for home in homes:
            wait_for(lambda h=home: (h / "plane.sock").exists(), 30, f"{home} never served")

        def shared_out() -> dict[str, int] | None:
            owners = rows(url, "SELECT plane, COUNT(*) FROM leases GROUP BY plane")
            counts = dict(owners)
            return counts if sum(counts.values()) == 30 and len(counts) == 3 else None

        wait_for(shared_out, 4 * LEASE_S, "the three planes never shared out the 30 agents")
        victim = set(r[0] for r in rows(url, "SELECT agent FROM leases WHERE plane = 'p1'"))

        # Every message is sent to p0: two thirds of them are for agents others run.
        asyncio.run(send_all(homes[0], "first task for"))
        # Each of p1's ten agents makes one call of 1.5 s: while any is in
        # flight (a machine slow enough spreads them out, so waiting for
        # several at once could miss its only window).
        pending_on_p1 = "SELECT COUNT(*) FROM calls WHERE status = 'pending' AND plane = 'p1'"
        wait_for(lambda: rows(url, pending_on_p1)[0][0] >= 1, 30, "p1 never had calls in flight")
        planes[1].send_signal(signal.SIGKILL)
        planes[1].wait()
        # Read once p1 is dead (a call read before the kill could settle before it),
        # and before any other plane can take its agents (a lease later).
        in_flight = {
            r[0]
            for r in rows(url, "SELECT id FROM calls WHERE status = 'pending' AND plane = 'p1'")
        }
        assert in_flight, "every call p1 had in flight settled as it was killed"
        expired = dict(rows(url, "SELECT agent, expires_ms FROM leases WHERE plane = 'p1'"))

        def moved() -> bool:
            owners = dict(rows(url, "SELECT agent, plane FROM leases"))
            return all(owners.get(a) in ("p0", "p2") for a in AGENTS)

        # Taken once the lease ran out (a tick later): within seconds, and
        # never before, in the database's own clock (a lease taken at T
        # expires at T + LEASE_S).
        wait_for(moved, 5 * LEASE_S, "p1's agents were not taken over")
        taken = dict(rows(url, "SELECT agent, expires_ms FROM leases"))
        early = {a: t for a, t in taken.items() if a in expired and t - LEASE_S * 1000 < expired[a]}
        assert expired and not early, f"taken before p1's lease ran out: {early}"
        asyncio.run(send_all(homes[2], "second task for"))
        asyncio.run(send_all(homes[0], "third task for"))

        def at_rest() -> bool:
            """No call in flight, and what still waits is for agents held at a ceiling."""
            if rows(url, "SELECT COUNT(*) FROM calls WHERE status = 'pending'")[0][0]:
                return False
            waiting = rows(url, "SELECT DISTINCT agent FROM messages WHERE waiting = 1")
            shown = {s.name: s for s in asyncio.run(snapshot(homes[0])).agents}
            return all(shown[a].status == "held" for (a,) in waiting)

        wait_for(at_rest, 120, "the fleet never came to rest")
        time.sleep(2 * LEASE_S)  # any turn a wake started has finished or been held

        calls = rows(url, "SELECT id, agent, status, cost_usd, estimated FROM calls")
        # Every call p1 had in flight is charged at its estimate, once.
        cut = {c[0]: c for c in calls if c[0] in in_flight}
        assert all(c[2] == "interrupted" and c[4] == 1 for c in cut.values()), cut
        # No billed call is lost or counted twice: each response the provider
        # finished sending is one settled call (or, cut by the kill, an
        # interrupted one), and no call is left pending.
        assert not [c for c in calls if c[2] == "pending"]
        settled_calls = [c for c in calls if c[2] == "settled"]
        assert len(settled_calls) + len(cut) >= len(scripted_llm.billed) >= len(settled_calls)
        # The sums kept beside the calls are the calls summed (nothing twice).
        table = {a: Decimal(c) for a, c in rows(url, "SELECT agent, cost_usd FROM spend")}
        summed: dict[str, Decimal] = {}
        for _, agent, status, cost, _ in calls:
            if status != "pending":
                summed[agent] = summed.get(agent, Decimal(0)) + Decimal(cost)
        assert {a: v for a, v in table.items() if v} == {a: v for a, v in summed.items() if v}
        # Ceilings: an agent passes its own by at most one turn (MAX_CALLS
        # calls, each charged at most the largest charge: a cut call is charged
        # its estimate); the fleet its own by at most the one call admitted
        # last under it (every call here costs less than its estimate).
        largest = max(Decimal(c[3]) for c in calls)
        for agent, spent in summed.items():
            assert spent <= AGENT_LIMIT + MAX_CALLS * largest, (
                agent,
                spent,
                rows(url, f"SELECT id, status, cost_usd, plane FROM calls WHERE agent = '{agent}'"),
            )
        fleet = sum(summed.values(), Decimal(0))
        assert FLEET_LIMIT <= fleet <= FLEET_LIMIT + largest, "the fleet's ceiling bound, held"
        # A client of a surviving plane sees all 30, each with its owner.
        shown = asyncio.run(snapshot(homes[2]))
        assert sorted(s.name for s in shown.agents) == AGENTS
        owners = {s.name: s.plane for s in shown.agents}
        assert set(owners.values()) <= {"p0", "p2"} and all(owners.values()), owners
        assert all(owners[a] in ("p0", "p2") for a in victim)
        assert sorted(asyncio.run(tui_rows(homes[2]))) == AGENTS, "the TUI shows all 30"
        assert shown.fleet_limit_usd == FLEET_LIMIT
        assert shown.fleet_spend_today_usd == fleet
    finally:
        for plane in planes:
            if plane.poll() is None:
                plane.send_signal(signal.SIGTERM)
        for plane in planes:
            try:
                plane.wait(timeout=20)
            except subprocess.TimeoutExpired:
                plane.kill()
                plane.wait()
