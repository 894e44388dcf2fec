"""Agents that work: a multi-step tool loop over a real workspace, bookings
that fire when the clock says so, the scout on its own row, and a
self-booking agent that stops at its ceiling and resumes the next day."""

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.agents.tool_context import AgentToolContext
from plane.money.limits import Priced
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

FREE = Usage()
CENT = Usage(input_tokens=10)  # $0.01 at the test prices


def tool_results(request):
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_multi_step_tool_loop_in_the_workspace(start_plane):
    plane = await start_plane()
    llm = plane.llm
    llm.reply(
        "", tool_calls=[("write_file", {"path": "src/app.py", "content": "x = 1\n"})], usage=CENT
    )
    llm.reply(
        "", tool_calls=[("run_command", {"command": "cat src/app.py && echo done"})], usage=CENT
    )
    llm.reply("", tool_calls=[("grep", {"pattern": "x =", "path": "."})], usage=CENT)
    llm.reply("", tool_calls=[("read_file", {"path": "../../etc/passwd"})], usage=CENT)
    llm.reply("All done.", usage=CENT)
    said = await plane.turn("demo", "build it")

    workspace = plane.services.roster.get("demo").workspace
    assert (workspace / "src" / "app.py").read_text() == "x = 1\n"
    results = tool_results(llm.requests[-1])
    assert "done" in results[1] and "[exit 0" in results[1]
    assert "src/app.py:1:x = 1" in results[2]
    assert "outside the workspace" in results[3]
    tools = [m.text for m in said if m.kind == "tool"]
    assert len(tools) == 4 and "(refused)" in tools[3]
    assert said[-2].text == "All done." and said[-1].text.startswith("$0.05 ·")


async def test_a_model_that_repeats_a_call_is_made_to_answer(start_plane):
    plane = await start_plane()
    for _ in range(2):
        plane.llm.reply("", tool_calls=[("budget_status", {})], usage=FREE)
    plane.llm.reply("Fine.", usage=FREE)
    said = await plane.turn("demo", "how much?")
    assert [m.text for m in said if m.kind == "agent"] == ["Fine."]
    assert "tools" in plane.llm.requests[1] and "tools" not in plane.llm.requests[2]
    # Nothing of the plane's is put in its input for the repeat (a small model
    # answered with that sentence): the repeat is left out, its result is above.
    last = plane.llm.requests[2]["messages"]
    assert len(tool_results(plane.llm.requests[2])) == 1, "the first call's result, once"
    assert [m["role"] for m in last[-2:]] == ["assistant", "tool"]
    assert not any("exact call" in str(m.get("content")) for m in last)


async def test_an_answer_that_repeats_a_refusal_is_not_shown_as_the_agents(start_plane):
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("read_file", {"path": "../../etc/passwd"})], usage=CENT)
    plane.llm.reply("I could not.", usage=CENT)
    await plane.turn("demo", "read the password file")
    refusal = tool_results(plane.llm.requests[-1])[0]
    assert "outside the workspace" in refusal
    plane.llm.reply("", tool_calls=[("read_file", {"path": "/etc/passwd"})], usage=CENT)
    plane.llm.reply(refusal.replace("is outside", "it's outside"), usage=CENT)
    said = await plane.turn("demo", "try again")
    assert not [m for m in said if m.kind == "agent"], "the plane's words, not demo's answer"
    notice = [m.text for m in said if m.kind == "plane"]
    assert notice == [
        "demo answered only by repeating the plane's own words to it, so that is not shown as "
        "its answer. Ask again, or put the question another way."
    ]
    assert said[-1].kind == "cost" and said[-1].text.startswith("$0.02"), "still paid for"
    waiting = await plane.services.conversation.waiting("demo")
    assert waiting == [], "the notice answered the question: it is not asked again"


@pytest.mark.parametrize("empty", ["", " \n "])
async def test_an_empty_answer_is_said_not_left_as_silence(start_plane, empty):
    """The embedded model, made to answer without tools after a repeated call,
    often answers nothing: the operator's question must not end in a bare
    cost line, with nothing saying why the agent is quiet."""
    plane = await start_plane()
    for _ in range(2):
        plane.llm.reply("", tool_calls=[("budget_status", {})], usage=FREE)
    plane.llm.reply(empty, usage=CENT)
    said = await plane.turn("demo", "what files are here?")
    assert not [m for m in said if m.kind == "agent"], "no blank answer"
    assert [m.text for m in said if m.kind == "plane"] == [
        "demo gave an empty answer, so there is nothing to show. Ask again, or put the "
        "question another way."
    ]
    assert said[-1].kind == "cost" and said[-1].text.startswith("$0.01"), "still paid for"
    assert await plane.services.conversation.waiting("demo") == [], "answered by the notice"


async def test_an_answer_that_repeats_its_prompt_is_not_shown_but_a_quoted_figure_is(
    start_plane,
):
    plane = await start_plane()
    plane.llm.reply(
        "You are demo, an agent run by plane, a control plane that meters every call you make.",
        usage=FREE,
    )
    said = await plane.turn("demo", "who are you?")
    assert not [m for m in said if m.kind == "agent"]
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=FREE)
    plane.llm.reply("I have spent $0.00 of my $1.00 ceiling today, so plenty left.", usage=FREE)
    said = await plane.turn("demo", "how much have you spent?")
    assert [m.text for m in said if m.kind == "agent"] == [
        "I have spent $0.00 of my $1.00 ceiling today, so plenty left."
    ]


async def test_a_booked_turn_fires_when_the_clock_reaches_it(start_plane):
    plane = await start_plane()
    plane.llm.reply(
        "", tool_calls=[("schedule_turn", {"in_seconds": 3600, "note": "check CI"})], usage=FREE
    )
    plane.llm.reply("Booked.", usage=FREE)
    await plane.turn("demo", "remind yourself")
    calls = len(plane.llm.requests)
    await plane.clock.advance(timedelta(minutes=30))
    await plane.quiet()
    assert len(plane.llm.requests) == calls, "not due yet"

    subscription = plane.bus.subscribe()
    await plane.clock.advance(timedelta(minutes=31))
    await plane.until_turn_ends("demo", subscription)
    assert "check CI" in plane.llm.requests[-1]["messages"][-1]["content"]
    assert await plane.scheduler.open("demo") == []


async def test_bookings_survive_a_restart(start_plane):
    plane = await start_plane()
    await plane.scheduler.book("demo", plane.clock.now() + timedelta(hours=1), "later")
    plane = await start_plane(restart=plane)
    subscription = plane.bus.subscribe()
    await plane.clock.advance(timedelta(hours=2))
    await plane.until_turn_ends("demo", subscription)
    assert "later" in plane.llm.requests[-1]["messages"][-1]["content"]


async def test_ask_scout_is_billed_to_the_scouts_row(start_plane):
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True)  # made by its first turn; the operator puts files in first
    (workspace / "notes.md").write_text("The deploy key rotates on Fridays.\n" * 50)
    llm = plane.llm
    llm.reply(
        "",
        tool_calls=[
            ("ask_scout", {"question": "When does the key rotate?", "paths": ["notes.md"]})
        ],
        usage=CENT,
    )
    llm.reply(
        "", tool_calls=[("read_file", {"path": "notes.md"})], usage=Usage(input_tokens=300)
    )  # the scout reads: $0.30
    llm.reply("On Fridays.", usage=CENT)  # the scout answers
    llm.reply("The key rotates on Fridays.", usage=CENT)  # demo answers
    said = await plane.turn("demo", "when does the key rotate?")
    assert said[-2].text == "The key rotates on Fridays."
    assert "On Fridays." in tool_results(llm.requests[-1])[0]
    assert "Fridays.\nThe deploy key" not in tool_results(llm.requests[-1])[0]
    spend = await plane.services.ledger.spend_by_agent()
    assert spend == {"demo": Decimal("0.02"), "scout": Decimal("0.31")}


async def test_the_scouts_conversation_shows_the_question_as_the_asking_agents(start_plane):
    plane = await start_plane()
    plane.llm.reply(
        "", tool_calls=[("ask_scout", {"question": "What changed?", "paths": []})], usage=FREE
    )
    plane.llm.reply("Nothing.", usage=FREE)  # the scout
    plane.llm.reply("Nothing changed.", usage=FREE)  # demo
    await plane.turn("demo", "ask the scout")
    history = await plane.services.conversation.history("scout")
    assert [(m.kind, m.text) for m in history][:2] == [
        ("plane", "demo asks: What changed? (the workspace)"),
        ("agent", "Nothing."),
    ]
    assert all(m.kind != "operator" for m in history), "the operator asked nothing"


async def test_a_held_scout_says_so_to_the_asking_agent(start_plane):
    plane = await start_plane()
    await plane.send("scout", "/limit 0")
    plane.llm.reply(
        "", tool_calls=[("ask_scout", {"question": "anything?", "paths": []})], usage=FREE
    )
    plane.llm.reply("ok", usage=FREE)
    await plane.turn("demo", "ask the scout")
    [result] = tool_results(plane.llm.requests[-1])
    assert result.startswith("The scout is not answering: scout is paused")
    assert "00:00 UTC" not in result, "a zero ceiling is a pause: no day's end frees it"


async def test_a_self_booking_agent_stops_at_its_ceiling_and_resumes_the_next_day(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit 0.05")
    book = ("schedule_turn", {"in_seconds": 60, "note": "keep going"})
    for _ in range(12):
        plane.llm.reply("", tool_calls=[book], usage=CENT)
        plane.llm.reply("working", usage=CENT)
    await plane.turn("demo", "start your loop")
    for _ in range(6):
        await plane.clock.advance(timedelta(seconds=61))
        await plane.quiet()
    spend = await plane.services.ledger.spend_today("demo")
    assert Decimal("0.05") <= spend <= Decimal("0.07"), "overshoot at most one turn"
    state = await plane.rows.state("demo")
    assert state.status == "held"
    calls = len(plane.llm.requests)
    await plane.clock.advance(timedelta(minutes=5))
    await plane.quiet()
    assert len(plane.llm.requests) == calls
    assert len(await plane.scheduler.open("demo")) == 1, "the booking is kept"

    subscription = plane.bus.subscribe()
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, 1, tzinfo=UTC))
    await plane.until_turn_ends("demo", subscription)
    assert "keep going" in plane.llm.requests[calls]["messages"][-1]["content"]


async def test_a_failed_call_is_said_in_one_line_costs_nothing_and_the_agent_goes_on(start_plane):
    plane = await start_plane()
    plane.llm.fault(503)
    said = await plane.turn("demo", "hello")
    [notice] = [m for m in said if m.kind == "plane"]
    assert notice.text.startswith("The turn stopped: ") and "\n" not in notice.text
    [entry] = await plane.services.ledger.entries(plane.clock.now().date())
    assert (entry.status, entry.cost_usd) == ("failed", 0)
    plane.llm.reply("Back.", usage=CENT)
    said = await plane.turn("demo", "again")
    assert said[-2].text == "Back."


async def test_an_unreadable_answer_is_charged_at_an_estimate_never_free(start_plane):
    plane = await start_plane()
    plane.llm.malformed()
    said = await plane.turn("demo", "hello")
    assert any(m.text.startswith("The turn stopped: ") for m in said)
    [entry] = await plane.services.ledger.entries(plane.clock.now().date())
    assert entry.status == "settled" and entry.estimated and entry.cost_usd > 0


async def test_a_stream_without_usage_is_charged_from_an_estimate(start_plane):
    plane = await start_plane()
    plane.llm.cut_stream(after_text="Partial ans")
    await plane.turn("demo", "hello")
    [entry] = await plane.services.ledger.entries(plane.clock.now().date())
    assert entry.estimated and entry.cost_usd > 0 and entry.usage.output_tokens > 0


async def test_an_unpriced_model_is_said_and_a_ceiling_holds_it(start_plane):
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    said = await plane.send("demo", "hello")
    await plane.quiet()
    assert said[0].held and "no price is known for other-model" in said[1].text
    assert plane.llm.requests == []
    await plane.send("demo", "/limit off")
    subscription = plane.bus.subscribe()
    plane.crew.workers.wake("demo")
    said = await plane.until_turn_ends("demo", subscription)
    assert "No price is known for other-model, so this turn's cost is not counted" in said[-1].text
    [line] = [m for m in said if m.kind == "cost"]  # unknown never reads as free
    assert line.text.startswith("unpriced · ") and line.cost_usd is None


async def test_a_turn_that_cost_a_sliver_of_a_cent_never_reads_as_free(start_plane):
    """At a cheap model's price a short turn costs $0.000014: its line says
    that it cost something, never `$0.0000`."""
    from tests.support.fixtures_plane import CONFIG

    cheap = CONFIG.replace("pricing:\n", "pricing:\n  other-model: {input: 0.1, output: 0.4}\n")
    plane = await start_plane(cheap.replace("  demo: {}", "  demo: {model: other-model}"))
    plane.llm.reply("Yes.", usage=Usage(input_tokens=100, output_tokens=10))
    said = await plane.turn("demo", "short?")
    [line] = [m for m in said if m.kind == "cost"]
    assert line.cost_usd == Decimal("0.000014")
    assert line.text == "<$0.0001 · 100 in · 10 out"


async def test_tool_output_reaches_the_model_compressed_and_comes_back_whole(start_plane):
    import re

    plane = await start_plane()
    command = 'for i in $(seq 1 300); do echo "Setting up libfoo$i (1.2.$i) ..."; done'
    plane.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=FREE)
    plane.llm.reply("Installed.", usage=FREE)
    said = await plane.turn("demo", "install things")
    [result] = tool_results(plane.llm.requests[-1])
    assert len(result) < 2000 and "Setting up libfoo1 (1.2.1) ..." in result
    [ref] = re.findall(r"ref:(k_[A-Za-z0-9_-]+)", result)
    assert "compression saved" in said[-1].text

    plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, "grep": "libfoo250 "})], usage=FREE)
    plane.llm.reply("Found it.", usage=FREE)
    await plane.turn("demo", "find 250")
    [_, again] = tool_results(plane.llm.requests[-1])
    assert "Setting up libfoo250 (1.2.250) ..." in again


async def test_an_agent_created_from_the_keyboard_works_like_one_from_the_file(start_plane):
    plane = await start_plane()
    await plane.runtime.api.handle(
        p.NewAgent(name="helper", model="scripted-model", role="You help.")
    )
    plane.llm.reply("", tool_calls=[("write_file", {"path": "x.txt", "content": "1"})], usage=CENT)
    plane.llm.reply("Wrote it.", usage=CENT)
    said = await plane.turn("helper", "write x.txt")
    assert said[-2].text == "Wrote it." and said[-1].text.startswith("$0.02")
    assert (plane.services.roster.get("helper").workspace / "x.txt").read_text() == "1"
    assert "You help." in plane.llm.requests[-1]["messages"][0]["content"]
    assert (await plane.rows.state("helper")).limit_usd == 1


async def test_new_starts_a_session_without_the_history_and_keeps_it_on_disk(start_plane):
    plane = await start_plane()
    plane.llm.reply("first answer", usage=CENT)
    await plane.turn("demo", "remember the word teapot")
    said = await plane.send("demo", "/new")
    assert said[1].text.startswith("New session: the model's history (2 messages) is saved in ")
    [saved] = (plane.services.roster.get("demo").workspace / ".transcripts").glob("*.jsonl")
    assert "teapot" in saved.read_text()
    plane.llm.reply("fresh", usage=CENT)
    await plane.turn("demo", "what word?")
    assert [m["content"] for m in plane.llm.requests[-1]["messages"][1:]] == ["what word?"]
    again = await plane.send("demo", "/new")
    assert again[1].text.startswith("New session:")
    assert len(await plane.services.conversation.history("demo")) > 4, "people's view stays"


@pytest.mark.slow
async def test_new_during_a_turn_is_refused_and_the_turn_stays_in_its_session(start_plane):
    from tests.plane.agents.test_interrupted import mid_stream

    plane = await start_plane()
    plane.llm.stall("Half an ans", seconds=2)
    await asyncio.wait_for(mid_stream(plane, "demo", "a long question"), 10)
    ran = await plane.runtime.api.handle(p.Send(agent="demo", text="/new"))
    assert ran.refused
    assert ran.messages[1].text == (
        "demo is taking a turn: /new once it ends, or interrupt it first "
        "(Esc in the TUI, or plane interrupt demo)."
    )
    await plane.quiet()
    kept = await plane.services.transcript.load("demo")
    assert [m.content for m in kept if m.role == "user"] == ["a long question"]
    said = await plane.send("demo", "/new")
    assert said[1].text.startswith("New session: the model's history (2 messages) is saved in ")
    assert await plane.services.transcript.load("demo") == []


AMBIENT = "  demo:\n    ambient: {every_minutes: 30, note: Check the queue.}\n"


async def test_ambient_turns_come_every_so_often_through_the_gate(start_plane):
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}\n", AMBIENT))
    plane.llm.default_reply = Reply("Nothing to do.", usage=CENT)
    await plane.quiet()
    assert plane.llm.requests == []
    for _ in range(2):
        subscription = plane.bus.subscribe()
        await plane.clock.advance(timedelta(minutes=31))
        await plane.until_turn_ends("demo", subscription)
        prompt = plane.llm.requests[-1]["messages"][-1]["content"]
        assert "[ambient turn] Check the queue." in prompt
    await plane.send("demo", "/limit 0")
    calls = len(plane.llm.requests)
    await plane.clock.advance(timedelta(hours=3))
    await plane.quiet()
    assert len(plane.llm.requests) == calls, "held: the ambient turn waits"
    [waiting] = await plane.scheduler.open("demo")
    assert waiting.ambient, "one deferred turn, not a backlog of six"
    subscription = plane.bus.subscribe()
    await plane.send("demo", "/limit 1")
    await plane.until_turn_ends("demo", subscription)
    assert "[ambient turn]" in plane.llm.requests[-1]["messages"][-1]["content"]


async def test_budget_status_tells_the_agent_its_spend_ceiling_reset_and_context(start_plane):
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=Usage(input_tokens=250))
    plane.llm.reply("Pacing.", usage=FREE)
    await plane.turn("demo", "how am I doing?")
    [status] = tool_results(plane.llm.requests[-1])
    assert status.startswith("Spent today: $0.25 of a $1.00 daily ceiling ($0.75 left). ")
    assert "00:00 UTC, in 12h 00m." in status
    assert status.endswith("of 128k tokens used.") and "Context: about " in status


async def test_budget_status_past_the_ceiling_says_nothing_is_left(start_plane):
    """A turn may cross the ceiling (a call is paid for once made): the status
    then reads $0.00 left, not a failed tool."""
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=Usage(input_tokens=1100))
    plane.llm.reply("Over it.", usage=FREE)
    await plane.turn("demo", "how am I doing?")
    [status] = tool_results(plane.llm.requests[-1])
    assert status.startswith("Spent today: $1.10 of a $1.00 daily ceiling ($0.00 left). ")


async def test_an_unpriced_agents_budget_status_says_its_spend_as_its_row(start_plane):
    """On a model with no known price its calls count $0, which is not what
    they cost: it is told `$?` spent, as its row and `/limit` say it, never
    `$0.00`."""
    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")  # no ceiling: it takes turns, unpriced
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=Usage(input_tokens=420))
    plane.llm.reply("Pacing.", usage=FREE)
    await plane.turn("demo", "how am I doing?")
    [status] = tool_results(plane.llm.requests[-1])
    assert status.startswith("Spent today: $?; no daily ceiling. ")


async def test_a_budget_status_priced_at_a_floor_says_what_is_left_at_most(start_plane):
    """Spend priced at a floor is at least its figure: `$0.42+$?`, as its
    row says it, and what is left of the ceiling is at most the rest."""
    plane = await start_plane()
    plane.llm.reply("ok", usage=Usage(input_tokens=220, output_tokens=100))  # $0.42
    await plane.turn("demo", "work")
    at_a_floor = AgentToolContext(
        plane.services,
        "demo",
        plane.services.roster.get("demo").workspace,
        plane.scheduler.book,
        None,
        priced=lambda spent: Priced(floor_priced=True),
    )
    status = await at_a_floor.budget_status()
    assert status.startswith(
        "Spent today: $0.42+$? of a $1.00 daily ceiling (at most $0.58 left). "
    )


# ── money that cannot be recorded stops the turn ───────────────────────────

REFUSE_CALLS = (
    "CREATE TRIGGER refuse_calls BEFORE INSERT ON calls {when}"
    " BEGIN SELECT RAISE(ABORT, 'the disk refused'); END"
)


async def refuse_calls(plane, when=""):
    """A real database failure: the plane's own connection, and the calls
    table refusing every new row (for one agent, with `when`)."""
    await plane.runtime.db.write(lambda conn: conn.execute(REFUSE_CALLS.format(when=when)))


async def until_said(plane, agent, starts, within=10):
    for _ in range(int(within / 0.02)):
        history = await plane.services.conversation.history(agent)
        found = [m for m in history if m.text.startswith(starts)]
        if found:
            return found
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{agent} never said {starts!r}")


STOPPED = (
    "The turn stopped. Spend could not be recorded in the ledger (the disk refused). No LLM "
    "call is made while the ledger cannot record spend; see plane.log."
)


async def test_a_ledger_that_cannot_record_stops_the_turn_before_any_call(start_plane):
    plane = await start_plane()
    await refuse_calls(plane)
    await plane.send("demo", "hello")
    [notice] = await until_said(plane, "demo", "The turn stopped.")
    await plane.quiet()
    assert notice.kind == "plane" and notice.text == STOPPED
    assert plane.llm.requests == [], "nothing is sent that could not be counted"
    assert (await plane.rows.state("demo")).status == "idle"


async def test_the_scouts_unrecorded_spend_stops_the_asking_agents_turn_too(start_plane):
    plane = await start_plane()
    await refuse_calls(plane, "WHEN NEW.agent = 'scout'")
    plane.llm.reply(
        "", tool_calls=[("ask_scout", {"question": "anything?", "paths": []})], usage=FREE
    )
    plane.llm.reply("this answer must never be asked for", usage=FREE)
    await plane.send("demo", "ask the scout")
    [notice] = await until_said(plane, "demo", "The turn stopped.")
    await plane.quiet()
    assert notice.text == STOPPED
    assert len(plane.llm.requests) == 1, "the asking turn went no further than the tool call"
    assert STOPPED in [m.text for m in await plane.services.conversation.history("scout")]


async def test_a_gate_unread_whose_notice_cannot_be_told_either_is_no_failure_inside_the_plane(
    start_plane, caplog
):
    """The store away: the gate's read fails before a booked turn, and so does
    telling why. Not a failure inside the plane: that notice would be told,
    falsely, once the store is back. The log says both."""
    plane = await start_plane()
    book = ("schedule_turn", {"in_seconds": 600, "note": "the check"})
    plane.llm.reply("", tool_calls=[book], usage=Usage(input_tokens=10))
    plane.llm.reply("Booked.", usage=FREE)
    await plane.turn("demo", "book the check")
    asked = len(plane.llm.requests)
    await plane.runtime.db.write(lambda conn: conn.execute("ALTER TABLE spend RENAME TO gone"))
    await plane.runtime.db.write(
        lambda conn: conn.execute(
            "CREATE TRIGGER refuse_stops BEFORE INSERT ON messages"
            " WHEN NEW.text LIKE 'The turn stopped.%'"
            " BEGIN SELECT RAISE(ABORT, 'the disk refused'); END"
        )
    )
    plane.services.ledger.forget_sums()  # the day's sums read again: from the store
    with caplog.at_level(logging.WARNING, logger="plane.agents.worker"):
        await plane.clock.advance(timedelta(minutes=11))
        await plane.quiet()
    told = [m.text for m in await plane.services.conversation.history("demo")]
    assert not [t for t in told if t.startswith("The turn failed inside the plane")], told
    assert len(plane.llm.requests) == asked, "no call is made while the gate cannot be asked"
    logged = [r.getMessage() for r in caplog.records if r.name == "plane.agents.worker"]
    assert "demo: the stop could not be told: the disk refused" in logged
    assert "worker for demo" not in logged


# ── the scout's turn is an ordinary turn: its own workspace, its answer capped ──


async def test_the_scouts_answer_reaches_the_asker_capped_and_whole_in_its_own_feed(start_plane):
    """The structural guarantee that a scout's reading stays in the scout: the
    asking agent reads at most 2,000 characters of its answer."""
    plane = await start_plane()
    answer = " ".join(f"line{n}" for n in range(1200))
    plane.llm.reply(
        "", tool_calls=[("ask_scout", {"question": "Everything?", "paths": []})], usage=FREE
    )
    plane.llm.reply(answer, usage=FREE)  # the scout
    plane.llm.reply("Read it.", usage=FREE)  # demo
    await plane.turn("demo", "ask the scout")
    [result] = tool_results(plane.llm.requests[-1])
    assert result == answer[:2000]
    history = await plane.services.conversation.history("scout")
    assert [m.text for m in history if m.kind == "agent"] == [answer]


async def test_a_scouts_turn_is_the_askers_to_wait_for_and_the_operator_cannot_cut_it(
    start_plane,
):
    from plane.wire import protocol as p
    from plane.wire.client import RequestFailed

    plane = await start_plane()
    plane.llm.reply(
        "", tool_calls=[("ask_scout", {"question": "Slowly?", "paths": []})], usage=FREE
    )
    plane.llm.reply("Slowly.", usage=FREE, delay_s=1)  # the scout, still answering
    plane.llm.reply("It said slowly.", usage=FREE)  # demo
    subscription = plane.bus.subscribe()
    await plane.send("demo", "ask the scout")
    while True:
        event = await asyncio.wait_for(subscription.next(), 10)
        if isinstance(event, p.TurnStarted) and event.agent == "scout":
            break
    client = await plane.client()
    try:
        await client.request(p.Interrupt(agent="scout"))
    except RequestFailed as refused:
        assert str(refused) == (
            "scout is answering another agent's question; that turn is the asker's "
            "to wait for, and cannot be interrupted."
        )
    else:
        raise AssertionError("the scout's turn was cut")
    said = await plane.until_turn_ends("demo", subscription)
    assert [m.text for m in said if m.kind == "agent"] == ["It said slowly."]


async def test_a_turn_the_ledger_stops_is_finished_so_no_client_shows_it_working(start_plane):
    """Its start was shown (`TurnStarted`), so its end is too, as a failed
    turn: a client's spinner for it stops, and its row shows it idle."""
    from plane.wire import protocol as p

    plane = await start_plane()
    await refuse_calls(plane)
    subscription = plane.bus.subscribe()
    await plane.send("demo", "hello")
    events: list[p.Event] = []
    while not events or not isinstance(events[-1], p.TurnFinished):
        events.append(await asyncio.wait_for(subscription.next(), 10))
    [started] = [e for e in events if isinstance(e, p.TurnStarted)]
    finished = events[-1]
    assert (finished.agent, finished.turn, finished.ok) == ("demo", started.turn, False)
    said = [e.message.text for e in events if isinstance(e, p.MessageAppended)]
    assert said[-1] == STOPPED, "said before the turn's end"
    await plane.quiet()
    assert (await plane.rows.state("demo")).status == "idle"


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        (
            "/new extra",
            "/new takes nothing after it: /new — start a new session for the model "
            "(its history is saved).",
        ),
        ("/help me", "/help takes nothing after it: /help — list the commands."),
    ],
)
async def test_a_command_given_an_argument_it_does_not_take_is_refused_with_its_usage(
    start_plane, typed, said
):
    plane = await start_plane()
    plane.llm.reply("first answer", usage=CENT)
    await plane.turn("demo", "remember the word teapot")
    ran = await plane.runtime.api.handle(p.Send(agent="demo", text=typed))
    assert ran.refused
    assert [m.text for m in ran.messages] == [typed, said]
    assert len(await plane.services.transcript.load("demo")) == 2, "the session is as it was"
    assert not (plane.services.roster.get("demo").workspace / ".transcripts").exists()
