"""The loop guard on several planes sharing one PostgreSQL: an agent's count
moves with its lease. An agent looping on one plane, that plane stopped (or
SIGKILLed) and its lease taken by another, is held at the fifth repeat
overall, as it would be on one plane (before, the new owner counted afresh: four more repeats a
move, for ever if planes restart in a loop). And a plane that lost an
agent's lease (paused past it, then resumed) writes nothing over the count
its successor keeps: the history is written under the lease, at its epoch.
And the operator's resume, through any plane (a TUI attached to one that
does not run the agent), starts the count afresh where the agent runs, even
as its lease moves: held again at the fifth repeat since, the resume said once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path

import psycopg
import pytest

from plane.agents.guard import Guard, Loop, Step, seen
from plane.clock import ManualClock
from plane.config import GuardConfig
from plane.daemon import fleet
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from tests.support.fixtures_plane import NOON, RunningPlane, launch, scripted_config
from tests.support.fleet_members import a_and_b, a_then_b, join, runs, serve
from tests.support.looping import CENT, READ, held, read_again
from tests.support.scripted_llm import Reply

LEASE_S = 3.0


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_loop_whose_lease_moves_to_another_plane_is_held_at_the_fifth_repeat_overall(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """Three repeats on plane A, A stopped, B takes the agent: two more on B
    and it is held, its figures counted from A's first call."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    workspace = tmp_path / "shared-workspace"  # the same files whichever plane runs it
    workspace.mkdir()
    (workspace / "a.txt").write_text("the same every time\n")
    config = scripted_config(f"  demo: {{workspace: {workspace}}}\n", limit_usd="5")
    a = await launch(tmp_path / "a", scripted_llm, config)
    b: RunningPlane | None = None
    try:
        await asyncio.wait_for(runs(a, "demo"), 10 * LEASE_S)
        b = await launch(tmp_path / "b", scripted_llm, config)
        await read_again(a, "demo", range(3))
        await a.stop()
        await asyncio.wait_for(runs(b, "demo"), 10 * LEASE_S)
        await read_again(b, "demo", range(3, 5))
        said = await b.services.conversation.history("demo", 1)
        assert said[-1].text == held("demo")
        assert scripted_llm.pending == 1, "the fifth turn's answer was never asked for"
    finally:
        scripted_llm.hang_up()
        if b is not None:
            await b.stop()
        if not a.plane.stop_event.is_set():
            await a.stop()


def rows(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def wait_for(what: Callable[[], object], within: float, message: str) -> None:
    deadline = time.monotonic() + within
    while not what():
        assert time.monotonic() < deadline, message
        time.sleep(0.2)


def send(home: Path, text: str) -> None:
    async def sent() -> None:
        client = await PlaneClient.connect(home / "plane.sock")
        try:
            await client.request(p.Send(agent="demo", text=text))
        finally:
            await client.close()

    asyncio.run(sent())


ANSWERS = "SELECT COUNT(*) FROM messages WHERE agent = 'demo' AND kind = 'agent'"
HELD = "SELECT text FROM messages WHERE agent = 'demo' AND text LIKE '%is held%'"


def ended(url: str, turns: int) -> bool:
    """`turns` turns of the agent answered, or it was held."""
    return rows(url, ANSWERS)[0][0] >= turns or bool(rows(url, HELD))


def reads_then_answers(body: dict, serial: int) -> Reply:
    """The model reads a.txt, then answers once its result is in."""
    if body["messages"][-1].get("role") == "tool":
        return Reply("Read it.", usage=CENT)
    return Reply("", usage=CENT, tool_calls=(READ,))


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_loop_whose_plane_is_killed_is_held_by_the_plane_that_takes_it_at_the_fifth(
    tmp_path: Path, scripted_llm, postgres_url
):
    """Two `plane serve` processes; the agent reads the same file in three
    turns on its plane, which is SIGKILLed; the other takes it once the lease
    runs out, and holds it at the fifth read overall."""
    url = postgres_url
    workspace = tmp_path / "shared-workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("the same every time\n")
    config = tmp_path / "agents.yaml"
    text = scripted_config(f"  demo: {{workspace: {workspace}}}\n", limit_usd="5")
    config.write_text(text.replace("{base_url}", scripted_llm.base_url))
    scripted_llm.responder = reads_then_answers
    homes = {name: tmp_path / name for name in ("p0", "p1")}
    planes = {name: serve(home, config, url, name, LEASE_S) for name, home in homes.items()}
    try:
        owned = "SELECT plane FROM leases WHERE agent = 'demo' AND expires_ms > 0"
        wait_for(lambda: rows(url, owned), 10 * LEASE_S, "no plane took the agent")
        [(owner,)] = rows(url, owned)
        [other] = set(planes) - {owner}
        for home in homes.values():
            wait_for((home / "plane.sock").exists, 30, f"{home} never served")
        for n in range(3):
            send(homes[other], f"look at a.txt, time {n}")  # told to its owner
            wait_for(partial(ended, url, n + 1), 30, "the turn never answered")
        planes[owner].send_signal(signal.SIGKILL)
        planes[owner].wait()
        taken = f"SELECT 1 FROM leases WHERE agent = 'demo' AND plane = '{other}'"
        wait_for(lambda: rows(url, taken), 10 * LEASE_S, "the agent was not taken over")
        for n in range(3, 5):
            send(homes[other], f"look at a.txt, time {n}")
            wait_for(partial(ended, url, n + 1), 30, "the turn never ended")
        held = [t for (t,) in rows(url, HELD)]
        assert len(held) == 1, f"not held after five reads, two planes apart: {held}"
        assert held[0].startswith(
            'demo is held: it called read_file {"path": "a.txt"} 5 times in a row with the '
            "same result; those calls cost $0.09 since "
        ), held
        assert rows(url, ANSWERS)[0][0] == 4, "the fifth turn's answer was never asked for"
    finally:
        for plane in planes.values():
            if plane.poll() is None:
                plane.send_signal(signal.SIGTERM)
        for plane in planes.values():
            try:
                plane.wait(timeout=20)
            except subprocess.TimeoutExpired:
                plane.kill()
                plane.wait()


READS = [seen("read_file", '{"path": "a.txt"}', "the same every time")]


def step(guard: Guard, n: int) -> Loop | None:
    """The guard sees its agent read the same file again, `n` minutes past noon."""
    return guard.step(Step(Decimal("0.01"), NOON + timedelta(minutes=n), tools=tuple(READS)))


async def test_a_plane_that_lost_the_lease_cannot_overwrite_the_history_its_successor_keeps(
    postgres_url,
):
    """A reads three times and commits; it pauses with a fourth change (the
    operator's resume: its count deleted) not yet written, and its lease runs
    out. B takes the agent, goes on from A's three, reads a fourth and
    commits. A resumes and commits: its change, made under the lease it lost,
    is not written. A third plane taking the agent next holds it at the fifth."""
    a = await join(postgres_url, "A", ["demo"])
    b = await join(postgres_url, "B", ["demo"])
    c = await join(postgres_url, "C", ["demo"])
    try:
        await a.fleet.tick(first=True)
        on_a = Guard(
            GuardConfig(), lambda kept: a.guards.keep("demo", kept, a.ownership.fence("demo"))
        )
        for n in range(3):
            assert step(on_a, n) is None
        await a.db.write(lambda conn: None)  # the next commit writes it
        on_a.forget()  # kept, not yet written: A pauses here

        with psycopg.connect(postgres_url, autocommit=True) as conn:  # A's lease runs out
            conn.execute("UPDATE leases SET expires_ms = 1 WHERE agent = 'demo'")
        await b.fleet.tick(first=True)
        assert b.ownership.mine == frozenset({"demo"})
        on_b = Guard(
            GuardConfig(), lambda kept: b.guards.keep("demo", kept, b.ownership.fence("demo"))
        )
        b.guards.give_back("demo", on_b)
        assert step(on_b, 3) is None
        await b.db.write(lambda conn: None)

        await a.db.write(lambda conn: None)  # A resumes: its next commit

        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE leases SET expires_ms = 1 WHERE agent = 'demo'")
        await c.fleet.tick(first=True)
        on_c = Guard(
            GuardConfig(), lambda kept: c.guards.keep("demo", kept, c.ownership.fence("demo"))
        )
        c.guards.give_back("demo", on_c)
        loop = step(on_c, 4)
        assert loop is not None
        assert (loop.kind, loop.times, loop.since) == ("tool", 5, NOON)
    finally:
        for member in (a, b, c):
            await member.db.close()


RESUMED = (
    "Resumed by the operator: the loop guard's hold is lifted and its count starts afresh; "
    "it answers what waited."
)


def reads_then_answers_anew(body: dict, serial: int) -> Reply:
    """The model reads a.txt, then answers, in other words each time (only
    its reads repeat)."""
    if body["messages"][-1].get("role") == "tool":
        return Reply(f"Read it ({serial}).", usage=CENT)
    return Reply("", usage=CENT, tool_calls=(READ,))


async def resumed_line(subscription) -> None:
    """Until `subscription` is told the resume's line."""
    while True:
        event = await subscription.next()
        if isinstance(event, p.MessageAppended) and event.message.text == RESUMED:
            return


async def in_a_fleet(tmp_path: Path, scripted_llm, monkeypatch, postgres_url):
    """Planes A and B on one store, A running `demo`, whose model reads the
    same unchanged file each turn."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    workspace = tmp_path / "shared-workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("the same every time\n")
    config = scripted_config(f"  demo: {{workspace: {workspace}}}\n", limit_usd="5")
    scripted_llm.responder = reads_then_answers_anew
    return await a_then_b(tmp_path, scripted_llm, config, 10 * LEASE_S)


async def texts(plane: RunningPlane, last: int) -> list[str]:
    """The texts of the last `last` lines of demo's conversation."""
    return [m.text for m in await plane.services.conversation.history("demo", last)]


async def turns(plane: RunningPlane, agent: str, texts: range) -> None:
    for n in texts:
        await plane.turn(agent, f"look at a.txt, time {n}")
    await plane.quiet()  # a hold is told by the look after the turn


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_loop_resumed_through_another_plane_counts_afresh_where_the_agent_runs(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """Held on A at its fifth read; the operator's TUI, attached to B,
    resumes it. A lets it go on as if resumed there: it answers what waited
    (a read), is not held at its next three reads, and is held at the fifth
    after the resume. The resume's line is written once, and told once to
    each plane's clients."""
    a, b = await in_a_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url)
    try:
        await turns(a, "demo", range(5))
        assert (await texts(a, 1)) == [held("demo")]
        on_a, on_b = a.bus.subscribe(), b.bus.subscribe()
        lines_a = a.bus.subscribe()  # its own: waiting for the turn reads on_a past the line
        client = await b.client()
        await client.request(p.PauseAgent(agent="demo", paused=False))
        try:  # what waited through the hold (the fifth look) is answered, on A
            await a.until_turn_ends("demo", on_a, 10 * LEASE_S)
        except TimeoutError:
            pytest.fail("resumed through B, the agent never went on where it runs")
        await turns(a, "demo", range(5, 8))
        assert not any("is held" in t for t in await texts(a, 12)), "held again too soon"
        await turns(a, "demo", range(8, 9))
        said = await texts(a, 100)
        assert said[-1] == held("demo"), said[-3:]
        assert said.count(RESUMED) == 1, said
        await asyncio.wait_for(resumed_line(lines_a), 10 * LEASE_S)  # told A's clients
        await asyncio.wait_for(resumed_line(on_b), 10 * LEASE_S)  # and B's
    finally:
        scripted_llm.hang_up()
        await b.stop()
        await a.stop()


async def ambient_fleet(tmp_path: Path, scripted_llm, monkeypatch, postgres_url):
    """Planes A and B on one store, A running `demo`, which looks around
    each minute and answers the same each time."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    ambient = "  demo: {ambient: {every_minutes: 1, note: Look around.}}\n"
    config = scripted_config(ambient, limit_usd="5")
    scripted_llm.responder = lambda body, serial: Reply("Nothing needs doing.", usage=CENT)
    clock = ManualClock(NOON)  # the fleet's one clock: a booking is due on both at once
    return await a_then_b(tmp_path, scripted_llm, config, 10 * LEASE_S, clock)


async def minutes(plane: RunningPlane, count: int) -> list[str]:
    """`count` minutes on `plane`'s clock, each one's ambient turn taken
    (none while the agent is held); what demo's conversation says since."""
    before = await plane.services.conversation.history("demo", 1)
    mark = before[-1].id if before else 0
    for _ in range(count):
        await plane.clock.advance(timedelta(seconds=61))
        await plane.quiet()
    return [m.text for m in await plane.services.conversation.history("demo", 100) if m.id > mark]


ANSWER_HELD = (
    "demo is held: it gave the same answer 5 times in a row with nothing new between "
    "(“Nothing needs doing.”); those calls cost $0.05 since "
)


async def resume(plane: RunningPlane) -> None:
    """The operator resumes demo through `plane`, as the TUI does."""
    client = await plane.client()
    await client.request(p.PauseAgent(agent="demo", paused=False))


async def held_again(plane: RunningPlane) -> list[str]:
    """Minutes on the fleet's clock until demo, resumed, is held again, run
    where it runs now (six are enough: five answers and the look that tells
    the hold; a plane that has just taken it may miss a minute's turn while
    its worker is made, so up to twelve); what its conversation said between
    its two holds (the caller counts the answers there)."""
    said: list[str] = []
    for _ in range(12):
        await minutes(plane, 1)
        said = await texts(plane, 100)
        holds = [i for i, text in enumerate(said) if text.startswith(ANSWER_HELD)]
        if len(holds) == 2:
            return said[holds[0] + 1 : holds[1]]
    raise AssertionError(f"never held again: {said}")


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_answer_loop_resumed_through_another_plane_is_not_held_at_its_next_answer(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """Held on A for the same answer five times; resumed through B. A's count
    starts afresh, as a resume on A starts it: it is held again at the fifth
    answer since the resume (before, A kept its count of five and held it
    again at its first), and the resume is said once between."""
    a, b = await ambient_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url)
    try:
        said = await minutes(a, 6)
        assert said.count("Nothing needs doing.") == 5 and said[-1].startswith(ANSWER_HELD), said
        await resume(b)
        between = await held_again(a)
        assert between.count("Nothing needs doing.") == 5, between
        assert between.count(RESUMED) == 1, between
    finally:
        scripted_llm.hang_up()
        await b.stop()
        await a.stop()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("race", ["resume while A stops", "take, then resume", "take and resume"])
async def test_a_resume_racing_a_takeover_counts_afresh_on_the_plane_that_takes_the_agent(
    race: str, tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """Held on A for the same answer five times; the operator resumes it
    through B while B takes it over (A stopped): the resume as A lets the
    lease go, just after B took it, or while B takes it (its take reads the
    hold and the count as the resume lifts them). Whatever the order, B runs
    it afresh: four answers go through and the fifth since the resume is
    held (some of those may be A's, answering what waited as it stopped);
    the resume is said once."""
    a, b = await ambient_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url)
    try:
        said = await minutes(a, 6)
        assert said[-1].startswith(ANSWER_HELD), said
        fleet_b = b.runtime.fleet
        assert fleet_b is not None
        if race == "resume while A stops":
            await asyncio.gather(resume(b), a.stop())
        elif race == "take, then resume":
            await a.stop()
            await fleet_b.tick()
            await resume(b)
        else:
            await a.stop()
            await asyncio.gather(fleet_b.tick(), resume(b))
        await asyncio.wait_for(runs(b, "demo"), 10 * LEASE_S)
        between = await held_again(b)
        assert between.count("Nothing needs doing.") == 5, between
        assert between.count(RESUMED) == 1, between
    finally:
        scripted_llm.hang_up()
        await b.stop()
        if not a.plane.stop_event.is_set():
            await a.stop()


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_agent_its_plane_holds_in_a_loop_is_shown_held_on_the_other_planes(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """A's loop guard holds demo; B, which does not run it, shows its clients
    the row `held` (a loop, which the operator resumes from any plane) within
    a renewal. Before, B's row and `plane status` said `idle` until B took
    the agent's lease."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    config = scripted_config("  demo: {}\n", limit_usd="5")
    async with a_and_b(tmp_path, scripted_llm, config, 10 * LEASE_S) as (a, b):
        shown = b.bus.subscribe()
        await read_again(a, "demo", range(5))
        assert (await a.rows.state("demo")).hold_reason == "loop"
        assert "demo" in (a.services.ownership.mine or ()), "A still runs it"

        async def until_shown_held() -> p.AgentState:
            while True:
                event = await shown.next()
                if isinstance(event, p.AgentUpdated) and event.agent.name == "demo":
                    if event.agent.status == "held":
                        return event.agent

        row = await asyncio.wait_for(until_shown_held(), 4 * LEASE_S)
        assert row.hold_reason == "loop"
        assert (await b.rows.state("demo")).hold_reason == "loop"
