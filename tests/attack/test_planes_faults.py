"""The fault suite of several planes: three real `plane serve` processes on
one real PostgreSQL, each through a TCP proxy of its own, twenty agents
under a steady load of operator messages, against a scripted provider that
logs every response it bills (the ground truth) and who asked for it (each
plane sends its own key). In turn:

1. `kill`: one plane SIGKILLed mid-turn (restarted after);
2. `stop`: one plane SIGSTOPped mid-turn past its lease, then SIGCONT;
3. `partition`: one plane's link to PostgreSQL stops forwarding, then flows again;
4. `restart`: PostgreSQL restarted (`pg_ctl restart -m fast`);
5. `crash`: PostgreSQL SIGKILLed, then started again;
6. `ceiling`: the fleet's ceiling lowered to just above its spend, under load.

All along, two gateway agents' clients call whichever planes are up, most
calls tagged: a group of four agents and the tag have ceilings of their
own, reached early and held through every fault.

It prints each figure; at the end, with the load stopped and the fleet at
rest: every billed response is one ledger row (settled with the usage it
reported: each response's usage is unique; or, cut by a fault, interrupted
at its estimate), no call left pending, no acknowledged message missing, no
ceiling passed by more than one turn (the fleet, the group and the tag: one
call), no agent with calls from two planes in flight at once (a gateway
agent's calls go through any plane), takeovers within two leases,
recovery within 30 s of the database's return, and the other planes' pace
during a cut at least half their pace before it. No plane writes "The turn
failed inside the plane" into any conversation.

The pace is measured so that a slow or busy machine does not read as a
stall: the messages are sent at a steady rate, each on a thread of its own
(a send that waits does not hold back the next), and the pace is the share
of the messages sent to the agents the other planes ran all along that they
answered in the same window, before the cut and during it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from plane.gateway.keys import Keys
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.protocol import Usage
from tests.support.postgres import Server
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

LEASE_S = 3.0
NAMES = ["p0", "p1", "p2"]
AGENTS = [f"a{n:02}" for n in range(20)]
SMALL = "a19"
"""The agent whose own ceiling binds during the run."""
SMALL_LIMIT = Decimal("0.01")
DELAY_S = 0.4
"""How long each response takes: a call in flight, long enough to be cut."""
SEND_EVERY_S = 0.2
FAILED = "The turn failed inside the plane"
GROUP = ["a15", "a16", "a17", "a18"]
GROUP_LIMIT = Decimal("0.03")
"""Reached in about fifteen seconds of the load, then held."""
GATEWAY = ["g0", "g1"]
TAG = "ticket-1"
TAG_LIMIT = Decimal("0.02")
CALL_EVERY_S = 0.15

CONFIG = (
    """
defaults:
  limitUsd: 5
  provider: scripted
  model: scripted-model
  max_output_tokens: 50
  max_calls_per_turn: 1
fleet:
  limitUsd: 100
providers:
  scripted:
    kind: openai-compatible
    base_url: {base_url}
    api_key_env: SCRIPTED_KEY
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {input: 0, cached_input: 0, output: 100}
"""
    + f"groups:\n  research: {{limitUsd: {GROUP_LIMIT}, agents: [{', '.join(GROUP)}]}}\n"
    + f"tags:\n  {TAG}: {{limitUsd: {TAG_LIMIT}}}\n"
    + "agents:\n"
    + "".join(
        f"  {name}: {{tools: []{', limitUsd: ' + str(SMALL_LIMIT) if name == SMALL else ''}}}\n"
        for name in AGENTS
    )
    + "".join(f"  {name}: {{gateway: {{}}}}\n" for name in GATEWAY)
)
"""A response costs its 20 output tokens at $100 a million: $0.002, never
above its estimate (a turn's counts $0.005 of output alone; a gateway call's,
what its agent's answers really have: the same 20). Its request number, in
input tokens priced at nothing, makes each response's usage unique. (Priced,
those tokens made each call dearer than the one before, beyond any prompt
the gateway counts: its calls in flight at a ceiling each cost a little more
than they reserved, and the day ended more than one call over.)"""


def responder(body: dict[str, Any], serial: int) -> Reply:
    return Reply("done", usage=Usage(input_tokens=serial, output_tokens=20), delay_s=DELAY_S)


class Fleet:
    """The three planes, their proxies, the load, and what was measured."""

    def __init__(self, root: Path, server: Server, llm: ScriptedLLM) -> None:
        self.root, self.server, self.llm = root, server, llm
        self.config = root / "agents.yaml"
        self.config.write_text(CONFIG.replace("{base_url}", llm.base_url))
        self.proxies = {name: TcpProxy(server.port).start() for name in NAMES}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.down: set[str] = set()
        """Planes not to send to now (killed, stopped, cut off)."""
        self.acked: list[tuple[str, int]] = []
        self.acked_at: list[tuple[float, str]] = []
        """When each acknowledged message was acknowledged, and to which agent."""
        self._senders: list[threading.Thread] = []
        self.refused: list[str] = []
        self.figures: list[str] = []
        self._stop = threading.Event()
        self._loader: threading.Thread | None = None
        self._caller: threading.Thread | None = None
        self.keys: dict[str, dict[str, str]] = {}
        self.gateways: dict[str, str] = {}
        self.gateway_answers: dict[int, int] = defaultdict(int)
        self.http = httpx.Client(timeout=20, limits=httpx.Limits(max_keepalive_connections=0))
        """The clients' one HTTP client: a connection a call, as before, without
        a TLS context built a call (~30 ms of CPU each, hundreds of calls)."""

    # planes

    def home(self, name: str) -> Path:
        return self.root / name

    def url(self, name: str) -> str:
        return f"postgresql://plane@127.0.0.1:{self.proxies[name].port}/postgres"

    def start(self, name: str) -> None:
        env = {
            **os.environ,
            "PLANE_HOME": str(self.home(name)),
            "PLANE_STORE": self.url(name),
            "PLANE_NAME": name,
            "PLANE_LEASE_S": str(LEASE_S),
            "SCRIPTED_KEY": name,
        }
        with open(self.root / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "plane",
                    "serve",
                    "--config",
                    str(self.config),
                    "--http",
                    "127.0.0.1:0",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        sock = self.home(name) / "plane.sock"
        wait_for(lambda: sock.exists() and self.status(name) is not None, 60, f"{name} up")
        home = Home(self.home(name))
        if name not in self.keys:
            self.keys[name] = {agent: Keys(home.gateway_keys).make(agent) for agent in GATEWAY}
        self.gateways[name] = home.gateway_url.read_text().strip()
        self.down.discard(name)

    def stop_all(self) -> None:
        self._stop.set()
        for proc in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for proxy in self.proxies.values():
            proxy.stop()
        self.http.close()

    # the database, read directly (not through any proxy)

    def rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self.server.url, connect_timeout=5) as conn:
                    return [tuple(r) for r in conn.execute(sql, params or None).fetchall()]
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, "the database never answered"
                time.sleep(0.2)

    def owners(self) -> dict[str, str]:
        now_ms = time.time() * 1000
        return {a: pl for a, pl, exp in self.rows("SELECT agent, plane, expires_ms FROM leases")
                if exp > now_ms - 1000}  # fmt: skip

    # the sockets

    def ask(self, name: str, request: p.Request[Any], timeout: float = 5) -> Any:
        async def go() -> Any:
            client = await PlaneClient.connect(self.home(name) / "plane.sock")
            try:
                return await client.request(request)
            finally:
                await client.close()

        try:
            return asyncio.run(asyncio.wait_for(go(), timeout))
        except Exception as exc:  # refused, timed out, not running: not acked
            return exc

    def status(self, name: str) -> p.Snapshot | None:
        reply = self.ask(name, p.Status())
        return reply.snapshot if isinstance(reply, p.SnapshotReply) else None

    def send(self, name: str, agent: str, text: str) -> Any:
        reply = self.ask(name, p.Send(agent=agent, text=text))
        if isinstance(reply, p.SendReply):
            self.acked.append((agent, reply.messages[0].id))
            self.acked_at.append((time.monotonic(), agent))
        return reply

    # the load

    def load(self) -> None:
        """The operator's messages, one every `SEND_EVERY_S` to the planes
        up in turn, each sent on a thread of its own: a send that waits (a
        plane waiting on a lock, a busy machine) does not hold back the
        next, so what is offered does not depend on how fast it is taken."""

        def run() -> None:
            n = 0
            while not self._stop.wait(SEND_EVERY_S):
                up = [name for name in NAMES if name not in self.down]
                if not up:
                    continue
                agent = AGENTS[n % len(AGENTS)]
                args = (up[n % len(up)], agent, f"task {n} for {agent}")
                sender = threading.Thread(target=self._send_one, args=args, daemon=True)
                sender.start()
                self._senders = [t for t in self._senders if t.is_alive()] + [sender]
                n += 1

        self._loader = threading.Thread(target=run, name="load", daemon=True)
        self._loader.start()
        self._caller = threading.Thread(target=self._gateway_load, name="calls", daemon=True)
        self._caller.start()

    def _send_one(self, name: str, agent: str, text: str) -> None:
        reply = self.send(name, agent, text)
        if not isinstance(reply, p.SendReply):
            self.refused.append(str(reply))

    def _gateway_load(self) -> None:
        """The gateway agents' clients: calls to whichever plane is up, three
        in four tagged, each on a thread of its own (a client fans out)."""
        n = 0
        while not self._stop.wait(CALL_EVERY_S):
            up = [name for name in NAMES if name not in self.down and name in self.gateways]
            if up:
                args = (up[n % len(up)], GATEWAY[n % 2], n, n % 4 != 0)
                threading.Thread(target=self._call, args=args, daemon=True).start()
            n += 1

    def _call(self, name: str, agent: str, n: int, tagged: bool) -> None:
        headers = {"authorization": f"Bearer {self.keys[name][agent]}"}
        if tagged:
            headers["x-plane-tag"] = TAG
        body = {
            "model": "scripted-model",
            "max_tokens": 30,
            "messages": [{"role": "user", "content": f"call {n} for {agent}"}],
        }
        try:
            answer = self.http.post(
                f"{self.gateways[name]}/v1/chat/completions", json=body, headers=headers
            )
        except httpx.HTTPError:
            return  # a plane killed, stopped or cut off: not answered
        self.gateway_answers[answer.status_code] += 1

    def stop_load(self) -> None:
        self._stop.set()
        for thread in (self._loader, self._caller):
            if thread is not None:
                thread.join(30)
        for sender in self._senders:  # each answered or timed out within seconds
            sender.join(30)

    # what the provider saw

    def figure(self, line: str) -> None:
        print(f"planes fault suite: {line}", flush=True)
        self.figures.append(line)


def _plane_of(received: Any) -> str:
    return str(received.headers.get("Authorization", "")).removeprefix("Bearer ")


def _agent_of(received: Any) -> str:
    text = str(received.body["messages"][-1]["content"])
    return text.rsplit(" for ", 1)[-1].split()[0]


def wait_for(what, within: float, message: str | Callable[[], str]):
    deadline = time.monotonic() + within
    while True:
        found = what()
        if found:
            return found
        assert time.monotonic() < deadline, message if isinstance(message, str) else message()
        time.sleep(0.1)


def left_pending(fleet: Fleet) -> str:
    """Which calls were left pending, by whom, and what each plane logged."""
    rows = fleet.rows(
        "SELECT id, agent, plane, at, tag FROM calls WHERE status = 'pending' ORDER BY id"
    )
    logs = "".join(
        f"\n--- {name}.log (its end)\n"
        + "\n".join((fleet.root / f"{name}.log").read_text(errors="replace").splitlines()[-40:])
        for name in NAMES
    )
    return f"calls were left pending: {rows}; leases {fleet.owners()}{logs}"


def worker_failures(fleet: Fleet) -> str:
    """What each plane logged of a turn that failed inside it (the traceback
    its worker wrote to plane.log, with the lines before it)."""
    found = []
    for name in NAMES:
        lines = Home(fleet.home(name)).log.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            if " worker for " in line:
                found.append(
                    f"\n--- {name}'s plane.log\n" + "\n".join(lines[max(0, n - 5) : n + 40])
                )
    return "".join(found)


def pending_on(fleet: Fleet, name: str) -> bool:
    return bool(fleet.rows("SELECT 1 FROM calls WHERE status = 'pending' AND plane = %s", name))


def takeover(fleet: Fleet, victim: str, started: float) -> float:
    """Seconds from `started` until no live lease is held by `victim`."""
    held = set(a for a, pl in fleet.owners().items() if pl == victim)
    wait_for(
        lambda: not (set(a for a, pl in fleet.owners().items() if pl == victim) & held),
        4 * LEASE_S + 10,
        f"{victim}'s agents were never taken over",
    )
    return time.monotonic() - started


def recovered(fleet: Fleet, back_at: float, phase: str) -> float:
    """Seconds from the database's return until a message sent to each
    plane, for an agent it runs, is answered."""
    probes: list[tuple[str, int]] = []
    deadline = back_at + 45
    for name in NAMES:
        while True:
            mine = [a for a, pl in fleet.owners().items() if pl == name and a not in HELD]
            if mine:
                reply = fleet.send(name, mine[0], f"probe after {phase} for {mine[0]}")
                if isinstance(reply, p.SendReply):
                    probes.append((mine[0], reply.messages[0].id))
                    break
            assert time.monotonic() < deadline, f"{name} never took a message after {phase}"
            time.sleep(0.2)

    def answered() -> bool:
        ids = [i for _, i in probes]
        rows = fleet.rows("SELECT COUNT(*) FROM messages WHERE id = ANY(%s) AND waiting = 0", ids)
        return rows[0][0] == len(ids)

    wait_for(answered, 45, f"the planes never answered after {phase}")
    return time.monotonic() - back_at


HELD = {SMALL, *GROUP}
"""Agents held by their ceilings from early on: they answer nothing more."""


def kept(fleet: Fleet, others: list[str], owners: list[dict[str, str]], since: float) -> set[str]:
    """The agents one of `others` ran all along: its own in every snapshot of
    the leases in `owners`, and every call for it since `since` its (none
    taken over, handed back or held by a ceiling)."""
    first = owners[0]
    mine = {a for a, pl in first.items() if pl in others and a not in HELD}
    mine = {a for a in mine if all(seen.get(a) == first[a] for seen in owners)}
    for received in fleet.llm.received:
        agent = _agent_of(received)
        if received.at >= since and agent in mine and _plane_of(received) != first[agent]:
            mine.discard(agent)
    return mine


def pace(fleet: Fleet, agents: set[str], window: tuple[float, float]) -> tuple[int, int]:
    """Of the messages acknowledged in `window` to `agents`, and the calls
    billed for them in it: (calls, messages). As many calls as messages is
    the plane keeping up with what it is sent, however fast that is."""
    since, until = window
    by_serial = {n + 1: r for n, r in enumerate(fleet.llm.received)}
    calls = sum(
        1
        for bill in fleet.llm.billed
        if since <= bill.at < until and _agent_of(by_serial[bill.serial]) in agents
    )
    sent = sum(1 for at, agent in list(fleet.acked_at) if since <= at < until and agent in agents)
    return calls, sent


def longest_silence(fleet: Fleet, others: list[str], window: tuple[float, float]) -> float:
    """The longest time in `window` in which none of `others` had a call billed."""
    by_serial = {n + 1: r for n, r in enumerate(fleet.llm.received)}
    ats = sorted(
        bill.at
        for bill in fleet.llm.billed
        if window[0] <= bill.at < window[1] and _plane_of(by_serial[bill.serial]) in others
    )
    edges = [window[0], *ats, window[1]]
    return max(b - a for a, b in itertools.pairwise(edges))


def test_three_planes_ride_out_kills_pauses_partitions_and_the_database(tmp_path, postgres_cluster):
    llm = ScriptedLLM().start()
    llm.responder = responder
    fleet = Fleet(tmp_path, postgres_cluster, llm)
    try:
        for name in NAMES:
            fleet.start(name)
        wait_for(lambda: len(set(fleet.owners().values())) == 3, 6 * LEASE_S, "never shared out")
        fleet.load()
        time.sleep(3 * LEASE_S)

        # 1. A plane SIGKILLed mid-turn.
        wait_for(lambda: pending_on(fleet, "p1"), 20, "p1 never had a call in flight")
        fleet.down.add("p1")
        fleet.procs["p1"].send_signal(signal.SIGKILL)
        fleet.procs["p1"].wait()
        taken = takeover(fleet, "p1", time.monotonic())
        fleet.figure(f"kill: p1's agents taken over in {taken:.1f} s (lease {LEASE_S:.0f} s)")
        assert taken <= 2 * LEASE_S
        fleet.start("p1")

        # 2. A plane SIGSTOPped mid-turn, past its lease, then SIGCONT.
        wait_for(lambda: pending_on(fleet, "p2"), 20, "p2 never had a call in flight")
        fleet.down.add("p2")
        stopped = time.monotonic()
        os.kill(fleet.procs["p2"].pid, signal.SIGSTOP)
        taken = takeover(fleet, "p2", stopped)
        time.sleep(max(0.0, stopped + 2.5 * LEASE_S - time.monotonic()))
        os.kill(fleet.procs["p2"].pid, signal.SIGCONT)
        fleet.figure(f"stop: p2's agents taken over in {taken:.1f} s; p2 resumed after "
                     f"{time.monotonic() - stopped:.1f} s")  # fmt: skip
        assert taken <= 2 * LEASE_S
        time.sleep(LEASE_S)
        failed = fleet.rows("SELECT agent FROM messages WHERE text LIKE %s", f"{FAILED}%")
        assert not failed, f"p2, resumed, wrote false notices into {failed}"
        fleet.down.discard("p2")

        # 3. One plane's link to PostgreSQL stops forwarding. The pace is
        # measured from a lease after p2's return (what waited on it answered).
        time.sleep(LEASE_S)
        before_start, owned_before = time.monotonic(), fleet.owners()
        time.sleep(3 * LEASE_S)
        cut, owned_at_cut = time.monotonic(), fleet.owners()
        fleet.down.add("p0")
        fleet.proxies["p0"].stall()
        taken = takeover(fleet, "p0", cut)
        time.sleep(max(0.0, cut + 3 * LEASE_S - time.monotonic()))
        ended, owned_after = time.monotonic(), fleet.owners()
        fleet.proxies["p0"].resume()
        others = ["p1", "p2"]
        theirs = kept(fleet, others, [owned_before, owned_at_cut, owned_after], before_start)
        before = pace(fleet, theirs, (before_start, cut))
        during = pace(fleet, theirs, (cut, ended))
        silent = longest_silence(fleet, others, (cut, ended))
        fleet.figure(f"partition: p0's agents taken over in {taken:.1f} s; the others' "
                     f"{len(theirs)} agents they ran all along answered {before[0]} calls to "
                     f"{before[1]} messages before, {during[0]} to {during[1]} during; the "
                     f"others' longest silence {silent:.1f} s")  # fmt: skip
        assert taken <= 2 * LEASE_S
        assert theirs and before[1] and during[1], "no agent the others ran all along was sent to"
        assert during[0] / during[1] >= before[0] / before[1] / 2
        wait_for(lambda: (s := fleet.status("p0")) is not None
                 and s.store_unreachable_since is None, 30, "p0 never came back")  # fmt: skip
        fleet.down.discard("p0")
        time.sleep(LEASE_S)

        # 4. PostgreSQL restarted under load.
        postgres_cluster.restart()
        back = time.monotonic()
        took = recovered(fleet, back, "the restart")
        fleet.figure(f"restart: every plane answered again {took:.1f} s after PostgreSQL's return")
        assert took <= 30

        # 5. PostgreSQL SIGKILLed; the planes say so; started again.
        postgres_cluster.kill()
        killed_at = time.monotonic()

        def all_say_unreachable() -> bool:
            return all(
                (s := fleet.status(n)) is not None and s.store_unreachable_since is not None
                for n in NAMES
            )

        wait_for(all_say_unreachable, 20, "the planes never said the store is unreachable")
        said = subprocess.run(
            [sys.executable, "-m", "plane", "status"],
            env={**os.environ, "PLANE_HOME": str(fleet.home("p1"))},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert "The store is unreachable since" in said.stdout, said
        refused = fleet.send("p1", "a00", "sent while the store is away for a00")
        assert "the message was not kept" in str(refused), refused
        told = time.monotonic() - killed_at
        fleet.figure(
            f"crash: every plane said the store is unreachable {told:.1f} s after the kill"
        )
        postgres_cluster.up()
        back = time.monotonic()
        took = recovered(fleet, back, "the crash")
        fleet.figure(f"crash: every plane answered again {took:.1f} s after PostgreSQL's return")
        assert took <= 30

        # 6. The fleet's ceiling lowered under load, just above its spend.
        spent = sum(Decimal(c) for (c,) in fleet.rows(
            "SELECT cost_usd FROM spend UNION ALL SELECT cost_usd FROM calls"
            " WHERE status = 'pending'"))  # fmt: skip
        ceiling = (spent + Decimal("0.01")).quantize(Decimal("0.01"))
        fleet.send("p2", "a00", f"/limit fleet {ceiling}")
        time.sleep(4 * LEASE_S)
        fleet.stop_load()

        # At rest: nothing in flight, what waits is held.
        def at_rest() -> bool:
            return not fleet.rows("SELECT 1 FROM calls WHERE status = 'pending'")

        wait_for(at_rest, 60, lambda: left_pending(fleet))
        time.sleep(2 * LEASE_S)
        check(fleet, ceiling)
        print("\n".join(["", "planes fault suite:", *fleet.figures]), flush=True)
    finally:
        fleet.stop_all()
        llm.stop()


def check(fleet: Fleet, fleet_ceiling: Decimal) -> None:
    calls = fleet.rows(
        "SELECT id, agent, status, cost_usd, input_tokens, plane, day FROM calls ORDER BY id"
    )
    billed = fleet.llm.billed
    received = fleet.llm.received
    # Every billed response is one ledger row: settled with its own usage
    # (the request's number), or interrupted at an estimate; none twice.
    settled = [c for c in calls if c[2] == "settled"]
    by_serial = defaultdict(list)
    for c in settled:
        by_serial[c[4]].append(c)
    twice = {s: rows for s, rows in by_serial.items() if len(rows) > 1}
    assert not twice, f"responses counted twice: {twice}"
    serials = {b.serial for b in billed}
    unbilled = [c for c in settled if c[4] not in serials]
    assert not unbilled, f"settled, never billed: {unbilled}"
    interrupted = [c for c in calls if c[2] == "interrupted"]
    left = [b for b in billed if b.serial not in by_serial]
    assert len(left) <= len(interrupted), (
        f"billed and not counted: {len(left)} > {len(interrupted)}"
    )
    assert not [c for c in calls if c[2] == "pending"]
    fleet.figure(
        f"{len(billed)} billed responses: {len(billed) - len(left)} settled, {len(left)} "
        f"counted at estimate ({len(interrupted)} interrupted rows); 0 twice"
    )
    # No acknowledged message missing.
    ids = [i for _, i in fleet.acked]
    kept = {i for (i,) in fleet.rows("SELECT id FROM messages WHERE id = ANY(%s)", ids)}
    missing = [i for i in ids if i not in kept]
    assert not missing, f"acknowledged and lost: {missing}"
    fleet.figure(f"{len(ids)} acknowledged messages, 0 missing; {len(fleet.refused)} sends refused")
    # No plane said a turn failed inside it (a stale plane's false notice).
    failed = fleet.rows("SELECT agent, at FROM messages WHERE text LIKE %s", f"{FAILED}%")
    assert not failed, f"false notices: {failed}{worker_failures(fleet)}"
    # Ceilings: an agent's by at most one turn (one call here), the fleet's,
    # the group's and the tag's by one call.
    largest = max(Decimal(c[3]) for c in calls)
    grouped = sum((Decimal(c[3]) for c in calls if c[1] in GROUP and c[2] != "failed"), Decimal(0))
    assert GROUP_LIMIT <= grouped <= GROUP_LIMIT + largest, (grouped, GROUP_LIMIT)
    tagged = sum(
        (Decimal(cost) for (cost,) in fleet.rows(
            "SELECT cost_usd FROM calls WHERE tag = %s AND status <> 'failed'", TAG)),
        Decimal(0),
    )  # fmt: skip
    # A gateway call whose likely cost does not fit what is left is refused
    # before it is sent: the tag's day may also end a call short of it.
    assert TAG_LIMIT - largest <= tagged <= TAG_LIMIT + largest, (tagged, TAG_LIMIT)
    answers = dict(fleet.gateway_answers)
    fleet.figure(
        f"group: research spent ${grouped} of ${GROUP_LIMIT}; tag: {TAG} ${tagged} of "
        f"${TAG_LIMIT}; gateway calls answered {answers}"
    )
    small = sum((Decimal(c[3]) for c in calls if c[1] == SMALL and c[2] != "failed"), Decimal(0))
    assert small <= SMALL_LIMIT + largest, (small, SMALL_LIMIT)
    total = sum((Decimal(c[3]) for c in calls if c[2] != "failed"), Decimal(0))
    assert total <= fleet_ceiling + largest, (total, fleet_ceiling)
    # Admission counts the calls in flight at their estimates, above their
    # costs: the day may end short of the ceiling, with agents told why.
    held = fleet.rows(
        "SELECT COUNT(*) FROM messages WHERE kind = 'plane' AND text LIKE %s",
        f"%its ${fleet_ceiling} daily ceiling; it answers at 00:00 UTC, in %, or when the fleet"
        " limit is raised.",
    )[0][0]
    assert total >= fleet_ceiling or held, "the lowered ceiling never bound: the phase did nothing"
    assert small >= SMALL_LIMIT, f"{SMALL}'s ceiling was never reached"
    fleet.figure(
        f"ceilings: {SMALL} spent ${small} of ${SMALL_LIMIT}; the fleet ${total} of "
        f"${fleet_ceiling} (a call at most ${largest})"
    )
    # No agent with calls from two planes in flight at once (as the provider saw them).
    ends = {b.serial: b.at for b in billed}
    spans: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for n, r in enumerate(received, start=1):
        spans[_agent_of(r)].append((r.at, ends.get(n, r.at + DELAY_S), _plane_of(r)))
    both = []
    for agent, each in spans.items():
        if agent in GATEWAY:  # a gateway agent's client calls any plane: no lease
            continue
        each.sort()
        for (_, e1, p1), (s2, _, p2) in itertools.pairwise(each):
            if p1 != p2 and s2 < e1:
                both.append((agent, p1, p2, round(e1 - s2, 3)))
    assert not both, f"calls from two planes in flight at once: {both}"
    fleet.figure(f"{len(received)} calls, none from two planes in flight at once for one agent")
