"""A turn a stop cuts is answered after the restart, and the conversation says
what the call in flight was counted at: a graceful `plane stop`, a booked
turn, and a real SIGKILL of a plane in its own process."""

import asyncio
import signal
import sqlite3
import time
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from plane.wire.words import turn_cost
from tests.plane.money.test_durability import cli, serve
from tests.support.fixtures_plane import CONFIG, RunningPlane

QUESTION = "a question the stop cuts mid-answer"
ANSWER = "answered after the restart"
# A ceiling well above the pending call's estimate (prompt + 512 output tokens).
ROOMY = CONFIG.replace("limitUsd: 1", "limitUsd: 9")


def notice(estimate: Decimal, *, answers: bool = True) -> str:
    said = (
        "The plane stopped during this agent's turn; the call in flight is counted at its "
        f"estimate, {turn_cost(estimate)}."
    )
    return said + (" It now answers what it had not answered." if answers else "")


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    """A stop waits this long for a turn in flight before cutting it."""
    monkeypatch.setattr("plane.daemon.server.SHUTDOWN_GRACE_S", 0.2)


async def mid_stream(plane: RunningPlane, agent: str, text: str) -> None:
    """Send `text`, and return once the answer has begun to stream."""
    subscription = plane.bus.subscribe()
    try:
        await plane.send(agent, text)
        while not isinstance(await subscription.next(), p.TextDelta):
            pass
    finally:
        plane.bus.unsubscribe(subscription)


async def until_said(plane: RunningPlane, agent: str, text: str) -> list[p.ConversationMessage]:
    history: list[p.ConversationMessage] = []
    for _ in range(400):
        history = await plane.services.conversation.history(agent, limit=100)
        if any(m.text == text for m in history):
            return history
        await asyncio.sleep(0.025)
    raise AssertionError(f"{text!r} never said: {[m.text for m in history]}")


@pytest.mark.usefixtures("each_store")  # on each engine
async def test_a_turn_cut_by_a_stop_is_answered_after_the_restart(start_plane):
    plane = await start_plane(ROOMY)
    plane.llm.stall("Half an ans", seconds=30)
    plane.llm.reply(ANSWER, usage=Usage(input_tokens=10))
    await asyncio.wait_for(mid_stream(plane, "demo", QUESTION), 10)

    again = await start_plane(restart=plane)
    # The answer's cost line is said last (on PostgreSQL, a round trip after it).
    history = await asyncio.wait_for(until_said(again, "demo", "$0.01 · 10 in · 0 out"), 15)

    [cut, settled] = await again.services.ledger.entries(again.clock.now().date())
    assert (cut.status, cut.estimated) == ("interrupted", True) and cut.cost_usd > 0
    assert (settled.status, settled.cost_usd) == ("settled", Decimal("0.01"))
    said = [(m.kind, m.text) for m in history]
    assert said == [
        ("operator", QUESTION),
        ("plane", notice(cut.cost_usd)),
        ("agent", ANSWER),
        ("cost", "$0.01 · 10 in · 0 out"),
    ]
    told = next(m for m in history if m.kind == "plane")
    assert told.cost_usd == cut.cost_usd, "the feed carries what the row counts"
    assert await again.services.conversation.count_waiting("demo") == 0
    assert await again.services.ledger.spend_today("demo") == cut.cost_usd + Decimal("0.01")
    retaken = again.llm.requests[-1]["messages"]
    assert [m["content"] for m in retaken if m["role"] == "user"] == [QUESTION]


async def test_the_restart_says_one_call_in_flight_as_one(start_plane, caplog):
    """`plane serve`'s line for what a stop left in flight: "1 call was", not "1 calls were"."""
    plane = await start_plane(ROOMY)
    plane.llm.stall("Half an ans", seconds=30)
    plane.llm.reply(ANSWER, usage=Usage(input_tokens=10))
    await asyncio.wait_for(mid_stream(plane, "demo", QUESTION), 10)
    with caplog.at_level("WARNING", logger="plane.daemon.assemble"):
        again = await start_plane(restart=plane)
        await asyncio.wait_for(until_said(again, "demo", ANSWER), 15)
    said = [r.getMessage() for r in caplog.records if "in flight" in r.getMessage()]
    assert said == ["1 call was in flight when the plane stopped; kept at estimate"]


async def test_an_unpriced_call_a_stop_cut_is_not_said_to_count_nothing(start_plane):
    """No price, no estimate: the restart says the call is not counted, never
    that it was counted at $0.00, and the notice carries no figure."""
    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")
    plane.llm.stall("Half an ans", seconds=30)
    plane.llm.reply(ANSWER, usage=Usage(input_tokens=10))
    await asyncio.wait_for(mid_stream(plane, "demo", QUESTION), 10)

    again = await start_plane(restart=plane)
    history = await asyncio.wait_for(until_said(again, "demo", ANSWER), 15)
    [told] = [m for m in history if m.text.startswith("The plane stopped")]
    assert told.text == (
        "The plane stopped during this agent's turn; the call in flight is not counted: no"
        " price is known for its model. It now answers what it had not answered."
    )
    assert told.cost_usd is None
    cut = (await again.services.ledger.entries(again.clock.now().date()))[0]
    assert (cut.status, cut.price_source) == ("interrupted", "unpriced")


@pytest.mark.usefixtures("each_store")  # on each engine
async def test_a_booked_turn_cut_by_a_stop_is_taken_again(start_plane):
    plane = await start_plane(ROOMY)
    plane.llm.stall("Checking the", seconds=30)
    plane.llm.reply("checked", usage=Usage(input_tokens=10))
    subscription = plane.bus.subscribe()
    await plane.scheduler.book("demo", plane.clock.now(), "check the build")
    while not isinstance(await asyncio.wait_for(subscription.next(), 10), p.TextDelta):
        pass
    plane.bus.unsubscribe(subscription)

    again = await start_plane(restart=plane)
    history = await asyncio.wait_for(until_said(again, "demo", "checked"), 15)

    [cut, _] = await again.services.ledger.entries(again.clock.now().date())
    assert [(m.kind, m.text) for m in history][:2] == [
        ("plane", notice(cut.cost_usd, answers=False)),
        ("agent", "checked"),
    ]
    assert "check the build" in again.llm.requests[-1]["messages"][-1]["content"]
    await again.quiet()
    assert await again.scheduler.open("demo") == []


@pytest.mark.usefixtures("each_store")  # on each engine
async def test_a_turn_that_fails_inside_the_plane_is_answered_once(start_plane, monkeypatch):
    """Not cut, failed: the plane says so, and that answers it (no retry loop)."""
    plane = await start_plane()

    async def broken(self, incoming):
        raise RuntimeError("a bug")

    monkeypatch.setattr("plane.agents.turn.Turn.run", broken)
    await plane.send("demo", "hello")
    history = await asyncio.wait_for(
        until_said(plane, "demo", "The turn failed inside the plane; see plane.log."), 10
    )
    assert [m.kind for m in history] == ["operator", "plane"]
    assert await plane.services.conversation.count_waiting("demo") == 0


# ── a real SIGKILL (a real `plane serve`, started as test_durability starts it) ──


def conversation(home):
    with sqlite3.connect(home / "plane.db") as db:
        return db.execute(
            "SELECT kind, text, waiting, cost_usd FROM messages WHERE agent = 'demo' ORDER BY id"
        ).fetchall()


@pytest.mark.slow
def test_a_turn_cut_by_sigkill_is_answered_after_the_restart(tmp_path, scripted_llm):
    home, config = tmp_path / "home", tmp_path / "agents.yaml"
    config.write_text(ROOMY.replace("{base_url}", scripted_llm.base_url))
    scripted_llm.stall("Half an ans", seconds=30)
    scripted_llm.reply(ANSWER, usage=Usage(input_tokens=10))
    first = serve(home, config)
    try:
        assert cli(home, "send", "demo", QUESTION).returncode == 0
        deadline = time.monotonic() + 20
        while not scripted_llm.received:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)  # the stream has begun
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()

    second = serve(home, config)
    try:
        deadline = time.monotonic() + 20
        while ("agent", ANSWER) not in [row[:2] for row in conversation(home)]:
            assert time.monotonic() < deadline, conversation(home)
            time.sleep(0.1)
    finally:
        second.terminate()
        second.wait(timeout=20)
    with sqlite3.connect(home / "plane.db") as db:
        calls = db.execute("SELECT status, estimated, cost_usd FROM calls ORDER BY id").fetchall()
    [(status, estimated, estimate), (settled, _, cost)] = calls
    assert (status, estimated, settled, cost) == ("interrupted", 1, "settled", "0.01")
    said = conversation(home)
    assert [row[:2] for row in said] == [
        ("operator", QUESTION),
        ("plane", notice(Decimal(estimate))),
        ("agent", ANSWER),
        ("cost", "$0.01 · 10 in · 0 out"),
    ]
    assert said[1][3] == estimate and not any(row[2] for row in said)
