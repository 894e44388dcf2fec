"""Attack: a group's and a tag's ceilings under concurrency, on each engine.

Many agents of one group take turns at once, round after round, until the
group holds them; gateway clients of one group fan out; tagged calls from
two agents and two APIs arrive at once, all against a real plane and a
scripted provider that bills what it is asked. No group or tag ends its day
more than one call over its ceiling, and an agent outside the group, or a
call without the tag, is never held by it. (Several planes admitting at once:
tests/plane/money/test_groups.py; under kills, pauses and partitions:
test_planes_faults.py.)
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import CONFIG as GATEWAY_CONFIG
from tests.support.fixtures_gateway import StartGateway
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk, openai, openai_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

pytestmark = [pytest.mark.usefixtures("each_store"), pytest.mark.timeout(120), ON_ONE_WORKER]

AGENTS = [f"r{n}" for n in range(8)]
GROUP_LIMIT = Decimal("1")
PLANE_GROUP = (
    CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 50\n")
    + "".join(f"  {name}: {{tools: []}}\n" for name in AGENTS)
    + f"groups:\n  research:\n    limitUsd: {GROUP_LIMIT}\n    agents: [{', '.join(AGENTS)}]\n"
)
TURN = Usage(input_tokens=60, output_tokens=10)
"""$0.08 a call at the test prices."""


async def spent_by(plane, where: str, *params: object) -> tuple[Decimal, Decimal]:
    """What the calls matching `where` cost today (failed ones are $0), and the dearest."""
    rows = await plane.db.fetchall(
        f"SELECT cost_usd FROM calls WHERE status <> 'failed' AND {where}", *params
    )
    costs = [Decimal(cost) for (cost,) in rows]
    return sum(costs, Decimal(0)), max(costs, default=Decimal(0))


async def test_a_group_taking_turns_at_once_ends_at_most_one_call_over(start_plane) -> None:
    plane = await start_plane(PLANE_GROUP)
    plane.llm.default_reply = Reply("done", usage=TURN, delay_s=0.05)
    for round_ in range(6):  # rounds of eight turns at once, past the ceiling
        await asyncio.gather(*(plane.send(name, f"round {round_}") for name in AGENTS))
        await plane.quiet()
    total, dearest = await spent_by(plane, "agent_group = ?", "research")
    assert GROUP_LIMIT <= total <= GROUP_LIMIT + dearest, (total, dearest)
    states = [await plane.rows.state(name) for name in AGENTS]
    assert {s.status for s in states} == {"held"}
    before = len(plane.llm.requests)
    await plane.turn("demo", "not in the group")
    assert len(plane.llm.requests) == before + 1, "an agent in no group is not held by it"


GATEWAY_GROUP = GATEWAY_CONFIG + (
    "groups:\n  clients: {limitUsd: 1, agents: [claude, aider]}\ntags:\n  ticket-1: {limitUsd: 1}\n"
)
HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]
HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


async def fan_out(gw, calls: int, tag: str | None) -> list[str]:
    """`calls` at once, half Claude Code's API and half Chat Completions',
    each tagged or not; what each got."""
    headers = {"x-plane-tag": tag} if tag else {}
    claude = anthropic_sdk(
        base_url=gw.url, api_key=gw.keys["claude"], max_retries=0, default_headers=headers
    )
    aider = openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0, default_headers=headers
    )

    async def one(n: int) -> str:
        try:
            if n % 2:
                await claude.messages.create(model="scripted-model", max_tokens=20, messages=HELLO)
            else:
                await aider.chat.completions.create(
                    model="scripted-model",
                    messages=HELLO_CHAT,
                    max_tokens=20,
                )
        except (anthropic.APIStatusError, openai.APIStatusError) as refused:
            return refused.message
        return "ok"

    try:
        return await asyncio.gather(*(one(n) for n in range(calls)))
    finally:
        await claude.close()
        await aider.close()


@pytest.mark.slow  # 2.6 s alone, at 10 at once too: five rounds of calls of 0.2 s each
@pytest.mark.parametrize("concurrency", [10, 40])
async def test_gateway_clients_of_a_group_fanning_out_end_at_most_one_call_over(
    start_gateway: StartGateway, concurrency: int
) -> None:
    gw = await start_gateway(GATEWAY_GROUP)
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=40, output_tokens=20), delay_s=0.2)
    for _ in range(5):
        await fan_out(gw, concurrency, None)
    total, dearest = await spent_by(gw, "agent_group = ?", "clients")
    # A call whose likely cost does not fit what is left is refused before
    # it is sent: the day may also end a call short of the ceiling.
    assert GROUP_LIMIT - dearest <= total <= GROUP_LIMIT + dearest, (total, dearest)


@pytest.mark.slow  # 2.5 s alone, at 10 at once too: five rounds of calls of 0.2 s each
@pytest.mark.parametrize("concurrency", [10, 40])
async def test_tagged_calls_from_two_agents_at_once_end_at_most_one_call_over(
    start_gateway: StartGateway, concurrency: int
) -> None:
    config = GATEWAY_CONFIG + "tags:\n  ticket-1: {limitUsd: 1}\n"
    gw = await start_gateway(config)
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=40, output_tokens=20), delay_s=0.2)
    said: list[str] = []
    for _ in range(5):
        said += await fan_out(gw, concurrency, "ticket-1")
    total, dearest = await spent_by(gw, "tag = ?", "ticket-1")
    assert Decimal(1) - dearest <= total <= Decimal(1) + dearest, (total, dearest)
    refusals = [s for s in said if s != "ok"]
    assert refusals and all("ticket-1" in s for s in refusals), set(refusals)
    answers = await fan_out(gw, 4, None)
    assert answers == ["ok"] * 4, "calls without the tag are not held by it"
