"""Attack: a gateway client told to come back at 00:00 UTC by a refusal that
midnight does not lift. A model with no price is held until a price is
given or the ceiling removed, a pause until the limit is raised: such a
refusal promises no time (no Retry-After to midnight), tells the client to
wait long, as a loop's does, and its sentence says what lifts it. Where the
API has codes, a pause says `agent_paused`, never `daily_ceiling_reached`:
no spend reached it.

A real plane with its HTTP listener and the scripted upstream.
"""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from functools import partial

import pytest

from tests.support.fixtures_gateway import CONFIG, NOON, GatewayPlane, StartGateway
from tests.support.local_http import local_client

pytestmark = [pytest.mark.timeout(30)]

HELLO = [{"role": "user", "content": "hello"}]
MIDNIGHT = str(12 * 3600)
"""The Retry-After of a hold the day's end lifts, from the plane's noon."""


async def refused(
    gw: GatewayPlane, agent: str, model: str, tag: str | None = None
) -> tuple[int, dict[str, str], str]:
    """Status, headers and the error's sentence of `agent`'s call on `model`
    (carrying `tag`, if given)."""
    path, heads = gw.calls_as(agent)
    heads = heads | ({"x-plane-tag": tag} if tag else {})
    body = {"model": model, "messages": HELLO, "max_tokens": 10}
    async with local_client(base_url=gw.url, timeout=10) as http:
        answer = await http.post(path, json=body, headers=heads)
    said = answer.json().get("error", {}).get("message", "")  # none on an answer
    return answer.status_code, dict(answer.headers), said


ASKED = {
    "/v1/chat/completions": {"model": "scripted-model", "messages": HELLO, "max_tokens": 10},
    "/v1/responses": {"model": "scripted-model", "input": "hello", "max_output_tokens": 10},
}
"""One call in each API with error codes: Chat Completions and Responses."""


async def coded(
    gw: GatewayPlane, agent: str, tag: str | None = None
) -> dict[str, tuple[int, str, str]]:
    """Status, error code and sentence of `agent`'s call (carrying `tag`, if
    given) on each API that has codes, by path."""
    heads = {"authorization": f"Bearer {gw.keys[agent]}"} | ({"x-plane-tag": tag} if tag else {})
    answers = {}
    async with local_client(base_url=gw.url, timeout=10) as http:
        for path, body in ASKED.items():
            answer = await http.post(path, json=body, headers=heads)
            error = answer.json()["error"]
            answers[path] = (answer.status_code, error["code"], error["message"])
    return answers


async def test_a_model_with_no_price_is_refused_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """Under its $10 ceiling, claude names a model with no price: refused, as
    before, but told to wait long (an hour, as a loop is), not until 00:00
    UTC, which does not lift it; the sentence says what does."""
    gw = await start_gateway()
    status, headers, said = await refused(gw, "claude", "other-model")
    assert status == 429
    assert headers["retry-after"] != MIDNIGHT, "midnight does not price a model"
    assert headers["retry-after"] == "3600"
    assert "no price is known for other-model" in said
    assert "`pricing:` in agents.yaml" in said and "/limit off" in said
    assert "00:00" not in said
    assert gw.llm.requests == []
    status, headers, said = await refused(gw, "aider", "other-model")
    assert (status, "retry-after" in headers) == (400, False)
    assert "no price is known for other-model" in said


async def test_a_pause_is_refused_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """A ceiling of zero is a pause, which a new day does not end."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", Decimal(0))
    status, headers, said = await refused(gw, "claude", "scripted-model")
    assert status == 429
    assert headers["retry-after"] == "3600", "a new day does not end a pause"
    assert "paused" in said and "00:00" not in said
    await gw.services.gate.ceilings.set("aider", Decimal(0))
    for path, (status, code, said) in (await coded(gw, "aider")).items():
        assert (status, code) == (400, "agent_paused"), f"{path}: a pause, not a ceiling reached"
        assert said.startswith("aider is paused: its daily ceiling is $0.00")
    assert gw.llm.requests == []


GROUPED = CONFIG + "groups:\n  crew:\n    limitUsd: 5\n    agents: [claude, aider]\n"
TAGGED = CONFIG + "tags:\n  t-1: {limitUsd: 0}\n"


async def test_a_group_s_zero_ceiling_is_a_pause_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """`/limit group crew 0` pauses the group: its calls are told to wait
    long, and what lifts it, never 00:00 UTC."""
    gw = await start_gateway(GROUPED)
    await gw.services.gate.ceilings.set_group("crew", Decimal(0))
    status, headers, said = await refused(gw, "claude", "scripted-model")
    assert (status, headers["retry-after"]) == (429, "3600"), "a new day does not end a pause"
    assert said.startswith("claude is paused: its group crew's daily ceiling is $0.00")
    assert "/limit group crew 5, or /limit group crew off" in said and "00:00" not in said
    status, headers, said = await refused(gw, "aider", "scripted-model")
    assert (status, "retry-after" in headers, "00:00" in said) == (400, False, False)
    for path, (status, code, said) in (await coded(gw, "aider")).items():
        assert (status, code) == (400, "agent_paused"), f"{path}: a pause, not a ceiling reached"
        assert said.startswith("aider is paused: its group crew's daily ceiling is $0.00")
    assert gw.llm.requests == []


async def test_the_fleet_s_zero_ceiling_is_a_pause_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set_fleet(Decimal(0))
    status, headers, said = await refused(gw, "claude", "scripted-model")
    assert (status, headers["retry-after"]) == (429, "3600"), "a new day does not end a pause"
    assert said.startswith("claude is paused: the fleet's daily ceiling is $0.00")
    assert "/limit fleet 5, or /limit fleet off" in said and "00:00" not in said
    for path, (status, code, said) in (await coded(gw, "aider")).items():
        assert (status, code) == (400, "agent_paused"), f"{path}: a pause, not a ceiling reached"
        assert said.startswith("aider is paused: the fleet's daily ceiling is $0.00")
    assert gw.llm.requests == []


async def test_a_tag_s_zero_ceiling_is_a_pause_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """A tag's ceiling of $0.00 holds the calls carrying it, and no day's
    end lifts it; the agent's other calls go on."""
    gw = await start_gateway(TAGGED)
    status, headers, said = await refused(gw, "claude", "scripted-model", tag="t-1")
    assert (status, headers["retry-after"]) == (429, "3600"), "a new day does not end a pause"
    assert "calls tagged t-1 have a daily ceiling of $0.00" in said
    assert "tags: in agents.yaml" in said and "00:00" not in said
    for path, (status, code, said) in (await coded(gw, "aider", tag="t-1")).items():
        assert (status, code) == (400, "agent_paused"), f"{path}: a pause, not a ceiling reached"
        assert "calls tagged t-1 have a daily ceiling of $0.00" in said
    assert gw.llm.requests == []
    status, _, _ = await refused(gw, "claude", "scripted-model")
    assert status == 200


def paused_in_store(agent: str, conn: sqlite3.Connection) -> None:
    """`agent` kept paused by the operator, as the store has it."""
    conn.execute(
        "INSERT INTO agent_settings (name, paused, set_at) VALUES (?, 1, ?)",
        (agent, NOON.isoformat()),
    )


async def test_the_operator_s_pause_is_refused_as_a_pause_not_a_ceiling_reached(
    start_gateway: StartGateway,
) -> None:
    """A paused agent is not over any ceiling: on Chat Completions and
    Responses its calls say `agent_paused`, never `daily_ceiling_reached`.
    (A gateway agent is paused as the store keeps it, here from before it
    was one: the operator cannot pause one, only resume it.)"""
    gw = await start_gateway()
    await gw.db.write(partial(paused_in_store, "aider"))
    gw = await start_gateway(restart=gw)
    for path, (status, code, said) in (await coded(gw, "aider")).items():
        assert (status, code) == (400, "agent_paused"), path
        assert said.startswith("aider is paused: it takes no turn until")
    assert gw.llm.requests == []
