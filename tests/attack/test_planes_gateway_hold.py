"""A gateway agent held on one plane of a fleet is refused on every plane:
two planes in this process on one real PostgreSQL, each with its gateway
on a real port. A gateway agent has no lease; its client calls whichever
plane it reached (behind a load balancer, say), so a hold that only the
plane which made it knows lets the client go on spending through the other.

The loop guard holds aider on plane A (its client sent the same request
five times through A): its next call through B is refused with A's
sentence, nothing sent upstream, nothing charged, the hold said once in its
conversation; the operator's resume through A lets B serve it again. The
operator's own way to stop a gateway agent (`/limit 0`; a pause is refused,
there is no turn to pause) holds on B too. A hold whose notice was lost
is read at B's next renewal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from plane.agents.guard import Loop
from plane.daemon import fleet
from plane.errors import InvalidRequest
from plane.gateway.keys import Keys
from plane.wire import protocol as p
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import NOON, RunningPlane, launch
from tests.support.local_http import local_client
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TOLD_S = 6.0
"""How soon the other plane refuses once the hold is made: well within a
renewal (`LEASE_S / 3`), so only the notice can have told it."""
SAME = {
    "model": "scripted-model",
    "messages": [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hello. What shall I look at?"},
        {"role": "user", "content": "the open issues"},
    ],
}
"""A conversation under way, sent again and again: a client going round."""
HELD = "aider is held: its client sent the same request 5 times in a row"


async def two_planes(
    root: Path, llm: ScriptedLLM, url: str, monkeypatch: pytest.MonkeyPatch, lease_s: float
) -> tuple[RunningPlane, RunningPlane, str]:
    """Planes A and B on the store at `url`, each with its gateway listening,
    and aider's key, which both read (the same file in each home)."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", lease_s)
    config = GATEWAY.replace("{anthropic_url}", llm.anthropic_url)
    on = ("127.0.0.1", 0)
    a = await launch(root / "a", llm, config, http=on)
    try:
        b = await launch(root / "b", llm, config, http=on)
    except BaseException:
        await a.stop()
        raise
    key = Keys(a.home.gateway_keys).make("aider")
    b.home.gateway_keys.write_bytes(a.home.gateway_keys.read_bytes())
    return a, b, key


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Two planes whose renewals come every 20 s: a test done within
    `TOLD_S` of a hold was told by the notice alone."""
    a, b, key = await two_planes(tmp_path, scripted_llm, postgres_url, monkeypatch, 60.0)
    try:
        yield a, b, key
    finally:
        scripted_llm.hang_up()
        await b.stop()
        await a.stop()


async def call(plane: RunningPlane, key: str, body: dict[str, Any] = SAME) -> httpx.Response:
    """One call of aider's client (Chat Completions) through `plane`'s gateway."""
    async with local_client(base_url=f"http://127.0.0.1:{plane.plane.http_port}") as http:
        return await http.post(
            "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
        )


async def until_held(plane: RunningPlane, held: bool, within: float = TOLD_S) -> None:
    """Until `plane`'s row of aider says it is held by the loop guard (or not)."""

    async def look() -> None:
        while True:
            state = await plane.rows.state("aider")
            if (state.status == "held" and state.hold_reason == "loop") == held:
                return
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(look(), within)
    except TimeoutError:
        said = "held" if held else "no longer held"
        message = f"the other plane's row of aider is not {said} after {within} s"
        raise AssertionError(message) from None


async def charged(plane: RunningPlane) -> int:
    """The calls in the fleet's ledger today."""
    return len(await plane.services.ledger.entries(plane.clock.now().date()))


async def refused_on(plane: RunningPlane, key: str, llm: ScriptedLLM) -> httpx.Response:
    """aider's next call through `plane`: refused, nothing sent upstream or charged."""
    sent, counted = len(llm.requests), await charged(plane)
    answer = await call(plane, key)
    assert answer.status_code == 400, answer.text
    assert len(llm.requests) == sent, "the refused call reached the provider"
    assert await charged(plane) == counted, "the refused call was charged"
    return answer


async def test_a_loop_held_on_one_plane_is_refused_on_the_other_until_resumed(
    planes: tuple[RunningPlane, RunningPlane, str], scripted_llm: ScriptedLLM
) -> None:
    a, b, key = planes
    assert (await call(b, key)).status_code == 200, "served through B before any hold"
    for _ in range(5):
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
