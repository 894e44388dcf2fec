"""The fleet's ceiling, on each engine: every agent together is held to it,
each call admitted against it in the transaction that writes it, and the
operator sets it with `/limit fleet`."""

import asyncio
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.agents import rows
from plane.clock import ManualClock
from plane.money.ledger import FleetFull, Ledger
from plane.store.postgres import PostgresDatabase
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.fixtures_postgres import open_db
from tests.support.rows_shown import row_shown
from tests.support.scripted_llm import Reply

pytestmark = pytest.mark.usefixtures("each_store")

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TWENTY_CENTS = Usage(input_tokens=100, output_tokens=50)
"""$0.20 at the test prices."""

FLEET = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 5\n") + (
    "fleet:\n  limitUsd: 0.6\n"
)
"""Each agent may spend $5, all of them together $0.60."""


async def reply(plane, text: str) -> str:
    said = await plane.send("demo", text)
    return said[-1].text


async def test_a_fleet_ceiling_of_zero_is_said_to_be_a_pause(start_plane):
    """As `/limit 0`'s reply says of an agent: the fleet's $0.00 is a pause,
    which the new day does not end, so every agent waits for the operator."""
    plane = await start_plane()
    assert await reply(plane, "/limit fleet 0") == (
        "Fleet limit set to $0.00 a day. $0.00 spent today by the fleet, of $0.00 a day. "
        "A ceiling of $0.00 is a pause: no agent takes a turn until the fleet limit is raised."
    )


async def test_limit_fleet_shows_sets_and_removes_the_fleet_ceiling(start_plane):
    plane = await start_plane()
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("demo", "one")
    await plane.turn("scout", "two")
    assert await reply(plane, "/limit fleet") == "$0.40 spent today by the fleet, against no limit."
    assert await reply(plane, "/limit fleet $50") == (
        "Fleet limit set to $50.00 a day. $0.40 spent today by the fleet, of $50.00 a day."
    )
    assert await reply(plane, "/limit fleet") == "$0.40 spent today by the fleet, of $50.00 a day."
    assert await reply(plane, "/limit fleet off") == (
        "Fleet limit removed. $0.40 spent today by the fleet, against no limit."
    )
    assert await reply(plane, "/limit") == "$0.20 spent today, of $1.00 a day.", "the agent's own"


async def test_a_new_fleet_limit_reaches_every_client_as_it_is_set(start_plane):
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.Subscribe())
    await reply(plane, "/limit fleet $50")
    await reply(plane, "/limit fleet off")
    changed: list[p.FleetChanged] = []

    async def read() -> None:
        async for event in client.events():
            if isinstance(event, p.FleetChanged):
                changed.append(event)
                if len(changed) == 2:
                    return

    await asyncio.wait_for(read(), 10)
    assert [c.limit_usd for c in changed] == [Decimal(50), None]
    snapshot = (await client.request(p.Status())).snapshot
    assert snapshot.fleet_limit_usd is None


async def test_a_bad_fleet_limit_gets_one_line_and_changes_nothing(start_plane):
    plane = await start_plane(FLEET)
    assert await reply(plane, "/limit fleet -1") == (
        "A limit can't be negative (-1)."
        " Use /limit fleet 5, /limit fleet $0.25 or /limit fleet off."
    )
    assert await reply(plane, "/limit fleet abc") == (
        "abc is not an amount. Use /limit fleet 5, /limit fleet $0.25 or /limit fleet off."
    )
    assert plane.services.gate.ceilings.fleet() == Decimal("0.6")


async def test_at_the_fleet_ceiling_no_agent_starts_and_nothing_is_lost(start_plane):
    plane = await start_plane(FLEET)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(3):
        await plane.turn("demo" if n % 2 else "scout", f"task {n}")
    calls = len(plane.llm.requests)
    said = await plane.send("demo", "anyone?")
    await plane.quiet()
    assert len(plane.llm.requests) == calls, "no call once the fleet is at its ceiling"
    assert said[0].held
    assert said[1].text == (
        "demo is not answering: the fleet has spent $0.60 today, at its $0.60 daily ceiling; "
        "it answers at 00:00 UTC, in 12h 00m, or when the fleet limit is raised."
    )
    state = await plane.rows.state("demo")
    assert (state.status, state.waiting, state.resumes_at is not None) == ("held", 1, True)
    subscription = plane.bus.subscribe()
    await plane.send("scout", "/limit fleet 2")
    await plane.until_turn_ends("demo", subscription)
    assert "anyone?" in plane.llm.requests[-1]["messages"][-1]["content"]


async def test_the_fleets_figures_never_read_at_its_ceiling_when_they_are_not(start_plane):
    """As an agent's: `$0.604 … over its $0.60`, never `$0.60 … over its $0.60`."""
    plane = await start_plane(FLEET)
    plane.llm.default_reply = Reply("done", usage=Usage(input_tokens=302, output_tokens=0))
    await plane.turn("scout", "one")
    await plane.turn("demo", "two")  # $0.302 each: the fleet at $0.604, over $0.60
    assert await reply(plane, "/limit fleet") == "$0.604 spent today by the fleet, of $0.60 a day."
    said = await plane.send("scout", "anyone?")
    assert said[1].text.startswith(
        "scout is not answering: the fleet has spent $0.604 today, over its $0.60 daily ceiling;"
    )


async def test_a_fleet_limit_set_from_the_keyboard_outlives_a_restart(start_plane):
    plane = await start_plane(FLEET)
    await plane.send("demo", "/limit fleet off")
    again = await start_plane(restart=plane)
    assert again.services.gate.ceilings.fleet() is None, "off stays off: the file's is not back"


async def test_a_call_the_fleet_cannot_afford_is_refused_and_not_written(tmp_path):
    db = await open_db(tmp_path / "plane.db")
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await ledger.open_call("a", "p", "m", Decimal("0.40"), "estimate", fleet_ceiling=Decimal(1))
        await ledger.open_call("b", "p", "m", Decimal("0.70"), "estimate", fleet_ceiling=Decimal(1))
        with pytest.raises(FleetFull) as full:
            await ledger.open_call(
                "c", "p", "m", Decimal("0.01"), "estimate", fleet_ceiling=Decimal(1)
            )
        assert full.value.spent == Decimal("1.10")
        rows = await db.fetchall("SELECT agent FROM calls ORDER BY id")
        assert [r[0] for r in rows] == ["a", "b"]
        assert await ledger.budget_spend.fleet_today() == Decimal("1.10")
    finally:
        await db.close()


@pytest.mark.parametrize("each_store", ["postgresql"], indirect=True)
async def test_planes_admitting_at_once_pass_the_fleet_ceiling_by_no_call(postgres_url):
    """Three planes' ledgers (connections of their own) open calls at once,
    $0.10 each against a $1 fleet: exactly ten are admitted, whatever the
    interleaving, because each admission waits for the fleet row."""
    dbs = [await PostgresDatabase.connect(postgres_url) for _ in range(3)]
    try:
        ledgers = [Ledger(db, ManualClock(NOON), plane=f"plane-{n}") for n, db in enumerate(dbs)]

        async def call(ledger: Ledger, n: int) -> bool:
            try:
                await ledger.open_call(
                    f"agent-{n}", "p", "m", Decimal("0.10"), "estimate", fleet_ceiling=Decimal(1)
                )
            except FleetFull:
                return False
            return True

        admitted = await asyncio.gather(*(call(ledgers[n % 3], n) for n in range(60)))
        assert sum(admitted) == 10
        assert await ledgers[0].budget_spend.fleet_today() == Decimal("1.00")
    finally:
        for db in dbs:
            await db.close()


@pytest.mark.parametrize("at_once", [rows.ROWS_AT_ONCE, 1], ids=["one batch", "a row a batch"])
async def test_a_fleet_limit_shows_again_the_rows_it_holds_and_frees(
    start_plane, monkeypatch, at_once
):
    """Typed in demo's conversation, the fleet's limit holds scout too, with
    nothing waiting for it: its row says so at once, and again once the
    limit is removed (before, only demo's row was shown again) — whether
    the rows are shown in one batch or in several."""
    monkeypatch.setattr(rows, "ROWS_AT_ONCE", at_once)
    plane = await start_plane(FLEET)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    await plane.turn("demo", "one")
    await plane.quiet()
    subscription = plane.bus.subscribe()
    await reply(plane, "/limit fleet 0.10")
    held = await row_shown(subscription, "scout", lambda row: row.status == "held")
    assert held.hold_reason == "fleet"
    await reply(plane, "/limit fleet off")
    await row_shown(subscription, "scout", lambda row: row.status == "idle")
