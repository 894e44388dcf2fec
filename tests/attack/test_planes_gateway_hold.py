"""A gateway agent held on one plane of a fleet is refused on every plane:
two planes in this process on one real PostgreSQL, each with its gateway
on a real port. A gateway agent has no lease; its client calls whichever
plane it reached (behind a load balancer, say), so a hold that only the
plane which made it knows lets the client go on spending through the other.

The loop guard holds aider on plane A (its client sent the same request
once through B, then four times through A: the fleet counts five): its next
call through B is refused with A's sentence, nothing sent upstream, nothing
charged, the hold said once in its conversation; the operator's resume
through A lets B serve it again. The operator's own way to stop a gateway
agent (`/limit 0`; a pause is refused, there is no turn to pause) holds on
B too. A hold whose notice was lost is read at B's next renewal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pytest

from plane.agents.guard import Loop
from plane.daemon import fleet
from plane.errors import InvalidRequest
from plane.wire import protocol as p
from tests.support.fixtures_plane import NOON, RunningPlane
from tests.support.gateway_planes import (
    HELD,
    TOLD_S,
    call,
    refused_on,
    two_planes,
    two_running,
    until_held,
)
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Two planes whose renewals come every 20 s: a test done within
    `TOLD_S` of a hold was told by the notice alone."""
    async with two_running(tmp_path, scripted_llm, postgres_url, monkeypatch, 60.0) as planes:
        yield planes


async def test_a_loop_held_on_one_plane_is_refused_on_the_other_until_resumed(
    planes: tuple[RunningPlane, RunningPlane, str], scripted_llm: ScriptedLLM
) -> None:
    a, b, key = planes
    assert (await call(b, key)).status_code == 200, "served through B before any hold"
    for _ in range(4):  # the fleet's count: B's call is the first of five
        assert (await call(a, key)).status_code == 200
    on_a = await call(a, key)
    assert on_a.status_code == 400 and HELD in on_a.text, on_a.text

    await until_held(b, True)
    on_b = await refused_on(b, key, scripted_llm)
    assert on_b.json() == on_a.json(), "the same refusal as the plane that held it"
    said = [m.text for m in await b.services.conversation.history("aider", 50) if m.kind == "plane"]
    assert [s for s in said if s.startswith(HELD)] == [said[-1]], "the hold said once"

    reply = await a.runtime.api.handle(p.PauseAgent(agent="aider", paused=False))
    assert reply.agent.status != "held"
    await until_held(b, False)
    sent = len(scripted_llm.requests)
    assert (await call(b, key)).status_code == 200, "served through B again once resumed"
    assert len(scripted_llm.requests) == sent + 1


async def test_the_operators_stop_through_one_plane_refuses_on_the_other(
    planes: tuple[RunningPlane, RunningPlane, str], scripted_llm: ScriptedLLM
) -> None:
    a, b, key = planes
    with pytest.raises(InvalidRequest, match="there is no turn to pause; /limit 0 refuses"):
        await a.runtime.api.handle(p.PauseAgent(agent="aider"))

    await a.runtime.api.handle(p.Send(agent="aider", text="/limit 0"))

    async def limited() -> None:
        while b.services.gate.ceilings.of("aider") != 0:  # noqa: ASYNC110 - B's listener moves it
            await asyncio.sleep(0.05)

    await asyncio.wait_for(limited(), TOLD_S)
    answer = await refused_on(b, key, scripted_llm)
    assert "its daily ceiling is $0.00" in answer.text, answer.text


async def test_a_hold_whose_notice_was_lost_is_read_at_the_next_renewal(
    tmp_path: Path, scripted_llm: ScriptedLLM, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hold written to the store with no notice sent (as if it were
    lost): B reads it at a renewal (every half second here), not never."""
    a, b, key = await two_planes(tmp_path, scripted_llm, postgres_url, monkeypatch, 1.5)
    try:
        loop = Loop("request", 5, Decimal("0.05"), NOON)
        await a.services.roster.change("aider", loop=loop)
        await until_held(b, True, within=6 * fleet.LEASE_S)
        answer = await refused_on(b, key, scripted_llm)
        assert HELD in answer.text, answer.text
    finally:
        scripted_llm.hang_up()
        await b.stop()
        await a.stop()
