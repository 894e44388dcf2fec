"""What a snapshot tells a client beyond the rows: the defaults a new agent
gets, and when a held agent starts again on its own. On a real plane over
its socket, with the clock at noon UTC and the test moving it."""

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.errors import LedgerError
from plane.wire import protocol as p
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

MIDNIGHT = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)
"""The plane's next day: the fixture's clock starts at noon on 2026-11-29."""
TWENTY_CENTS = p.Usage(input_tokens=100, output_tokens=50)


async def status(plane) -> p.Snapshot:
    client = await plane.client()
    reply = await client.request(p.Status())
    assert isinstance(reply, p.SnapshotReply)
    return reply.snapshot


def row(snapshot: p.Snapshot, name: str) -> p.AgentState:
    return next(a for a in snapshot.agents if a.name == name)


async def spend_to_the_ceiling(plane) -> None:
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(5):
        await plane.turn("demo", f"task {n}")


async def test_the_snapshot_says_what_a_new_agent_gets(start_plane):
    plane = await start_plane()
    snapshot = await status(plane)
    assert snapshot.default_model == "scripted-model"
    assert snapshot.default_limit_usd == Decimal(1)
    assert snapshot.default_model in snapshot.models


async def test_no_default_ceiling_is_said_as_none(start_plane):
    plane = await start_plane(CONFIG.replace("  limitUsd: 1\n", ""))
    snapshot = await status(plane)
    assert (snapshot.default_model, snapshot.default_limit_usd) == ("scripted-model", None)


async def test_a_held_agent_says_when_it_resumes_and_not_once_it_is_free(start_plane):
    plane = await start_plane()
    assert row(await status(plane), "demo").resumes_at is None
    await spend_to_the_ceiling(plane)
    held = row(await status(plane), "demo")
    assert (held.status, held.resumes_at) == ("held", MIDNIGHT)
    assert row(await status(plane), "scout").resumes_at is None

    client = await plane.client()
    await client.request(p.Subscribe())
    await plane.send("demo", "/limit 3")
    async for event in client.events():
        if isinstance(event, p.AgentUpdated) and event.agent.name == "demo":
            break
    assert (event.agent.status, event.agent.resumes_at) == ("idle", None)


async def test_the_day_turning_clears_it(start_plane):
    plane = await start_plane()
    await spend_to_the_ceiling(plane)
    client = await plane.client()
    await client.request(p.Subscribe())
    await plane.clock.set(MIDNIGHT)
    async for event in client.events():
        if isinstance(event, p.DayRolled):
            break
    demo = row(event.snapshot, "demo")
    assert (demo.status, demo.resumes_at) == ("idle", None)


async def test_the_plane_has_acted_on_a_days_end_once_it_has_rolled_it_not_before(start_plane):
    """What a wait for a quiet plane stands on: idle workers at 00:00 UTC
    are not quiet until the day's rows are read and everyone woken."""
    plane = await start_plane()
    await plane.quiet()
    client = await plane.client()
    await client.request(p.Subscribe())
    await plane.clock.set(MIDNIGHT)
    assert not plane.crew.caught_up(), "the day's end passed, not yet rolled"
    async with asyncio.timeout(10):
        async for event in client.events():
            if isinstance(event, p.DayRolled):
                break
    await plane.quiet()
    assert plane.crew.caught_up()


async def test_a_midnight_whose_rows_could_not_be_read_still_wakes_and_the_next_rolls(
    start_plane, monkeypatch
):
    """The store failing the day's rows at 00:00 UTC (away, say) is said in
    the log; the agents are still woken, and the plane goes on watching the
    day: the next midnight's rows reach the clients."""
    plane = await start_plane()
    read = plane.rows.snapshot
    failed: list[bool] = []

    async def away_once() -> p.Snapshot:
        if not failed:
            failed.append(True)
            raise LedgerError("The ledger could not be read (the store is away).")
        return await read()

    monkeypatch.setattr(plane.rows, "snapshot", away_once)
    client = await plane.client()
    await client.request(p.Subscribe())
    await plane.clock.set(MIDNIGHT)
    await plane.quiet()  # the day's end looked at, its rows refused, everyone woken
    await plane.clock.set(MIDNIGHT + timedelta(days=1))
    async with asyncio.timeout(10):
        async for event in client.events():
            if isinstance(event, p.DayRolled):
                break
    assert failed and event.snapshot.day == (MIDNIGHT + timedelta(days=1)).date()


@pytest.mark.parametrize("why", ["a zero ceiling", "no price"])
async def test_a_hold_the_day_does_not_end_has_no_resume_time(start_plane, why):
    plane = await start_plane()
    if why == "a zero ceiling":
        await plane.send("demo", "/limit 0")
        agent = "demo"
    else:
        await plane.runtime.api.handle(
            p.NewAgent(name="cheap", model="other-model", role="")
        )  # no price, under $1.00
        agent = "cheap"
    state = row(await status(plane), agent)
    assert (state.status, state.resumes_at) == ("held", None)


def test_frames_from_a_plane_without_the_new_fields_still_read():
    old = (
        b'{"type":"snapshot","id":1,"snapshot":{"day":"2026-11-29",'
        b'"now":"2026-11-29T12:00:00Z","resets_at":"2026-11-30T00:00:00Z",'
        b'"agents":[{"name":"demo","model":"m","provider":"x","status":"held"}],'
        b'"models":["m"]}}\n'
    )
    frame = p.decode_server_frame(old)
    assert isinstance(frame, p.SnapshotReply)
    snapshot = frame.snapshot
    assert (snapshot.default_model, snapshot.default_limit_usd) == (None, None)
    assert snapshot.agents[0].resumes_at is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("default_limit_usd", '"-1"'),
        ("default_limit_usd", '"nan"'),
        ("default_limit_usd", '"abc"'),
        ("default_model", '""'),
    ],
)
def test_bad_defaults_are_refused_with_one_error(field, value):
    line = (
        '{"type":"snapshot","id":1,"snapshot":{"day":"2026-11-29",'
        '"now":"2026-11-29T12:00:00Z","resets_at":"2026-11-30T00:00:00Z",'
        f'"agents":[],"models":["m"],"{field}":{value}}}}}\n'
    ).encode()
    with pytest.raises(p.BadFrame) as caught:
        p.decode_server_frame(line)
    assert caught.value.code == "bad_frame" and field in str(caught.value)


async def test_the_snapshot_carries_the_planes_one_command_registry(start_plane):
    plane = await start_plane()
    commands = {c.name: c for c in (await status(plane)).commands}
    assert {"limit", "new", "help"} <= set(commands)
    assert commands["new"].help.startswith("start a new session for the model")
