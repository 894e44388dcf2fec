"""The operator manages agents over the real socket: pause and resume (the
ceiling kept), edit (one bad value changes nothing), rename (conversation and
spend go with the name), delete (records kept, spend still counted, never
refunded, not even to a new agent of the same name), each across a restart,
and the running turn cut with what it cost said."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
from decimal import Decimal
from typing import Any

import pytest

from plane.cli.manage import agent_settings
from plane.wire import protocol as p
from plane.wire.client import PlaneClient, RequestFailed
from plane.wire.protocol import Usage
from plane.wire.words import spend_against, turn_cost
from tests.support.fixtures_plane import CONFIG, RunningPlane

ROOMY = CONFIG.replace("limitUsd: 1", "limitUsd: 9")


async def made(plane: RunningPlane, name: str = "poet") -> PlaneClient:
    client = await plane.client()
    await client.request(p.NewAgent(name=name, model="scripted-model", role="writes verse"))
    return client


async def refused(client: PlaneClient, request: p.Request[Any]) -> str:
    with pytest.raises(RequestFailed) as caught:
        await client.request(request)
    return str(caught.value)


def rows(plane: RunningPlane, sql: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(plane.home.db) as db:
        return db.execute(sql, args).fetchall()


# ── pause / resume ──────────────────────────────────────────────────────────


async def test_a_paused_agent_keeps_its_ceiling_and_what_it_receives(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.PauseAgent(agent="demo", paused=True))
    assert isinstance(reply, p.AgentReply)
    assert (reply.agent.status, reply.agent.paused) == ("paused", True)
    assert reply.agent.limit_usd == Decimal(1), "a pause is not /limit 0"

    said = await plane.send("demo", "are you there?")
    assert said[0].held and said[1].kind == "plane" and "is paused" in said[1].text
    await plane.quiet()
    assert plane.llm.requests == [], "a paused agent starts no turn"
    assert await plane.services.conversation.count_waiting("demo") == 1

    again = await start_plane(restart=plane)  # the pause outlives the plane
    state = await again.rows.state("demo")
    assert (state.status, state.limit_usd) == ("paused", Decimal(1))
    await again.quiet()
    assert again.llm.requests == []

    again.llm.reply("here now", usage=Usage(input_tokens=10))
    subscription = again.bus.subscribe()
    resumed = await (await again.client()).request(p.PauseAgent(agent="demo", paused=False))
    assert isinstance(resumed, p.AgentReply) and resumed.agent.status != "paused"
    said = await again.until_turn_ends("demo", subscription)
    assert ("agent", "here now") in [(m.kind, m.text) for m in said], "what waited is answered"


async def test_what_waited_through_a_pause_is_not_said_to_have_waited_on_a_ceiling(start_plane):
    """The model is told the message is old, and not a reason that is not so
    (it said to the operator "It seems I've been held at my ceiling")."""
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.PauseAgent(agent="demo", paused=True))
    await plane.send("demo", "are you there?")
    plane.llm.reply("here now", usage=Usage(input_tokens=10))
    subscription = plane.bus.subscribe()
    await client.request(p.PauseAgent(agent="demo", paused=False))
    await plane.until_turn_ends("demo", subscription)
    prompt = plane.llm.requests[-1]["messages"][-1]["content"]
    assert prompt.endswith(", while you were held] are you there?")
    assert "ceiling" not in prompt


async def test_resuming_an_agent_its_ceiling_still_holds_promises_no_answer(start_plane):
    """The pause is lifted, the ceiling is not: the resume says it is still
    held, never "it answers what waited", and the next line says why."""
    plane = await start_plane()
    client = await plane.client()
    plane.llm.reply("done", usage=Usage(input_tokens=20))
    await plane.turn("demo", "work")
    await plane.send("demo", "/limit 0.01")  # $0.02 spent: over it
    await client.request(p.PauseAgent(agent="demo", paused=True))
    await plane.send("demo", "are you there?")
    subscription = plane.bus.subscribe()
    await client.request(p.PauseAgent(agent="demo", paused=False))
    said: list[str] = []

    async def two_lines() -> None:
        while len(said) < 2:
            event = await subscription.next()
            if isinstance(event, p.MessageAppended) and event.message.agent == "demo":
                said.append(event.message.text)

    await asyncio.wait_for(two_lines(), 20)
    assert said == [
        "Resumed by the operator: the pause is lifted, but it is still held; it answers what "
        "waited once that hold ends.",
        "demo has spent $0.02 today, over its $0.01 daily ceiling; it answers at 00:00 UTC, "
        "in 12h 00m, or when the limit is raised.",
    ]
    await plane.quiet()
    assert len(plane.llm.requests) == 1, "no turn while the ceiling holds it"


async def test_pausing_twice_is_one_clear_error(start_plane):
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.PauseAgent(agent="demo", paused=True))
    assert await refused(client, p.PauseAgent(agent="demo", paused=True)) == (
        "demo is already paused."
    )
    assert "No agent named 'ghost'" in await refused(client, p.PauseAgent(agent="ghost"))


# ── edit ────────────────────────────────────────────────────────────────────


async def test_edit_changes_role_model_tools_and_ceiling_and_keeps_them(start_plane):
    plane = await start_plane()
    client = await made(plane)
    reply = await client.request(
        p.EditAgent(
            agent="poet",
            role="writes prose",
            model="other-model",
            tools=["read_file", "grep"],
            limit="$2.50",
        )
    )
    assert isinstance(reply, p.AgentReply)
    agent = reply.agent
    assert (agent.role, agent.model, agent.limit_usd) == (
        "writes prose",
        "other-model",
        Decimal("2.5"),
    )
    assert agent.tools == ("read_file", "grep")
    history = await plane.services.conversation.history("poet", 10)
    assert history[-1].text == (
        "Edited by the operator: model other-model; role changed; tools: read_file, grep; "
        "ceiling $2.50 a day."
    )

    again = await start_plane(restart=plane)
    state = await again.rows.state("poet")
    assert (state.role, state.model, state.limit_usd) == (
        "writes prose",
        "other-model",
        Decimal("2.5"),
    )
    assert state.tools == ("read_file", "grep")


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"model": "no-such-model"}, "'no-such-model' is not a configured model"),
        ({"tools": ["read_file", "rm_rf"]}, "'rm_rf' is not a tool"),
        ({"tools": ["none", "grep"]}, "'none' stands alone: give it by itself, or only tool"),
        ({"limit": "-1"}, "A limit can't be negative"),
        ({"limit": "nan"}, "is not an amount"),
        ({}, "Nothing to change"),
    ],
)
async def test_a_bad_edit_is_one_error_and_changes_nothing(start_plane, fields, said):
    plane = await start_plane()
    client = await made(plane)
    before = await plane.rows.state("poet")
    # The good values beside the bad one are not applied either.
    good = {"role": "changed"} if fields else {}
    edit = p.EditAgent.model_validate({"agent": "poet", **good, **fields})
    assert said in await refused(client, edit)
    assert await plane.rows.state("poet") == before
    assert rows(plane, "SELECT * FROM agent_settings") == []


# ── rename ──────────────────────────────────────────────────────────────────


async def test_rename_moves_conversation_spend_and_ceiling(start_plane):
    plane = await start_plane()
    client = await made(plane)
    plane.llm.reply("a verse", usage=Usage(input_tokens=100))
    await plane.turn("poet", "write")
    await plane.send("poet", "/limit 0.5")
    reply = await client.request(p.RenameAgent(agent="poet", new_name="bard"))
    assert isinstance(reply, p.AgentReply)
    assert (reply.agent.name, reply.agent.spend_today_usd) == ("bard", Decimal("0.1"))
    assert reply.agent.limit_usd == Decimal("0.5")
    assert "poet" not in plane.crew.workers
    texts = [m.text for m in await plane.services.conversation.history("bard", 20)]
    assert texts[:2] == ["write", "a verse"] and texts[-1] == "Renamed from poet by the operator."
    assert plane.home.workspace("bard").is_dir() and not plane.home.workspace("poet").exists()

    again = await start_plane(restart=plane)
    assert [a.name for a in (await again.rows.snapshot()).agents] == ["demo", "scout", "bard"]
    assert await again.services.ledger.spend_today("bard") == Decimal("0.1")
    assert again.services.gate.ceilings.of("bard") == Decimal("0.5")


async def test_a_bad_rename_is_refused(start_plane):
    plane = await start_plane()
    client = await made(plane)
    assert "already exists" in await refused(client, p.RenameAgent(agent="poet", new_name="demo"))
    assert "is not a valid name" in await refused(
        client, p.RenameAgent(agent="poet", new_name="Bad Name")
    )
    assert "comes from agents.yaml" in await refused(
        client, p.RenameAgent(agent="demo", new_name="demo2")
    )
    assert list(plane.crew.workers) == ["demo", "scout", "poet"]


# ── delete ──────────────────────────────────────────────────────────────────


async def test_delete_keeps_the_records_and_never_refunds(start_plane):
    plane = await start_plane()
    client = await made(plane)
    plane.llm.reply("a verse", usage=Usage(input_tokens=600))
    await plane.turn("poet", "write")
    assert isinstance(await client.request(p.DeleteAgent(agent="poet")), p.OkReply)
    assert "poet" not in plane.crew.workers
    snapshot = await plane.rows.snapshot()
    assert [a.name for a in snapshot.agents] == ["demo", "scout"]
    assert snapshot.spend_today_usd == Decimal("0.6"), "its spend still counts for the day"
    assert snapshot.fleet_spend_today_usd == Decimal("0.6"), "the figure the fleet line says"
    kinds = [k for (k,) in rows(plane, "SELECT kind FROM messages WHERE agent = 'poet'")]
    assert kinds == ["operator", "agent", "cost", "plane"], "its conversation is kept"
    assert len(await plane.services.ledger.entries(plane.clock.now().date())) == 1

    again = await start_plane(restart=plane)
    assert "poet" not in again.crew.workers, "it stays deleted"
    client = await again.client()
    reply = await client.request(p.NewAgent(name="poet", model="scripted-model"))
    assert isinstance(reply, p.NewAgentReply)
    # A new agent of the same name gets the defaults, and the day's spend: no refund.
    assert (reply.agent.spend_today_usd, reply.agent.limit_usd) == (Decimal("0.6"), Decimal(1))
    assert await again.services.transcript.load("poet") == [], "a fresh model session"


async def test_workspaces_in_the_home_are_private_from_the_first_turn(start_plane, usual_umask):
    """The home's files are the operator's alone: its `workspaces/`, an agent's own
    and where a deleted agent's is kept are made 0700, as the home is."""
    plane = await start_plane()
    client = await made(plane)
    plane.llm.reply("a verse")
    await plane.turn("poet", "write")
    made_dirs = [plane.home.workspaces, plane.home.workspace("poet")]
    assert [stat.S_IMODE(path.stat().st_mode) for path in made_dirs] == [0o700, 0o700]
    assert isinstance(await client.request(p.DeleteAgent(agent="poet")), p.OkReply)
    kept = plane.home.workspaces / ".deleted"
    assert [path.name[:5] for path in kept.iterdir()] == ["poet-"]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700


async def test_an_agent_from_the_file_is_the_files_to_delete(start_plane):
    plane = await start_plane()
    client = await plane.client()
    assert await refused(client, p.DeleteAgent(agent="demo")) == (
        "demo comes from agents.yaml: remove its block there and restart the plane."
    )
    assert "demo" in plane.crew.workers


# ── interrupt ───────────────────────────────────────────────────────────────


async def test_interrupt_cuts_the_turn_and_says_what_it_cost(start_plane):
    plane = await start_plane(ROOMY)
    subscription = await plane.mid_answer("demo", "a long question")
    client = await plane.client()
    assert isinstance(await client.request(p.Interrupt(agent="demo")), p.OkReply)
    said = await plane.until_turn_ends("demo", subscription, within=5)

    [cut] = await plane.services.ledger.entries(plane.clock.now().date())
    assert (cut.status, cut.estimated) == ("interrupted", True) and cut.cost_usd > 0
    [notice] = [m for m in said if m.kind == "plane"]
    assert notice.text.startswith("Interrupted by the operator. The cut-off turn cost $")
    assert notice.cost_usd == cut.cost_usd
    assert await plane.services.ledger.spend_today("demo") == cut.cost_usd
    assert await plane.services.conversation.count_waiting("demo") == 0, "not taken again"
    await plane.quiet()
    assert len(plane.llm.requests) == 1
    assert (await plane.rows.state("demo")).status == "idle"

    again = await start_plane(restart=plane)  # nothing left pending to recover
    assert await again.services.ledger.spend_today("demo") == cut.cost_usd


async def test_a_cut_turn_that_reaches_the_ceiling_says_so_as_any_turn_does(start_plane):
    """The call in flight counts its estimate ($1.0xx against $1.00): the
    agent is stopped, and the conversation says so then, not only once a
    message arrives to be held."""
    plane = await start_plane()
    subscription = await plane.mid_answer("demo", "a long question")
    client = await plane.client()
    assert isinstance(await client.request(p.Interrupt(agent="demo")), p.OkReply)
    said = await plane.until_turn_ends("demo", subscription, within=5)

    spent = await plane.services.ledger.spend_today("demo")
    assert spent > 1, "the estimate crosses the ceiling"
    assert [m.text for m in said if m.kind == "plane"] == [
        f"Interrupted by the operator. The cut-off turn cost {turn_cost(spent)}, the call in "
        f"flight counted at its estimate, {turn_cost(spent)}.",
        f"demo has reached its $1.00 daily ceiling ({spend_against(spent, Decimal(1))} spent) "
        "and starts no new turn until 00:00 UTC, in 12h 00m, or until the limit is raised.",
    ]


async def test_an_unpriced_call_cut_in_flight_never_reads_as_free(start_plane):
    """No price, no estimate: the call in flight is recorded `unpriced` from
    the moment it is written, so the ledger and the notice never say $0."""
    from plane.cli.clients import ledger_lines

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")
    subscription = await plane.mid_answer("demo", "a long question")
    day = plane.clock.now().date()
    [pending] = await plane.services.ledger.entries(day)
    assert (pending.status, pending.price_source) == ("pending", "unpriced")
    client = await plane.client()
    assert isinstance(await client.request(p.Interrupt(agent="demo")), p.OkReply)
    said = await plane.until_turn_ends("demo", subscription, within=5)

    [cut] = await plane.services.ledger.entries(day)
    assert (cut.status, cut.price_source) == ("interrupted", "unpriced")
    assert ledger_lines(day, [cut])[1].endswith("  unpriced  interrupted")
    [notice] = [m for m in said if m.kind == "plane"]
    assert notice.text == (
        "Interrupted by the operator. The cut-off turn cost is not known: no price is known"
        " for other-model, so its call in flight is not counted."
    )
    assert "$" not in notice.text and notice.cost_usd is None


async def test_interrupting_an_idle_agent_is_one_clear_error(start_plane):
    plane = await start_plane()
    client = await plane.client()
    assert await refused(client, p.Interrupt(agent="demo")) == (
        "demo is not taking a turn: there is nothing to interrupt."
    )


async def test_deleting_an_agent_mid_turn_cuts_and_counts_the_turn_first(start_plane):
    plane = await start_plane(ROOMY)
    client = await made(plane)
    await plane.mid_answer("poet", "a long poem", begun="Half a ver")
    assert isinstance(await client.request(p.DeleteAgent(agent="poet")), p.OkReply)
    [cut] = await plane.services.ledger.entries(plane.clock.now().date())
    assert (cut.agent, cut.status, cut.estimated) == ("poet", "interrupted", True)
    assert cut.cost_usd > 0
    assert (await plane.rows.snapshot()).spend_today_usd == cut.cost_usd
    texts = [str(t) for (t,) in rows(plane, "SELECT text FROM messages WHERE agent = 'poet'")]
    assert texts[1].startswith("Interrupted by the operator.")
    assert texts[2].startswith("Deleted by the operator.")
    assert rows(plane, "SELECT COUNT(*) FROM messages WHERE waiting = 1") == [(0,)]


async def test_an_edit_of_a_file_agent_outlasts_the_file_across_a_restart(start_plane):
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.EditAgent(agent="demo", model="other-model", tools=["none"]))
    details = await client.request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert (details.made, details.ceiling_from) == ("agents.yaml", "defaults")
    again = await start_plane(restart=plane)
    state = await again.rows.state("demo")
    assert (state.model, state.tools) == ("other-model", ())
    assert again.crew.workers["demo"].spec.tools == (), "the turn gets no tools"


async def test_show_says_a_ceiling_removed_by_limit_off_came_from_limit(start_plane):
    """demo's block in agents.yaml (or the defaults) has a ceiling; after
    `/limit off`, `plane show` saying only "no ceiling" leaves the file's
    figure unexplained: it says the operator's /limit removed it."""
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.Send(agent="demo", text="/limit off"))
    details = await client.request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert (details.agent.limit_usd, details.ceiling_from) == (None, "/limit")
    assert (
        "  ceiling    no ceiling, from /limit"
        in agent_settings(details.agent, details.ceiling_from).splitlines()
    )


NAME_RULE = (
    "1–32 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"
)


@pytest.mark.parametrize("empty", ["", "   "])
async def test_an_empty_name_is_asked_for_with_what_a_name_may_be(start_plane, empty):
    """`'' is not a valid name` read as a riddle: the form was sent with its name left blank."""
    plane = await start_plane()
    client = await made(plane)
    new = p.NewAgent(name=empty, model="scripted-model")
    assert await refused(client, new) == f"Give the agent a name: {NAME_RULE}."
    renamed = p.RenameAgent(agent="poet", new_name=empty)
    assert await refused(client, renamed) == f"Give the agent a name: {NAME_RULE}."
    assert list(plane.crew.workers) == ["demo", "scout", "poet"]


async def test_resuming_an_agent_that_is_not_paused_says_so(start_plane):
    """Not "demo is already running": an idle agent runs nothing, and there is nothing to resume."""
    plane = await start_plane()
    client = await plane.client()
    said = await refused(client, p.PauseAgent(agent="demo", paused=False))
    assert said == "demo is not paused: there is nothing to resume."
    assert (await plane.rows.state("demo")).status == "idle"


async def test_resuming_an_agent_its_ceiling_holds_says_what_frees_it(start_plane):
    """`plane resume` on a row that says `held`: not a pause, so nothing to
    resume, and the refusal says what does free it (the limit, or 00:00 UTC)
    rather than leave the operator at "nothing to resume" beside `held`."""
    plane = await start_plane()
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1100))  # $1.10 of $1.00
    await plane.turn("demo", "spend")
    assert (await plane.rows.state("demo")).status == "held"
    client = await plane.client()
    said = await refused(client, p.PauseAgent(agent="demo", paused=False))
    assert said == (
        "demo is not paused, so there is nothing to resume; demo has spent $1.10 today, over "
        "its $1.00 daily ceiling; it answers at 00:00 UTC, in 12h 00m, or when the limit is "
        "raised."
    )


async def test_deleting_an_agent_on_a_model_with_no_price_says_its_spend_as_its_row(start_plane):
    """Its calls counted $0, which is not what they cost: its row said `$?`,
    and so does the notice of its deletion, never `$0.00`."""
    plane = await start_plane(CONFIG.replace("  limitUsd: 1\n", ""))
    client = await plane.client()
    await client.request(p.NewAgent(name="poet", model="other-model", role="writes verse"))
    plane.llm.reply("A verse.", usage=Usage(input_tokens=100, output_tokens=10))
    await plane.turn("poet", "a verse")
    assert (await plane.rows.state("poet")).price_known is False
    assert isinstance(await client.request(p.DeleteAgent(agent="poet")), p.OkReply)
    [(text,)] = rows(plane, "SELECT text FROM messages WHERE agent = 'poet' AND text LIKE 'Del%'")
    assert text == (
        "Deleted by the operator. Its conversation and ledger rows are kept, and its $? today "
        "still counts: deleting never refunds."
    )
