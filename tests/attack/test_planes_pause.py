"""The operator's pause, through any plane of a fleet sharing one PostgreSQL:
a TUI attached to plane B pauses an agent plane A runs, and A starts no new
turn of it (what is sent meanwhile waits, nothing lost) until it is resumed,
through either plane; then A answers what waited. The pause's line is said
once on the fleet. (Before, A never read the pause again: it went on
answering, and a pause made on A could not be lifted through B.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plane.agents import notices
from plane.daemon import fleet
from plane.wire import protocol as p
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_members import a_and_b
from tests.support.looping import CENT
from tests.support.scripted_llm import Reply

LEASE_S = 3.0
PAUSED = notices.paused_now(None, False).split(";")[0]
"""The start of the pause's line (what follows says the ceiling)."""


def answers_ok(body: dict, serial: int) -> Reply:
    return Reply("ok", usage=CENT)


def a_fleet(tmp_path: Path, scripted_llm, monkeypatch, postgres_url):
    """Planes A and B on one store, A running `demo`, which answers "ok"
    (`async with`: both stopped once done)."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    scripted_llm.responder = answers_ok
    config = scripted_config("  demo: {}\n", limit_usd="5")
    return a_and_b(tmp_path, scripted_llm, config, 10 * LEASE_S)


async def texts(plane: RunningPlane) -> list[str]:
    return [m.text for m in await plane.services.conversation.history("demo", 100)]


async def pause(plane: RunningPlane, paused: bool) -> None:
    """The operator pauses (or resumes) demo through `plane`, as the TUI does."""
    client = await plane.client()
    await client.request(p.PauseAgent(agent="demo", paused=paused))


async def shown_as(plane: RunningPlane, subscription, status: str, within: float) -> None:
    """Until `plane` shows its clients demo's row as `status`."""

    async def shown() -> None:
        while True:
            event = await subscription.next()
            if isinstance(event, p.AgentUpdated) and event.agent.name == "demo":
                if event.agent.status == status:
                    return

    await asyncio.wait_for(shown(), within)


async def waits_then_answers(a: RunningPlane, b: RunningPlane, resume_through: RunningPlane):
    """Paused: A starts no turn for a message sent to it, which waits; resumed
    through `resume_through`, A answers it."""
    asked = len(a.llm.requests)
    await a.send("demo", "hello")
    await a.quiet()
    said = await texts(a)
    quiet = ["hello", notices.paused_by_operator("demo")]  # as on one plane
    assert said[-2:] == quiet, f"paused, A still answered: {said[-3:]}"
    assert len(a.llm.requests) == asked, "paused, A still called the model"
    on_a = a.bus.subscribe()
    await pause(resume_through, False)
    try:  # what waited through the pause is answered, on A
        answered = await a.until_turn_ends("demo", on_a, 10 * LEASE_S)
    except TimeoutError:
        pytest.fail("resumed, the agent never answered what waited")
    assert [m.text for m in answered if m.kind == "agent"] == ["ok"]
    said = await texts(a)
    assert sum(t.startswith(PAUSED) for t in said) == 1, said
    assert said.count(notices.RESUMED) == 1, said


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_agent_paused_through_another_plane_starts_no_turn_until_resumed_there(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    async with a_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.turn("demo", "hello")  # it runs on A, and answers
        await pause(b, True)
        await waits_then_answers(a, b, resume_through=b)


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_agent_paused_where_it_runs_is_resumed_through_another_plane(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    async with a_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.turn("demo", "hello")
        await pause(a, True)
        await waits_then_answers(a, b, resume_through=b)


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_pause_through_another_plane_is_shown_by_the_one_that_runs_it(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """With nothing waiting, A still shows its clients the pause B made, and
    the resume: its TUIs would show the agent as it was until its next message."""
    async with a_fleet(tmp_path, scripted_llm, monkeypatch, postgres_url) as (a, b):
        await a.turn("demo", "hello")
        await a.quiet()
        on_a = a.bus.subscribe()
        await pause(b, True)
        try:
            await shown_as(a, on_a, "paused", 3 * LEASE_S)
        except TimeoutError:
            pytest.fail("paused through B, A's clients never saw it paused")
        await pause(b, False)
        try:
            await shown_as(a, on_a, "idle", 3 * LEASE_S)
        except TimeoutError:
            pytest.fail("resumed through B, A's clients never saw it resumed")
