"""The gate, on a real plane with a scripted LLM and a clock the test moves:
an agent at its ceiling takes no new turn, loses nothing it receives, says
why it is quiet, and answers what waited when the day or the limit allows."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.scripted_llm import Reply

# Each test runs on each engine: the SQLite file, and PostgreSQL.
pytestmark = pytest.mark.usefixtures("each_store")

TWENTY_CENTS = Usage(input_tokens=100, output_tokens=50)
"""$0.20 at the test prices ($0.001 an input token, $0.002 an output token)."""


async def spend(plane, agent="demo"):
    return await plane.services.ledger.spend_today(agent)


async def spend_to_the_ceiling(plane, turns=5):
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(turns):
        await plane.turn("demo", f"task {n}")
    # The worker looks for more work after its turn; until it has, a send
    # and the worker race to say the held notice (said once either way).
    await plane.quiet()


async def test_each_turn_is_metered_and_says_its_cost(start_plane):
    plane = await start_plane()
    plane.llm.reply("hi there", usage=TWENTY_CENTS)
    said = await plane.turn("demo", "hello")
    assert [m.kind for m in said] == ["operator", "agent", "cost"]
    assert said[1].text == "hi there"
    assert said[2].text == "$0.20 · 100 in · 50 out"
    assert said[2].cost_usd == Decimal("0.2")
    assert await spend(plane) == Decimal("0.2")


async def test_at_its_ceiling_an_agent_starts_no_turn_and_loses_nothing(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    assert await spend(plane) == Decimal("1.0")
    calls = len(plane.llm.requests)

    first = await plane.send("demo", "are you there?")
    second = await plane.send("demo", "hello??")
    await plane.quiet()

    assert len(plane.llm.requests) == calls
    assert first[0].held and second[0].held
    assert [m.kind for m in first] == ["operator", "plane"]
    assert first[1].text == (
        "demo has spent $1.00 today, at its $1.00 daily ceiling; it answers at 00:00 UTC, "
        "in 12h 00m, or when the limit is raised."
    )
    assert len(second) == 1, "one notice per held spell, not one per message"
    history = await plane.services.conversation.history("demo")
    assert [m.text for m in history if m.held] == ["are you there?", "hello??"]
    state = await plane.rows.state("demo")
    assert (state.status, state.waiting) == ("held", 2)


async def test_the_next_utc_day_it_answers_everything_that_waited(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    await plane.send("demo", "first")
    await plane.send("demo", "second")
    subscription = plane.bus.subscribe()
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, tzinfo=UTC))
    said = await plane.until_turn_ends("demo", subscription)

    prompt = plane.llm.requests[-1]["messages"][-1]["content"]
    assert "first" in prompt and "second" in prompt and "while you were held" in prompt
    assert [m.kind for m in said] == ["agent", "cost"]
    assert await spend(plane) == Decimal("0.2")
    assert (await plane.rows.state("demo")).waiting == 0


async def test_raising_the_limit_answers_what_waited_at_once(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    await plane.send("demo", "waiting for you")
    subscription = plane.bus.subscribe()
    said = await plane.send("demo", "/limit 3")
    assert said[1].text == "Spending limit set to $3.00 a day. $1.00 spent today, of $3.00 a day."
    answered = await plane.until_turn_ends("demo", subscription)
    assert "waiting for you" in plane.llm.requests[-1]["messages"][-1]["content"]
    assert [m.kind for m in answered] == ["operator", "plane", "agent", "cost"]


async def test_crossing_four_fifths_is_said_once_a_day(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane, turns=4)
    warnings = [
        m
        for m in await plane.services.conversation.history("demo")
        if m.kind == "plane" and "80% of its $1.00 daily ceiling" in m.text
    ]
    assert [w.text for w in warnings] == [
        "demo has spent $0.80 today, 80% of its $1.00 daily ceiling."
    ]
    await plane.turn("demo", "one more")
    texts = [m.text for m in await plane.services.conversation.history("demo")]
    assert sum("80% of its" in t for t in texts) == 1
    assert sum("has reached its $1.00 daily ceiling" in t for t in texts) == 1


async def test_a_turn_that_crosses_the_ceiling_finishes_and_the_next_does_not_start(start_plane):
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=Usage(input_tokens=700))
    plane.llm.reply("finished", usage=Usage(input_tokens=600))
    said = await plane.turn("demo", "a long job")
    assert [m.kind for m in said][-3:] == ["agent", "cost", "plane"]
    assert said[-3].text == "finished"
    assert said[-1].text == (
        "demo has reached its $1.00 daily ceiling ($1.30 spent) and starts no new turn "
        "until 00:00 UTC, in 12h 00m, or until the limit is raised."
    )
    assert await spend(plane) == Decimal("1.3")
    calls = len(plane.llm.requests)
    held = await plane.send("demo", "and another")
    await plane.quiet()
    assert held[0].held and len(plane.llm.requests) == calls


async def test_a_limit_of_zero_is_a_pause(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit 0")
    said = await plane.send("demo", "hello")
    await plane.quiet()
    assert said[0].held and said[1].text == (
        "demo is paused: its daily ceiling is $0.00, so it takes no turn until the limit is "
        "raised (/limit 5, or /limit off); a new day does not end a pause."
    )
    assert "00:00 UTC" not in said[1].text
    assert plane.llm.requests == []


@pytest.mark.parametrize("change", ["/limit 0", "pause"])
async def test_a_limit_or_pause_set_while_the_worker_reads_what_waits_starts_no_turn(
    start_plane, monkeypatch, change
):
    """The worker asks the gate, then reads what waits: a ceiling or a pause
    that lands in between (the reads await the store) must not let the turn
    through on the answer the gate gave before it."""
    import asyncio

    plane = await start_plane()
    # The workers look for work once started; a look begun before the patch
    # below and slow to reach the store (on PostgreSQL, under load) read the
    # message sent next and answered it unpatched.
    await plane.quiet()
    conversation = plane.services.conversation
    read, reading, go_on = conversation.waiting, asyncio.Event(), asyncio.Event()

    async def waiting(agent):
        found = await read(agent)
        if found and not go_on.is_set():
            reading.set()  # the gate said go; what waits is read: hold the worker here
            await go_on.wait()
        return found

    monkeypatch.setattr(conversation, "waiting", waiting)
    await plane.send("demo", "hello")
    try:
        await asyncio.wait_for(reading.wait(), 30)
    except TimeoutError:
        raise AssertionError(f"the worker never read what waits:\n{plane.stacks()}") from None
    if change == "pause":
        client = await plane.client()
        await client.request(p.PauseAgent(agent="demo", paused=True))
    else:
        await plane.send("demo", change)
    go_on.set()
    await plane.quiet()
    assert plane.llm.requests == []
    assert (await plane.rows.state("demo")).status in ("held", "paused")
    assert (await plane.rows.state("demo")).waiting == 1


async def test_held_messages_survive_a_restart_and_are_answered_the_next_day(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    await plane.send("demo", "kept across a restart")
    plane = await start_plane(restart=plane)
    assert (await plane.rows.state("demo")).status == "held"
    subscription = plane.bus.subscribe()
    await plane.clock.advance(timedelta(hours=12))
    await plane.until_turn_ends("demo", subscription)
    assert "kept across a restart" in plane.llm.requests[-1]["messages"][-1]["content"]


async def test_a_restart_does_not_say_the_hold_again(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    said = await plane.send("demo", "still there?")
    assert [m.kind for m in said] == ["operator", "plane"]
    plane = await start_plane(restart=plane)
    await plane.quiet()  # the worker looks at what waited through the restart
    said = await plane.send("demo", "and now?")
    await plane.quiet()
    assert [m.kind for m in said] == ["operator"]
    history = await plane.services.conversation.history("demo")
    told = [m.text for m in history if m.kind == "plane" and "it answers at" in m.text]
    assert len(told) == 1, told

    subscription = plane.bus.subscribe()
    await plane.send("demo", "/limit 3")  # the spell ends, and what was told with it
    await plane.until_turn_ends("demo", subscription)
    assert await plane.services.conversation.told_hold("demo") is None


async def test_what_another_plane_told_is_read_again_once_the_agents_here_change(start_plane):
    """Planes sharing a store keep the told hold there; one that has run an
    agent, lost it and taken it back reads it again (the fleet's tick counts
    the changes), not what it remembered from before."""
    plane = await start_plane()
    await spend_to_the_ceiling(plane)

    async def told_after(text: str) -> int:
        await plane.send("demo", text)
        await plane.quiet()  # the send or the woken worker says it, once
        history = await plane.services.conversation.history("demo")
        return sum(m.kind == "plane" and "it answers at" in m.text for m in history)

    assert await told_after("one") == 1
    # Meanwhile another plane ran demo, and its spell ended there:
    await plane.services.conversation.remember_hold("demo", None)
    assert await told_after("two") == 1, "what this plane remembers still holds"
    plane.services.ownership.changes += 1  # the tick that gave demo back
    assert await told_after("three") == 2


# ── a clock that steps back ────────────────────────────────────────────────


async def test_a_clock_that_steps_back_a_day_grants_no_second_budget(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    calls = len(plane.llm.requests)
    await plane.clock.set(datetime(2026, 11, 28, 12, 0, tzinfo=UTC))

    said = await plane.send("demo", "a new day?")
    await plane.quiet()
    assert len(plane.llm.requests) == calls, "the day already spent is not granted again"
    assert said[0].held
    # Said once, by the send or by the worker the clock's move woke, whichever comes first.
    told = [m.text for m in await plane.services.conversation.history("demo") if m.kind == "plane"]
    assert told[-1] == (
        "demo has spent $1.00 today, at its $1.00 daily ceiling; it answers at 00:00 UTC, "
        "in 36h 00m, or when the limit is raised. The clock moved back to 2026-11-28, "
        "before 2026-11-29, a day already counted: spend counts against 2026-11-29 until "
        "the clock passes it."
    )

    plane = await start_plane(restart=plane)  # same database, the clock still back
    await plane.send("demo", "and after a restart?")
    await plane.quiet()
    assert len(plane.llm.requests) == calls
    state = await plane.rows.state("demo")
    assert state.status == "held"
    assert state.resumes_at == datetime(2026, 11, 30, 0, 0, tzinfo=UTC)

    subscription = plane.bus.subscribe()
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, tzinfo=UTC))
    await plane.until_turn_ends("demo", subscription)
    prompt = plane.llm.requests[-1]["messages"][-1]["content"]
    assert "a new day?" in prompt and "and after a restart?" in prompt
