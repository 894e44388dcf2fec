"""Groups of agents, on each engine: a group's ceiling sits between its
agents' and the fleet's, each call is admitted against it in the
transaction that writes it, the operator sets it with `/limit group`, and an
agent may not."""

import asyncio
import logging
import threading
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.money.budgets import Budget
from plane.money.ledger import FleetFull, GroupFull, Ledger, TagFull
from plane.store.migrations import MIGRATIONS
from plane.store.postgres import PostgresDatabase
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.command import plane_cli_async
from tests.support.fixtures_plane import CONFIG
from tests.support.fixtures_postgres import open_db
from tests.support.old_stores import sqlite_before
from tests.support.rows_shown import row_shown
from tests.support.scripted_llm import Reply

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TWENTY_CENTS = Usage(input_tokens=100, output_tokens=50)
"""$0.20 at the test prices."""

GROUPED = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 5\n").replace(
    "  scout: {}\n", "  scout: {}\n  poet: {}\n"
) + ("groups:\n  research:\n    limitUsd: 0.6\n    agents: [scout, poet]\n")
"""Each agent may spend $5; scout and poet together $0.60; demo is in no group."""

RESEARCH = Budget(
    "research",
    Decimal(1),
)


async def reply(plane, agent: str, text: str) -> str:
    said = await plane.send(agent, text)
    return said[-1].text


async def test_at_the_group_ceiling_its_agents_are_held_and_the_others_are_not(start_plane):
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(3):
        await plane.turn("scout" if n % 2 else "poet", f"task {n}")
    calls = len(plane.llm.requests)
    said = await plane.send("poet", "anyone?")
    await plane.quiet()
    assert len(plane.llm.requests) == calls, "no call once the group is at its ceiling"
    assert said[0].held
    assert said[1].text == (
        "poet is held: its group research has spent $0.60 of $0.60 today; it answers at "
        "00:00 UTC, in 12h 00m, or when the group limit is raised."
    )
    state = await plane.rows.state("poet")
    assert (state.status, state.waiting, state.resumes_at is not None) == ("held", 1, True)
    await plane.turn("demo", "not in the group")
    assert len(plane.llm.requests) == calls + 1, "an agent in no group is not held by it"
    subscription = plane.bus.subscribe()
    await plane.send("demo", "/limit group research 2")
    await plane.until_turn_ends("poet", subscription)
    assert "anyone?" in plane.llm.requests[-1]["messages"][-1]["content"]


async def test_limit_group_shows_sets_and_removes_a_groups_ceiling(start_plane):
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("scout", "one")
    await plane.turn("demo", "two")
    assert await reply(plane, "demo", "/limit group research") == (
        "$0.20 spent today by group research, of $0.60 a day."
    )
    assert await reply(plane, "demo", "/limit group") == ("Groups today: research $0.20 of $0.60.")
    assert await reply(plane, "poet", "/limit group research $10") == (
        "Group research limit set to $10.00 a day. $0.20 spent today by group research, "
        "of $10.00 a day."
    )
    assert await reply(plane, "poet", "/limit group research off") == (
        "Group research limit removed. $0.20 spent today by group research, against no limit."
    )
    assert await reply(plane, "demo", "/limit group nope 5") == (
        "nope is not a group. Groups: research."
    )
    assert await reply(plane, "demo", "/limit group research -1") == (
        "A limit can't be negative (-1). Use /limit group research 5, "
        "/limit group research $0.25 or /limit group research off."
    )
    assert plane.services.gate.ceilings.groups.ceiling("research") is None, "off, unchanged"
    again = await start_plane(restart=plane)
    assert again.services.gate.ceilings.groups.ceiling("research") is None, (
        "off stays off across a restart: the file's value does not come back"
    )


async def test_a_group_ceiling_of_zero_is_said_to_be_a_pause(start_plane):
    """As `/limit 0`'s reply says of an agent: a group's $0.00 is a pause,
    which the new day does not end, so its agents wait for the operator."""
    plane = await start_plane(GROUPED)
    assert await reply(plane, "demo", "/limit group research 0") == (
        "Group research limit set to $0.00 a day. $0.00 spent today by group research, of "
        "$0.00 a day. A ceiling of $0.00 is a pause: none of group research's agents takes a "
        "turn until the group limit is raised."
    )


async def test_an_agent_may_not_set_its_groups_ceiling_and_is_handed_the_line(start_plane):
    plane = await start_plane(GROUPED)
    ceilings = plane.services.gate.ceilings
    from plane.agents.commands import ask_limit

    for asked in ("group research 0.10", "group research off", "fleet 0.01"):
        _, said = await ask_limit(plane.services, "poet", asked)
        assert said == (
            "This agent asked to set a ceiling that is not its own; an agent can only ask to "
            f"be held to less itself: /limit {asked}, if you meant it."
        )
    assert ceilings.groups.ceiling("research") == Decimal("0.6")
    assert ceilings.fleet() is None
    assert ceilings.of("poet") == Decimal(5)


async def test_the_snapshot_and_plane_status_list_the_groups(start_plane):
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("poet", "one")
    client = await plane.client()
    snapshot = (await client.request(p.Status())).snapshot
    assert [(g.name, g.spend_today_usd, g.limit_usd, g.agents) for g in snapshot.groups] == [
        ("research", Decimal("0.2"), Decimal("0.6"), ["poet", "scout"])
    ]


async def test_a_call_its_group_cannot_afford_is_refused_and_not_written(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await ledger.open_call("a", "p", "m", Decimal("0.40"), "estimate", group=RESEARCH)
        await ledger.open_call("c", "p", "m", Decimal("5"), "estimate")  # in no group
        await ledger.open_call("b", "p", "m", Decimal("0.70"), "estimate", group=RESEARCH)
        with pytest.raises(GroupFull) as full:
            await ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate", group=RESEARCH)
        assert (full.value.spent, full.value.name) == (Decimal("1.10"), "research")
        rows = await db.fetchall("SELECT agent, agent_group FROM calls ORDER BY id")
        assert [tuple(r) for r in rows] == [("a", "research"), ("c", None), ("b", "research")]
        assert await ledger.budget_spend.group_today("research") == Decimal("1.10")
    finally:
        await db.close()


async def test_the_fleet_binds_before_a_group_it_is_tighter_than(tmp_path):
    """The chain agent ≤ group ≤ fleet: a call is refused by whichever is reached."""
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await ledger.open_call("c", "p", "m", Decimal("0.90"), "estimate")
        with pytest.raises(FleetFull):
            await ledger.open_call(
                "a", "p", "m", Decimal("0.20"), "estimate", fleet_ceiling=Decimal("0.9"),
                group=RESEARCH,
            )  # fmt: skip
    finally:
        await db.close()


@pytest.mark.parametrize("shared", ["group", "fleet"])
async def test_a_refusal_says_whether_only_the_calls_in_flight_made_it(tmp_path, shared):
    """A call in flight counts the most it may cost: a call refused beside
    it is refused by it alone while what was spent is under the ceiling (it
    may go once that call settles), and by what was spent once that is not."""
    budgets = {"group": RESEARCH} if shared == "group" else {"fleet_ceiling": Decimal(1)}
    refused = GroupFull if shared == "group" else FleetFull
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        flying = await ledger.open_call("a", "p", "m", Decimal("1.5"), "estimate", **budgets)
        with pytest.raises(refused) as beside:
            await ledger.open_call("b", "p", "m", Decimal("1.5"), "estimate", **budgets)
        assert (beside.value.spent, beside.value.in_flight) == (Decimal("1.5"), Decimal("1.5"))
        assert beside.value.by_calls_in_flight
        await ledger.settle(flying, Usage(input_tokens=1), Decimal("0.2"), "test")
        settling = await ledger.open_call("c", "p", "m", Decimal("0.1"), "estimate", **budgets)
        await ledger.open_call("b", "p", "m", Decimal("1.5"), "estimate", **budgets)
        await ledger.settle(settling, Usage(input_tokens=1), Decimal("0.9"), "test")
        with pytest.raises(refused) as spent:
            await ledger.open_call("a", "p", "m", Decimal("1.5"), "estimate", **budgets)
        assert spent.value.in_flight == Decimal("1.5")
        assert not spent.value.by_calls_in_flight
    finally:
        await db.close()


@pytest.mark.parametrize("by", ["group", "tag"])
async def test_settles_in_the_same_batch_count_against_the_group_or_tag(tmp_path, by):
    """A settle earlier in the admission's batch moved spend not yet in the
    `group_spend` or `tag_spend` table: the group's or tag's sum counts it.
    The writer is held busy so that both land in one batch, the admission
    last (it is `late`)."""
    group = RESEARCH if by == "group" else None
    tag = Budget("ticket-7", Decimal(1)) if by == "tag" else None
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        first = await ledger.open_call(
            "a", "p", "m", Decimal("0.10"), "estimate", group=group, tag=tag
        )
        await ledger.today()
        release = threading.Event()
        busy = asyncio.ensure_future(db.write(lambda conn: release.wait(10)))
        await asyncio.sleep(0.05)  # the writer is inside `busy`
        admission = asyncio.ensure_future(
            ledger.open_call("b", "p", "m", Decimal("0.10"), "estimate", group=group, tag=tag)
        )
        settle = asyncio.ensure_future(
            ledger.settle(first, Usage(input_tokens=1), Decimal("1.00"), "test")
        )
        await asyncio.sleep(0.05)  # both queued behind it
        release.set()
        await busy
        await settle
        with pytest.raises(GroupFull if by == "group" else TagFull):
            await admission
    finally:
        await db.close()


@pytest.mark.parametrize("each_store", ["postgresql"], indirect=True)
async def test_planes_admitting_at_once_pass_a_group_ceiling_by_no_call(postgres_url):
    """Three planes' ledgers open calls of a group's three agents at once
    (each agent's on every plane), $0.10 each against its $1, beside calls
    of another group: exactly ten of the group's are admitted, and every
    call of the other. Without the lock, 11 to 13."""
    dbs = [await PostgresDatabase.connect(postgres_url) for _ in range(3)]
    group = Budget("research", Decimal(1))
    other = Budget("ops", Decimal(100))
    clock = ManualClock(NOON)
    try:
        ledgers = [Ledger(db, clock) for db in dbs]
        for n, ledger in enumerate(ledgers):
            ledger.plane = f"plane-{n}"
        in_flight: list[tuple[Ledger, int]] = []

        async def call(ledger: Ledger, agent: str, budget: Budget) -> bool:
            try:
                opened = await ledger.open_call(
                    agent, "p", "m", Decimal("0.10"), "estimate", group=budget
                )
            except GroupFull:
                return False
            in_flight.append((ledger, opened))
            return True

        for day in range(4):  # a race missed once is caught on another day
            await clock.set(NOON + timedelta(days=day))
            calls = [call(ledgers[n % 3], f"a{n // 3 % 3}", group) for n in range(60)]
            calls += [call(ledgers[n % 3], f"o{n // 3 % 3}", other) for n in range(30)]
            admitted = await asyncio.gather(*calls)
            assert (sum(admitted[:60]), sum(admitted[60:])) == (10, 30), f"day {day}"
            assert await ledgers[1].budget_spend.group_today("research") == Decimal("1.00")
            for ledger, opened in in_flight:  # settled: none in flight at midnight
                await ledger.settle(opened, Usage(), Decimal(0), "table")
            in_flight.clear()
    finally:
        for db in dbs:
            await db.close()


async def test_the_fleets_days_stack_by_group_and_the_day_by_tool(start_plane):
    """Through the socket, as the spend screen asks: each group a layer,
    agents in none one layer; the day by tool adds up to the day."""
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("poet", "one")
    await plane.turn("demo", "two")
    await plane.turn("scout", "three")
    client = await plane.client()
    stack = await client.request(p.SpendStack(by="group"))
    assert [(s.label, sum(d.spent_usd for d in s.days)) for s in stack.series] == [
        ("research", Decimal("0.4")),
        ("(none)", Decimal("0.2")),
    ]
    history = await client.request(p.SpendHistory())
    tools = {point.label: point.spent_usd for point in history.tools}
    assert set(tools) == {"(prompt)", "(messages)", "(answers)"}
    assert sum(tools.values()) == Decimal("0.6")


async def test_an_agent_whose_group_is_full_only_with_calls_in_flight_waits_for_them_untold(
    start_plane,
):
    """A call in flight counts at its estimate (its worst case, here over
    the group's ceiling): another agent of the group is not held for it (the
    group spent nothing yet), and is told nothing; its call waits for the one
    in flight, and it answers when that settles far cheaper."""
    plane = await start_plane(GROUPED.replace("limitUsd: 0.6", "limitUsd: 1.5"))
    arrived = threading.Event()

    def answer(body: dict, serial: int) -> Reply:
        if serial > 1:
            return Reply("done", usage=TWENTY_CENTS)
        arrived.set()
        return Reply("slow", usage=TWENTY_CENTS, delay_s=1.0)

    plane.llm.responder = answer
    first = plane.bus.subscribe()
    await plane.send("scout", "the slow one")
    assert await asyncio.to_thread(arrived.wait, 10)  # the call is in flight
    second = plane.bus.subscribe()
    said = await plane.send("poet", "and me")
    assert [m.kind for m in said] == ["operator"] and not said[0].held
    await plane.until_turn_ends("scout", first)
    answered = await plane.until_turn_ends("poet", second, within=10)
    assert [(m.kind, m.text) for m in answered if m.kind in ("agent", "plane")] == [
        ("agent", "done")
    ]
    assert len(plane.llm.requests) == 2


async def test_the_command_line_sets_a_groups_ceiling_and_plane_status_lists_it(start_plane):
    plane = await start_plane(GROUPED)
    home = plane.home.root
    sent = await plane_cli_async(home, "send", "demo", "/limit group research 2")
    assert sent.returncode == 0, sent.stderr
    assert "Group research limit set to $2.00 a day." in sent.stdout
    status = await plane_cli_async(home, "status")
    assert "  group research  $0.00 of $2.00  poet, scout" in status.stdout.splitlines()
    refused = await plane_cli_async(home, "send", "demo", "/limit group research x")
    assert refused.returncode == 1


POET_MOVED_OUT = GROUPED.replace("agents: [scout, poet]", "agents: [scout]")
DEMO_MOVED_IN = GROUPED.replace("agents: [scout, poet]", "agents: [scout, poet, demo]")


async def group_figures(plane, group: str) -> list[Decimal]:
    """What the group spent today as each surface says it: `/limit group`,
    the snapshot's row, the spend screen's layer, and its calls in the ledger."""
    client = await plane.client()
    standing = await reply(plane, "demo", f"/limit group {group}")
    said = Decimal(standing.split(" spent today")[0].lstrip("$"))
    snapshot = (await client.request(p.Status())).snapshot
    row = next(g.spend_today_usd for g in snapshot.groups if g.name == group)
    stack = await client.request(p.SpendStack(by="group", top=5))
    layer = next(s.days[-1].spent_usd for s in stack.series if s.label == group)
    rows = await plane.db.fetchall(
        "SELECT cost_usd FROM calls WHERE agent_group = ? AND status <> 'failed'", group
    )
    ledger = sum((Decimal(cost) for (cost,) in rows), Decimal(0))
    return [said, row, layer, ledger]


async def test_an_agent_moved_out_of_its_group_leaves_its_spend_with_the_group(start_plane):
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("poet", "one")
    await plane.turn("poet", "two")
    plane = await start_plane(POET_MOVED_OUT, restart=plane)
    assert await group_figures(plane, "research") == [Decimal("0.4")] * 4
    await plane.turn("scout", "three")
    await sent_while_held(plane, "scout", "four", "the group's $0.60 was spent: scout is held")
    assert await group_figures(plane, "research") == [Decimal("0.6")] * 4


async def test_an_agent_moved_into_a_group_brings_none_of_its_earlier_spend(start_plane):
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("demo", "one")
    await plane.turn("scout", "two")
    plane = await start_plane(DEMO_MOVED_IN, restart=plane)
    assert await group_figures(plane, "research") == [Decimal("0.2")] * 4
    await plane.turn("demo", "three")
    await plane.turn("poet", "four")
    await sent_while_held(plane, "demo", "five", "the group's $0.60 was spent: demo is held")
    assert await group_figures(plane, "research") == [Decimal("0.6")] * 4
    assert await plane.services.ledger.spend_today("demo") == Decimal("0.4")


async def groups_of_calls(db) -> dict[tuple[str, str], Decimal]:
    """Each (day, group)'s spend on closed calls, summed from the calls themselves."""
    sums: dict[tuple[str, str], Decimal] = {}
    closed = "SELECT day, agent_group, cost_usd FROM calls WHERE status <> 'pending'"
    for day, group, cost in await db.fetchall(closed + " AND agent_group IS NOT NULL"):
        sums[(day, group)] = sums.get((day, group), Decimal(0)) + Decimal(cost)
    return {key: total for key, total in sums.items() if total}


async def group_spend_table(db) -> dict[tuple[str, str], Decimal]:
    """The group sums the ledger keeps (a sum moved back to zero may stay a row)."""
    rows = await db.fetchall("SELECT day, agent_group, cost_usd FROM group_spend")
    return {(day, group): Decimal(cost) for day, group, cost in rows if Decimal(cost)}


async def test_the_group_sums_are_the_calls_summed_through_every_change(tmp_path):
    """A group's calls opened, settled across midnight, failed, interrupted by
    the operator and cut by a stop: after each, the group's sums kept beside
    the calls are its calls summed, and `group_today` is what they say.
    Every call still in flight at midnight is the next day's."""
    clock = ManualClock(NOON)
    db = await open_db(tmp_path / "plane.db")
    ledger = Ledger(db, clock)
    first = await ledger.open_call("a", "p", "m", Decimal("0.05"), "estimate", group=RESEARCH)
    second = await ledger.open_call("b", "p", "m", Decimal("0.30"), "estimate", group=RESEARCH)
    await ledger.open_call("b", "p", "m", Decimal("0.11"), "estimate", group=RESEARCH)
    await ledger.open_call("c", "p", "m", Decimal("0.07"), "estimate", group=RESEARCH)
    assert await ledger.budget_spend.group_today("research") == Decimal("0.53")
    await clock.advance(timedelta(hours=12))  # the response arrives on the next day
    await ledger.settle(first, TWENTY_CENTS, Decimal("0.0123"), "table")
    await ledger.fail(second)
    assert (await ledger.interrupt_open("b")).estimate_usd == Decimal("0.11")
    assert await group_spend_table(db) == await groups_of_calls(db)
    assert await ledger.budget_spend.group_today("research") == Decimal("0.1923"), "c's in flight"
    await db.close()
    db = await open_db(tmp_path / "plane.db")
    try:
        again = Ledger(db, clock)
        assert (await again.recover())["c"].estimate_usd == Decimal("0.07")
        assert await group_spend_table(db) == await groups_of_calls(db)
        assert await group_spend_table(db) == {("2026-11-30", "research"): Decimal("0.1923")}
        assert (await again.budget_spend.groups_today()).spent == {"research": Decimal("0.1923")}
    finally:
        await db.close()


@pytest.mark.parametrize("each_store", ["sqlite"], indirect=True)
async def test_a_ledger_from_before_the_group_sums_is_summed_exactly(tmp_path):
    path = tmp_path / "plane.db"
    step = next(n for n, script in enumerate(MIGRATIONS) if "CREATE TABLE group_spend" in script)
    old = sqlite_before(path, step)
    costs = ["0.1", "0.2", "0.000000123456789"] * 10  # 0.1 + 0.2 is not 0.3 in floats
    old.executemany(
        "INSERT INTO calls (agent, day, at, provider, model, cost_usd, price_source, status,"
        " agent_group) VALUES ('a', '2026-11-29', '', 'p', 'm', ?, 'table', 'settled', 'research')",
        [(c,) for c in costs],
    )
    old.commit()
    old.close()
    db = await open_db(path)
    try:
        ledger = Ledger(db, ManualClock(NOON))
        assert await ledger.budget_spend.group_today("research") == Decimal("3.00000123456789")
        assert await group_spend_table(db) == await groups_of_calls(db)
    finally:
        await db.close()


NO_GROUPS = GROUPED.split("groups:\n")[0]
"""GROUPED with its group removed from the file."""


async def test_a_group_removed_keeps_what_it_spent_and_shows_no_budget(start_plane):
    """Its spend is still money spent (the ledger, the spend screen); no
    surface shows it as a budget; re-created the same day, it comes back
    with the day's spend, so removing a group does not reset its ceiling."""
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("poet", "one")
    await plane.turn("scout", "two")
    plane = await start_plane(NO_GROUPS, restart=plane)
    client = await plane.client()
    assert (await client.request(p.Status())).snapshot.groups == []
    assert await reply(plane, "demo", "/limit group") == (
        "There are no groups (groups: in agents.yaml)."
    )
    assert await reply(plane, "demo", "/limit group research") == (
        "research is not a group. There are no groups (groups: in agents.yaml)."
    )
    stack = await client.request(p.SpendStack(by="group", top=5))
    assert [(s.label, s.days[-1].spent_usd) for s in stack.series] == [("research", Decimal("0.4"))]
    await plane.turn("poet", "three")  # in no group: not the group's
    plane = await start_plane(GROUPED, restart=plane)
    assert await group_figures(plane, "research") == [Decimal("0.4")] * 4
    await plane.turn("scout", "four")
    await sent_while_held(plane, "poet", "five", "the group's $0.60 was spent: poet is held")


async def test_a_group_removed_from_the_file_loses_the_operators_ceiling(start_plane, caplog):
    """As a deleted agent's: a group of that name made again later starts
    from the file's ceiling, not from a value (or an "off") set for the one
    removed; the log says it was dropped."""
    caplog.set_level(logging.INFO, logger="plane.money.groups")
    plane = await start_plane(GROUPED)
    await plane.send("demo", "/limit group research off")
    plane = await start_plane(NO_GROUPS, restart=plane)
    plane = await start_plane(GROUPED, restart=plane)
    assert await reply(plane, "demo", "/limit group research") == (
        "$0.00 spent today by group research, of $0.60 a day."
    )
    [dropped] = [r.getMessage() for r in caplog.records if r.name == "plane.money.groups"]
    assert dropped == (
        "group research is no longer in agents.yaml: its /limit group value (off) is dropped"
    )


async def test_a_group_kept_in_the_file_keeps_the_operators_ceiling_across_a_restart(
    start_plane, caplog
):
    caplog.set_level(logging.INFO, logger="plane.money.groups")
    plane = await start_plane(GROUPED)
    await plane.send("demo", "/limit group research 2")
    plane = await start_plane(restart=plane)
    assert await reply(plane, "demo", "/limit group research") == (
        "$0.00 spent today by group research, of $2.00 a day."
    )
    assert not [r for r in caplog.records if r.name == "plane.money.groups"]


async def sent_while_held(plane, agent: str, text: str, why: str) -> None:
    """`text` sent to `agent`, held: kept, and no call made for it once the
    plane is quiet (`why` says why not)."""
    calls = len(plane.llm.requests)
    said = await plane.send(agent, text)
    await plane.quiet()
    assert len(plane.llm.requests) == calls, why
    assert said[0].held


async def test_a_group_limit_shows_again_the_rows_of_its_agents(start_plane):
    """Typed in demo's conversation, research's limit holds scout, with
    nothing waiting for it: its row says so at once, and again once the
    limit is removed (before, only demo's row was shown again)."""
    plane = await start_plane(GROUPED)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("poet", "one")
    await plane.quiet()
    subscription = plane.bus.subscribe()
    await reply(plane, "demo", "/limit group research 0.10")
    held = await row_shown(subscription, "scout", lambda row: row.status == "held")
    assert held.hold_reason == "group"
    await reply(plane, "demo", "/limit group research off")
    await row_shown(subscription, "scout", lambda row: row.status == "idle")
