"""The loop and stall guard on the plane's own agents, on a real plane and
the scripted LLM server: an agent that repeats itself — within a turn or
across turns, the same call, the same answer, calls that bring nothing new —
is held as a ceiling holds it (what it is sent is kept, marked held; the
conversation says what repeated, how many times, what it cost), stays held
across a restart, and goes on when the operator resumes it. The hold is a
row state with its reason, a metric and an alert."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plane.cli.manage import shown
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from plane.wire.words import notice_kind
from tests.plane.daemon.test_alerts import notifying
from tests.plane.daemon.test_metrics import _turn as metered_turn
from tests.plane.daemon.test_metrics import samples
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import CONFIG, RunningPlane

FREE = Usage()
CENT = Usage(input_tokens=10)
"""$0.01 at the scripted price ($0.001 a token)."""
READ = ("read_file", {"path": "a.txt"})
HELD = (
    'demo is held: it called read_file {"path": "a.txt"} 5 times in a row with the same '
    "result; those calls cost $0.09 since 12:00 UTC. It stays held until the operator "
    "resumes it (p in the TUI, `plane resume demo`), which lets it go on."
)


async def said_since(plane: RunningPlane, agent: str, after: int) -> list[p.ConversationMessage]:
    return [m for m in await plane.services.conversation.history(agent, 200) if m.id > after]


async def last_id(plane: RunningPlane, agent: str) -> int:
    history = await plane.services.conversation.history(agent, 1)
    return history[-1].id if history else 0


async def read_five_times(plane: RunningPlane) -> None:
    """Five turns, each reading the same unchanged file and answering; the
    fifth is cut at its read."""
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "a.txt").write_text("the same every time\n")
    for n in range(5):
        plane.llm.reply("", tool_calls=[READ], usage=CENT)
        plane.llm.reply(f"Read it ({n}).", usage=CENT)
        await plane.turn("demo", f"look at a.txt, time {n}")
    await plane.quiet()


async def test_the_same_call_across_turns_is_held_at_the_fifth_and_resume_lets_it_go_on(
    start_plane,
):
    plane = await start_plane()
    await read_five_times(plane)
    history = await plane.services.conversation.history("demo", 200)
    assert history[-1].text == HELD and notice_kind(HELD) == "held"
    assert [m.text for m in history if m.kind == "agent"] == [f"Read it ({n})." for n in range(4)]
    fifth = [m for m in history if m.kind == "operator"][-1]
    waiting = await plane.services.conversation.waiting("demo")
    assert [m.id for m in waiting] == [fifth.id], "its turn was cut: what it answered waits"
    assert plane.llm.pending == 1, "the fifth turn's answer was never asked for"
    state = await plane.rows.state("demo")
    assert (state.status, state.hold_reason, state.resumes_at) == ("held", "loop", None)

    # Held like a ceiling holds: what it is sent is kept, marked held; said once.
    mark = await last_id(plane, "demo")
    calls = len(plane.llm.requests)
    [kept] = await plane.send("demo", "anything new?")
    await plane.clock.advance(timedelta(hours=13))  # a new day does not end it
    await plane.quiet()
    assert kept.held and len(plane.llm.requests) == calls
    assert [m.text for m in await said_since(plane, "demo", mark)] == ["anything new?"]

    client = await plane.client()
    subscription = plane.bus.subscribe()
    reply = await client.request(p.PauseAgent(agent="demo", paused=False))
    assert (reply.agent.status, reply.agent.hold_reason) in {("idle", None), ("working", None)}
    await plane.until_turn_ends("demo", subscription)
    after = [m.text for m in await said_since(plane, "demo", mark) if m.kind != "cost"]
    assert after[1:] == [
        "Resumed by the operator: the loop guard's hold is lifted and its count starts "
        "afresh; it answers what waited.",
        "Read it (4).",
    ]
    asked = plane.llm.requests[-1]["messages"][-1]["content"]
    assert "look at a.txt, time 4" in asked and "anything new?" in asked


async def test_the_same_call_within_one_turn_is_held_at_the_fifth_call(start_plane):
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "a.txt").write_text("the same\n")
    for _ in range(8):  # a model that asks for the same read whatever it is told
        plane.llm.reply("", tool_calls=[READ], usage=CENT)
    await plane.turn("demo", "read a.txt")
    await plane.quiet()
    assert len(plane.llm.requests) == 5
    history = await plane.services.conversation.history("demo", 50)
    assert history[-1].text.startswith(
        'demo is held: it called read_file {"path": "a.txt"} 5 times in a row with the same '
        "result; those calls cost $0.05 since 12:00 UTC."
    )
    assert [m.kind for m in history].count("tool") == 1, "a repeat in a turn is not run again"


@pytest.mark.usefixtures("each_store")
async def test_the_hold_is_kept_across_a_restart(start_plane):
    plane = await start_plane()
    await read_five_times(plane)
    plane = await start_plane(restart=plane)
    state = await plane.rows.state("demo")
    assert (state.status, state.hold_reason) == ("held", "loop")
    details = await plane.runtime.api.handle(p.ShowAgent(id=1, agent="demo"))
    [today] = [line for line in shown(details).splitlines() if "today" in line]
    assert today.endswith(" spent · held in a loop · 1 waiting · `plane resume demo` lets it go on")
    mark = await last_id(plane, "demo")
    await plane.send("demo", "still there?")
    await plane.quiet()
    assert [m.text for m in await said_since(plane, "demo", mark)] == ["still there?"]


AMBIENT = CONFIG.replace("  demo: {}", "  demo: {ambient: {every_minutes: 1, note: Look around.}}")


async def ambient_turns(plane: RunningPlane, count: int) -> None:
    """The clock moved a minute at a time, each minute's ambient turn taken
    to its end (none comes once the agent is held)."""
    for _ in range(count):
        if (await plane.rows.state("demo")).status == "held":
            await plane.clock.advance(timedelta(seconds=61))
            await plane.quiet()
            continue
        subscription = plane.bus.subscribe()
        try:
            await plane.clock.advance(timedelta(seconds=61))
            await plane.until_turn_ends("demo", subscription)
        finally:
            plane.bus.unsubscribe(subscription)
        await plane.quiet()


async def test_the_same_answer_turn_after_turn_is_held_after_it_is_given_the_fifth_time(
    start_plane,
):
    plane = await start_plane(AMBIENT)
    for _ in range(8):
        plane.llm.reply("Nothing needs doing.", usage=CENT)
    await ambient_turns(plane, 7)
    history = await plane.services.conversation.history("demo", 50)
    assert [m.text for m in history if m.kind == "agent"] == ["Nothing needs doing."] * 5
    assert history[-1].text == (
        "demo is held: it gave the same answer 5 times in a row with nothing new between "
        "(“Nothing needs doing.”); those calls cost $0.05 since 12:01 UTC. It stays held until "
        "the operator resumes it (p in the TUI, `plane resume demo`), which lets it go on."
    )
    assert len(await plane.scheduler.open("demo")) == 1, "its ambient turn waits, not dropped"


async def test_the_same_answer_to_a_poll_whose_results_change_is_never_held(start_plane):
    plane = await start_plane(AMBIENT)
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    for n in range(12):
        (workspace / "status.txt").write_text(f"build {n * 8}% done\n")
        plane.llm.reply("", tool_calls=[("read_file", {"path": "status.txt"})], usage=CENT)
        plane.llm.reply("Still building.", usage=CENT)
        await ambient_turns(plane, 1)
    state = await plane.rows.state("demo")
    assert state.status == "idle" and len(plane.llm.requests) == 24


STALL_ORDER = "abcdbadccdabacbddbcabcaddcbacbdaadcbbdca"
"""Four files read one a turn in an order that is no round."""


def read_in_turn(plane: RunningPlane, turns: int) -> None:
    """Each turn reads one of four files and answers one of three words."""
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    for name in "abcd":
        (workspace / f"{name}.txt").write_text(name)
    for n in range(turns):
        plane.llm.reply(
            "", tool_calls=[("read_file", {"path": f"{STALL_ORDER[n]}.txt"})], usage=FREE
        )
        plane.llm.reply(["Looked.", "Checked.", "Seen."][n % 3], usage=CENT)


async def test_turns_that_bring_nothing_new_are_a_stall(start_plane):
    plane = await start_plane(AMBIENT)
    read_in_turn(plane, 20)
    await ambient_turns(plane, 20)
    history = await plane.services.conversation.history("demo", 100)
    assert history[-1].text.startswith(
        "demo is held: its last 10 calls brought nothing new (no new tool result, answer, "
        "message or file change)"
    )


async def test_a_file_its_work_changed_is_news_so_never_a_stall(start_plane):
    plane = await start_plane(AMBIENT)
    read_in_turn(plane, 20)
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    for n in range(20):
        (workspace / "out.log").write_text(f"run {n}")  # what its work wrote
        await ambient_turns(plane, 1)
    assert (await plane.rows.state("demo")).status == "idle"
    assert plane.llm.pending == 0


async def test_the_loop_alert_carries_its_figures_and_the_row_turning_held_says_no_more(
    start_plane, receiver: Receiver
):
    plane = await start_plane(notifying(receiver, ntfy=True))
    await read_five_times(plane)
    await plane.runtime.notifier.drained()
    hooks = receiver.hooks()
    assert [h["event"] for h in hooks] == ["loop"]
    [loop] = hooks
    assert loop["text"] == HELD
    assert loop["loop"] == {
        "kind": "tool",
        "times": 5,
        "cost_usd": "0.09",
        "since": "2026-11-29T12:00:00+00:00",
        "what": ['read_file {"path": "a.txt"}'],
    }
    assert "actions" not in loop, "a raise would not end a loop: none is offered"
    assert receiver.topics() == [("plane: demo is held in a loop", HELD)]
    await plane.runtime.api.handle(p.PauseAgent(agent="demo", paused=False))
    await receiver.until_hook("resumed")


async def test_the_metric_says_held_for_a_loop(start_gateway):
    gw = await start_gateway()
    workspace = gw.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "a.txt").write_text("x")
    for n in range(5):
        gw.llm.reply("", tool_calls=[READ], usage=CENT)
        gw.llm.reply("ok", usage=CENT)
        await metered_turn(gw, "demo", f"read it, time {n}")
    text = await gw.scrape()
    got = samples(text)
    assert got["plane_agent_held", (("agent", "demo"), ("reason", "loop"))] == 1.0
    assert got["plane_agent_held", (("agent", "claude"), ("reason", ""))] == 0.0


async def test_a_loop_after_a_resume_is_held_and_said_again(start_plane):
    plane = await start_plane()
    await read_five_times(plane)  # its fifth answer still scripted: the resumed turn's
    subscription = plane.bus.subscribe()
    await plane.runtime.api.handle(p.PauseAgent(agent="demo", paused=False))
    await plane.until_turn_ends("demo", subscription)  # it answers what waited
    plane.bus.unsubscribe(subscription)
    await plane.quiet()
    for n in range(5):
        plane.llm.reply("", tool_calls=[READ], usage=CENT)
        plane.llm.reply(f"Read it again ({n}).", usage=CENT)
        await plane.turn("demo", f"look again, time {n}")
    await plane.quiet()
    history = await plane.services.conversation.history("demo", 200)
    held = [m.text for m in history if m.text.startswith("demo is held: it called read_file")]
    assert len(held) == 2
    assert (await plane.rows.state("demo")).hold_reason == "loop"
