"""The kill suite: the real plane in its own process, SIGKILLed at random
moments of its turns, fifty times over, against a scripted provider with
faults on (500s, cut streams, slow answers) that logs every response it sent
to the last byte — what a provider bills.

After each restart, and at the end:

- every billed response is in the ledger exactly once: settled with the
  usage it reported (each response's usage is unique, so a row names the
  response it came from), or — the one call each agent had in flight when
  the plane died, or a cut stream — counted at an estimate; no call of a
  dead plane is left pending;
- no message the plane acknowledged (`send` got an id for) is missing;
- `PRAGMA integrity_check` is ok;
- and at the end every operator message is answered, each call counted at
  estimate is said in its agent's conversation, and no agent's spend passed
  its ceiling by more than one turn (one agent's ceiling binds on purpose).

A failure says its seed; `PLANE_KILL_SEED=<seed>` replays the same faults and
kill moments (the plane's own timing still varies).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import pytest

from plane.errors import NotRunning
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.protocol import Usage
from tests.support.scripted_llm import Billed, CutStream, Fault, Reply, ScriptedLLM, Step

KILLS = int(os.environ.get("PLANE_KILLS") or 50)
MAX_CALLS = 4
UNIQUE = 1000
"""A response's input tokens are UNIQUE + its request number: one row, one response."""
CEILINGS = {"alpha": Decimal(5), "beta": Decimal("0.08")}
MODELS = {"alpha": "model-a", "beta": "model-b"}
CUT_NOTICE = "The plane stopped during this agent's turn; "
QUIET = 200

CONFIG = """
defaults:
  limitUsd: 5
  provider: scripted
  model: model-a
  max_calls_per_turn: 4
  max_output_tokens: 64
providers:
  scripted:
    kind: openai-compatible
    base_url: {base_url}
    models: [model-a, model-b]
    max_retries: 1
    timeout_s: 30
pricing:
  model-a: {input: 10, output: 10}
  model-b: {input: 10, output: 10}
agents:
  alpha:
    tools: [schedule_turn]
  beta:
    model: model-b
    limitUsd: 0.08
    tools: [schedule_turn]
""" + "".join(f"  quiet-{n}: {{}}\n" for n in range(QUIET))
"""$10 per 1M tokens: a call costs about a cent, so beta's ceiling binds
after a handful of calls and the overshoot check has something to check.
Among quiet agents no message reaches: a start looks only at the agents
something waits for, and the restarts must still find alpha's and beta's."""


class Model:
    """The scripted model: each answer decided from the request and its
    number, seeded, so a seed replays the same faults wherever they land."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.asked = threading.Event()
        """Set by each request: a turn is in flight."""

    def __call__(self, body: dict[str, Any], serial: int) -> Step:
        self.asked.set()
        rng = random.Random(f"{self.seed}:{serial}")
        roll = rng.random()
        if roll < 0.10:
            return Fault(500, retry_after=0.05)
        if roll < 0.18:
            return CutStream("cut short")
        delay = rng.uniform(0.3, 1.0) if roll < 0.40 else rng.uniform(0, 0.1)
        usage = Usage(input_tokens=UNIQUE + serial, output_tokens=3)
        last = body["messages"][-1]
        asked = last["role"] == "user" and "[a turn you booked" not in str(last["content"])
        if asked and rng.random() < 0.3:
            booking = ("schedule_turn", {"in_seconds": 1, "note": f"follow up {serial}"})
            return Reply("", usage, (booking,), delay)
        return Reply(f"answer {serial}", usage, (), delay)


@dataclass
class Epoch:
    """One plane's life: the requests it sent and the ledger rows it wrote."""

    serials: range
    rows: range


class Run:
    def __init__(self, tmp_path: Path, llm: ScriptedLLM, seed: int) -> None:
        self.home = tmp_path / "home"
        self.config = tmp_path / "agents.yaml"
        self.config.write_text(CONFIG.replace("{base_url}", llm.base_url))
        self.log = tmp_path / "planes.log"
        self.env = {**os.environ, "PLANE_HOME": str(self.home)}
        self.llm = llm
        self.model = Model(seed)
        llm.responder = self.model
        self.rng = random.Random(seed)
        self.acked: dict[int, tuple[str, str]] = {}
        self.epochs: list[Epoch] = []
        self.forks: asyncio.subprocess.Process | None = None
        self.plane: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.forked = False
        """A forked plane runs (not yet killed and reaped)."""
        self._serial = 0
        self._row = 0
        self._sent = 0

    # the plane

    async def start(self, *, command: bool = False) -> PlaneClient:
        """A plane forked from `fork_planes.py`, or with `command` the
        `python -m plane serve` a user types; once it answers."""
        self.model.asked.clear()
        if command:
            with _appending(self.log) as log:
                self.plane = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "plane",
                    "serve",
                    "--config",
                    str(self.config),
                    env=self.env,
                    stdout=log,
                    stderr=log,
                )
            self.pid = self.plane.pid
        else:
            self.pid = int(await self._forks("serve"))
            self.forked = True
        deadline = time.monotonic() + 60
        while True:
            try:
                return await PlaneClient.connect(self.home / "plane.sock")
            except (NotRunning, OSError):
                assert time.monotonic() < deadline, self.log.read_text()[-3000:]
                await asyncio.sleep(0.03)

    async def kill(self, client: PlaneClient, *, gently: bool = False) -> None:
        await client.close()
        sig = signal.SIGTERM if gently else signal.SIGKILL
        if self.plane is not None:
            self.plane.send_signal(sig)
            await asyncio.wait_for(self.plane.wait(), 30)
            self.plane = None
        else:
            await self._forks(f"kill {self.pid} {sig.value}")
            self.forked = False
        await asyncio.sleep(0.05)  # what the dead plane sent has been read
        serials = len(self.llm.received)
        with self.db() as db:
            rows = db.execute("SELECT COALESCE(MAX(id), 0) FROM calls").fetchone()[0]
        self.epochs.append(
            Epoch(range(self._serial + 1, serials + 1), range(self._row + 1, rows + 1))
        )
        self._serial, self._row = serials, rows

    async def _forks(self, command: str) -> str:
        if self.forks is None:
            self.forks = await asyncio.create_subprocess_exec(
                sys.executable,
                str(Path(__file__).with_name("fork_planes.py")),
                str(self.config),
                str(self.log),
                env=self.env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
        assert self.forks.stdin is not None and self.forks.stdout is not None
        self.forks.stdin.write(f"{command}\n".encode())
        await self.forks.stdin.drain()
        answer = await asyncio.wait_for(self.forks.stdout.readline(), 60)
        assert answer, self.log.read_text()[-3000:]
        return answer.decode().strip()

    async def close(self) -> None:
        if self.plane is not None and self.plane.returncode is None:
            self.plane.kill()
            await self.plane.wait()
        if self.forks is not None:
            if self.forked:  # a plane a failed check left running
                await self._forks(f"kill {self.pid} {signal.SIGKILL.value}")
            assert self.forks.stdin is not None
            self.forks.stdin.close()
            await self.forks.wait()

    @contextlib.contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        """The plane's database, read only: reading it never checkpoints the
        WAL a killed plane left, so the next plane recovers it itself."""
        db = sqlite3.connect(f"file:{self.home / 'plane.db'}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            yield db
        finally:
            db.close()

    # what the operator does

    async def send(self, client: PlaneClient, agent: str, text: str) -> None:
        reply = await client.request(p.Send(agent=agent, text=text))
        assert isinstance(reply, p.SendReply)
        [stored] = [m for m in reply.messages if m.kind == "operator"]
        self.acked[stored.id] = (agent, text)

    async def work(self, client: PlaneClient) -> None:
        """A message or two, then a kill at a random moment of a turn. The
        first goes to alpha, whose ceiling never binds: a turn is sure to start."""
        for n in range(self.rng.randint(1, 2)):
            self._sent += 1
            agent = "beta" if n and self.rng.random() < 0.6 else "alpha"
            await self.send(client, agent, f"message {self._sent}")
        await asyncio.to_thread(self.model.asked.wait, 10)  # a turn is in flight
        await asyncio.sleep(self.rng.uniform(0, 0.9))

    # what must hold

    def check(self) -> None:
        """After a restart: the plane that died left nothing behind."""
        with self.db() as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            self._check_ledger(db, self.epochs[-1])
            stored = {
                row["id"]: (row["agent"], row["text"])
                for row in db.execute(
                    "SELECT id, agent, text FROM messages WHERE kind = 'operator'"
                )
            }
        missing = {i: m for i, m in self.acked.items() if stored.get(i) != m}
        assert not missing, f"acknowledged and lost: {missing}"

    def _check_ledger(self, db: sqlite3.Connection, epoch: Epoch) -> None:
        rows = db.execute(
            "SELECT * FROM calls WHERE id BETWEEN ? AND ?", (epoch.rows.start, epoch.rows.stop - 1)
        ).fetchall()
        billed = [b for b in self.llm.billed if b.serial in epoch.serials]
        for agent, model in MODELS.items():
            mine = [r for r in rows if r["agent"] == agent]
            assert all(r["model"] == model for r in mine)
            bills = {b.serial: b for b in billed if b.model == model}
            _exactly_once(agent, mine, bills)

    def check_end(self) -> None:
        with self.db() as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert (
                db.execute("SELECT COUNT(*) FROM calls WHERE status = 'pending'").fetchone()[0] == 0
            )
            messages = db.execute("SELECT * FROM messages ORDER BY id").fetchall()
            calls = db.execute("SELECT * FROM calls ORDER BY id").fetchall()
        for agent in MODELS:
            said = [m for m in messages if m["agent"] == agent]
            unanswered = [m["text"] for m in said if m["waiting"]]
            assert not unanswered, f"{agent} never answered {unanswered}"
            last_question = max(
                (i for i, m in enumerate(said) if m["kind"] == "operator"), default=-1
            )
            assert any(m["kind"] in ("agent", "plane") for m in said[last_question + 1 :])
            # Each call counted at estimate is said, with what it counted.
            cut = [
                r["cost_usd"] for r in calls if r["agent"] == agent and r["status"] == "interrupted"
            ]
            told = [m["cost_usd"] for m in said if m["text"].startswith(CUT_NOTICE)]
            assert told == cut, f"{agent}: counted at estimate {cut}, said {told}"


def _exactly_once(agent: str, rows: list[sqlite3.Row], bills: dict[int, Billed]) -> None:
    """One plane's calls of one agent against the responses it was billed for."""
    assert not [r["id"] for r in rows if r["status"] == "pending"], "left pending"
    exact = [r for r in rows if r["status"] == "settled" and not r["estimated"]]
    estimated = [r for r in rows if r["status"] == "settled" and r["estimated"]]
    interrupted = [r for r in rows if r["status"] == "interrupted"]
    named = [r["input_tokens"] - UNIQUE for r in exact]
    assert len(set(named)) == len(named), f"{agent}: a response counted twice"
    for row, serial in zip(exact, named, strict=True):
        bill = bills.get(serial)
        assert bill is not None and not bill.cut, f"{agent}: row {row['id']} was never billed"
        assert (row["input_tokens"], row["output_tokens"]) == (
            bill.usage.input_tokens,
            bill.usage.output_tokens,
        )
    left = [b for b in bills.values() if b.serial not in named]
    assert len(interrupted) <= 1, f"{agent}: one call in flight at a time"
    assert all(r["estimated"] and Decimal(r["cost_usd"]) > 0 for r in interrupted)
    assert sum(not b.cut for b in left) <= len(interrupted), f"{agent}: billed, not counted"
    assert len(left) <= len(estimated) + len(interrupted), f"{agent}: billed, not counted"
    assert len(estimated) <= sum(b.cut for b in bills.values()), f"{agent}: an estimate unbilled"


@contextlib.contextmanager
def _appending(path: Path) -> Iterator[IO[bytes]]:
    with open(path, "ab") as log:
        yield log


def _spend_by_day(calls: list[sqlite3.Row]) -> dict[tuple[str, str], Decimal]:
    spent: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in calls:
        spent[row["agent"], row["day"]] += Decimal(row["cost_usd"])
    return spent


@pytest.mark.slow
@pytest.mark.timeout(400)
async def test_fifty_sigkills_lose_nothing(tmp_path, scripted_llm, capsys):
    seed = int(os.environ.get("PLANE_KILL_SEED") or random.randrange(1 << 32))
    print(f"kill suite: seed {seed} (PLANE_KILL_SEED={seed} replays it)")
    run = Run(tmp_path, scripted_llm, seed)
    try:
        await _attack(run)
    except BaseException:
        print(f"kill suite failed with seed {seed}; the planes' log: {run.log}")
        raise
    finally:
        await run.close()
    figures = (
        f"kill suite: {KILLS} SIGKILLs survived, {len(scripted_llm.billed)} billed responses "
        f"checked, {len(run.acked)} acknowledged messages checked (seed {seed})"
    )
    with capsys.disabled():
        print(f"\n{figures}")


async def _until_held(run: Run, client: PlaneClient, agent: str) -> None:
    """Messages to `agent` until it is held at its ceiling: whether the kills
    left it there depends on where they fell (beta gets a message in about
    a third of them), and the overshoot check wants a ceiling that bound."""
    deadline = time.monotonic() + 60
    while True:
        reply = await client.request(p.Status())
        assert isinstance(reply, p.SnapshotReply)
        [state] = [a for a in reply.snapshot.agents if a.name == agent]
        if state.status == "held":
            return
        assert time.monotonic() < deadline, f"{agent} never reached its ceiling"
        if state.status == "idle" and not state.waiting:
            run._sent += 1
            await run.send(client, agent, f"message {run._sent}")
        await asyncio.sleep(0.1)


async def _attack(run: Run) -> None:
    for _ in range(KILLS):
        client = await run.start()
        if run.epochs:
            run.check()
        await run.work(client)
        await run.kill(client)

    client = await run.start(command=True)
    run.check()
    await _until_held(run, client, "beta")
    with run.db() as db:
        calls = db.execute("SELECT * FROM calls").fetchall()
    top = {
        a: max((Decimal(r["cost_usd"]) for r in calls if r["agent"] == a), default=Decimal(0))
        for a in MODELS
    }
    for (agent, day), spent in _spend_by_day(calls).items():
        one_turn = MAX_CALLS * top[agent]
        assert spent <= CEILINGS[agent] + one_turn, (agent, day, spent)
    assert any(s >= CEILINGS["beta"] for (a, _), s in _spend_by_day(calls).items() if a == "beta")

    # Everything that waited is answered once beta may spend again.
    lifted = await client.request(p.Send(agent="beta", text="/limit off"))
    assert isinstance(lifted, p.SendReply)
    deadline = time.monotonic() + 60
    while True:
        with run.db() as db:
            left = db.execute(
                "SELECT (SELECT COUNT(*) FROM messages WHERE waiting = 1)"
                " + (SELECT COUNT(*) FROM bookings WHERE done = 0)"
                " + (SELECT COUNT(*) FROM calls WHERE status = 'pending')"
            ).fetchone()[0]
        if not left:
            break
        assert time.monotonic() < deadline, f"{left} still waiting"
        await asyncio.sleep(0.1)
    await run.kill(client, gently=True)
    with run.db() as db:
        run._check_ledger(db, run.epochs[-1])
    run.check_end()
