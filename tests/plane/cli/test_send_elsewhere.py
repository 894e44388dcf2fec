"""`plane send --wait` through a plane of a fleet that does not run the
agent: two planes in this process on one real PostgreSQL, the command run
by its `main` against the plane that does not hold the agent's lease. Its
turn reaches that plane's clients as lines and a row at its renewals, with
no turn events: the command prints the answer and ends with it, as through
the plane that runs the agent. Before, it waited out its whole timeout and
exited 124, the answer already in the conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import psycopg
import pytest

from plane.cli.clients import kept_held
from plane.daemon import fleet
from plane.wire.protocol import Usage
from tests.support.command import Ran, plane_cli_async
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_members import a_and_b
from tests.support.looping import CENT, READ, held

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
CONFIG = scripted_config("  demo: {}\n", limit_usd="5")


async def test_send_wait_through_a_plane_that_does_not_run_the_agent_prints_its_answer(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (a, b):
        assert "demo" in (a.services.ownership.mine or ())
        assert "demo" not in (b.services.ownership.mine or ())
        scripted_llm.reply("Hello from plane a.", usage=Usage(input_tokens=100, output_tokens=10))
        sent = await plane_cli_async(
            b.home.root, "send", "demo", "hello", "--wait", "--timeout", str(6 * LEASE_S)
        )
        assert (sent.returncode, sent.stderr) == (0, ""), sent.stdout
        assert sent.stdout.splitlines() == ["Hello from plane a.", "  $0.12 · 100 in · 10 out"]


LISTING = 'for i in $(seq 1 300); do echo "Setting up libfoo$i (1.2.$i) ..."; done'
"""A command whose output the plane compresses: the turn records what that saved."""

WAITING_ON_SAVINGS = (
    "SELECT COUNT(*) FROM pg_locks WHERE relation = 'savings'::regclass AND NOT granted"
)


async def saving_waits(url: str) -> None:
    """Until a transaction waits to write into `savings`, which another holds."""
    with psycopg.connect(url, autocommit=True) as watcher:
        async with asyncio.timeout(10 * LEASE_S):
            while watcher.execute(WAITING_ON_SAVINGS).fetchone() == (0,):  # noqa: ASYNC110 - the store
                await asyncio.sleep(0.02)


async def renewals(plane: RunningPlane, times: int, unless: asyncio.Task[Ran]) -> None:
    """Until `plane` renewed its leases `times` times (each renewal moves
    `live_until`), each renewal then telling its clients what the others
    wrote; or until `unless` is done."""
    ownership = plane.services.ownership
    last, seen = ownership.live_until, 0
    async with asyncio.timeout(10 * LEASE_S):
        while seen < times and not unless.done():
            await asyncio.sleep(0.02)
            if ownership.live_until != last:
                last, seen = ownership.live_until, seen + 1


async def test_send_wait_through_another_plane_ends_with_the_turns_cost_line_however_late(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """The plane that runs the agent is slow to end its turn: what
    compression saved is written before the cost line, and another session
    holds its table meanwhile. The other plane renews twice before it is
    let go: the command still ends with the turn's cost line. Before, the
    answer and its question answered were written in one commit, the cost
    line in a later one: a renewal between the two showed the row with
    nothing waiting, and the command ended without the cost line (and
    without its `failed` mark, so a failed turn could exit 0)."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (_, b):
        scripted_llm.reply("", tool_calls=[("run_command", {"command": LISTING})], usage=CENT)
        scripted_llm.reply("Installed.", usage=CENT)
        with psycopg.connect(postgres_url) as holding:
            holding.execute("LOCK TABLE savings IN EXCLUSIVE MODE")
            sending = asyncio.create_task(
                plane_cli_async(
                    b.home.root, "send", "demo", "install", "--wait", "--timeout", str(6 * LEASE_S)
                )
            )
            await saving_waits(postgres_url)
            await renewals(b, 2, unless=sending)
            holding.rollback()
        sent = await sending
    assert (sent.returncode, sent.stderr) == (0, ""), sent.stdout
    *_, answer, cost = sent.stdout.splitlines()
    assert answer == "Installed.", sent.stdout
    assert cost.startswith("  $0.02 · ") and "compression saved" in cost, sent.stdout


async def test_send_wait_through_another_plane_to_an_agent_its_turn_holds_exits_kept(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """The loop guard holds it in that turn: kept, not answered (75), and
    said why: with the guard's sentence, as through the plane that runs it,
    or, where this plane's renewal showed the held row before that sentence
    reached it, with where to read it (`plane log`)."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (a, b):
        workspace = a.services.roster.get("demo").workspace
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "a.txt").write_text("the same every time\n")
        for _ in range(5):
            scripted_llm.reply("", tool_calls=[READ], usage=CENT)
        sent = await plane_cli_async(
            b.home.root, "send", "demo", "look", "--wait", "--timeout", str(6 * LEASE_S)
        )
        assert (sent.returncode, sent.stderr) == (75, ""), sent.stdout
        guards = held("demo").replace("$0.09", "$0.05")
        assert sent.stdout.splitlines()[-1] in (guards, kept_held("demo")), sent.stdout


async def test_send_wait_through_another_plane_to_a_turn_that_fails_exits_as_on_its_own_plane(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """The provider answers with an error: through the plane that runs the
    agent the command prints the turn's notice and exits 1; through the
    other plane, the same. Before, that one exited 0, as if answered."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (a, b):
        sent = []
        for plane in (a, b):
            scripted_llm.fault(503)
            sent.append(
                await plane_cli_async(
                    plane.home.root, "send", "demo", "hi", "--wait", "--timeout", str(6 * LEASE_S)
                )
            )
        here, there = sent
        assert (here.returncode, here.stderr) == (1, ""), here.stdout
        assert here.stdout.startswith("The turn stopped: "), here.stdout
        assert (there.returncode, there.stderr, there.stdout) == (1, "", here.stdout)


async def sent_through_each(
    a: RunningPlane, b: RunningPlane, script: Callable[[], object]
) -> tuple[Ran, Ran]:
    """`send --wait` through the plane that runs demo, then through the
    other, each turn scripted by `script()` first."""
    sent = []
    for plane in (a, b):
        script()
        sent.append(
            await plane_cli_async(
                plane.home.root, "send", "demo", "hi", "--wait", "--timeout", str(6 * LEASE_S)
            )
        )
    here, there = sent
    return here, there


def failed_alike(here: Ran, there: Ran) -> None:
    """Through the other plane the command ends as through the one that
    runs the agent: exit 1, the same lines, the turn's cost line with them
    (written in the commit that marks the question answered, which is where
    the other plane's command ends)."""
    assert (there.returncode, there.stderr, there.stdout) == (1, "", here.stdout)


async def test_send_wait_through_another_plane_to_an_answer_that_broke_off_exits_1(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """The provider's answer breaks off: the call is counted at an estimate,
    and the turn has a cost line. Through the plane that runs the agent the
    command exits 1; through the other, the same, with the same lines.
    Before, that one exited 0: the cost line read as a turn that went through."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (a, b):
        here, there = await sent_through_each(
            a, b, lambda: scripted_llm.cut_stream(reset=True, usage=CENT)
        )
        assert (here.returncode, here.stderr) == (1, ""), here.stdout
        assert here.stdout.startswith("The turn stopped: "), here.stdout
        assert here.stdout.splitlines()[-1].startswith("  $"), "its cost line: counted"
        failed_alike(here, there)


async def test_send_wait_through_another_plane_to_a_turn_failing_after_a_paid_call_exits_1(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """A call paid for (a tool asked for), then the provider's error: the
    turn has a cost line and failed. Through either plane the command exits
    1, with the same lines. Before, the other plane's exited 0."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)

    def script() -> None:
        scripted_llm.reply("", tool_calls=[("list_files", {})], usage=CENT)
        scripted_llm.fault(503)

    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (a, b):
        here, there = await sent_through_each(a, b, script)
        assert (here.returncode, here.stderr) == (1, ""), here.stdout
        assert "The turn stopped: " in here.stdout, here.stdout
        assert here.stdout.splitlines()[-1].startswith("  $"), "its cost line: counted"
        failed_alike(here, there)
