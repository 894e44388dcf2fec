"""A gateway agent whose spend today holds a call priced at a floor (its
upstream answered with a model that has no known price, so the call was
charged as the one asked for) is told of its spend as its row says it
(`$1.05+$?`), not in a figure that reads as all of it: the ceiling reached,
its client's next call refused, its switch to its fallback."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from tests.plane.gateway.test_gateway_loop import AIDER_STEPS_DOWN
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import chat_reply

pytestmark = pytest.mark.timeout(30)

REACHED = (
    "aider has reached its $1.00 daily ceiling ($1.05+$? spent) and starts no new turn "
    "until 00:00 UTC"
)
HELD = "aider has spent $1.05+$? today, over its $1.00 daily ceiling; it answers at 00:00 UTC"


async def test_a_floor_priced_agent_at_its_ceiling_is_told_its_spend_as_its_row(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    path, heads = gw.calls_as("aider")
    usage = {"prompt_tokens": 420_000, "completion_tokens": 0}  # $1.05 as gpt-4o
    gw.llm.fault(200, body=chat_reply(usage, "other"))
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    async with local_client(base_url=gw.url, timeout=20) as http:
        answer = await http.post(path, json=body, headers=heads)
        assert answer.status_code == 200, answer.text
        assert (await gw.runtime.rows.state("aider")).floor_priced
        refused = await http.post(path, json=body, headers=heads)
    assert refused.json()["error"]["message"].startswith(HELD), refused.text

    async def reached() -> list[str]:
        while True:
            said = [m.text for m in await gw.said("aider") if m.text.startswith("aider has")]
            if any("reached" in text for text in said):
                return said
            await asyncio.sleep(0.05)

    said = await asyncio.wait_for(reached(), 10)
    assert any(text.startswith(REACHED) for text in said), said
    assert any(text.startswith(HELD) for text in said), said


async def test_a_floor_priced_agent_switched_to_its_fallback_is_told_its_spend_as_its_row(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(AIDER_STEPS_DOWN)
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    path, heads = gw.calls_as("aider")
    usage = {"prompt_tokens": 240_000, "completion_tokens": 0}  # $0.60 as gpt-4o
    gw.llm.fault(200, body=chat_reply(usage, "mystery-model"))
    async with local_client(base_url=gw.url, timeout=20) as http:
        for model in ("gpt-4o", "scripted-model"):
            ask = [{"role": "user", "content": model}]
            body = {"model": model, "max_tokens": 10, "messages": ask}
            answer = await http.post(path, json=body, headers=heads)
            assert answer.status_code == 200, answer.text
    said = [m.text for m in await gw.said("aider") if "switched" in m.text]
    assert said == [
        "aider switched to other-model at $0.60+$? of $1.00 today (fallback at 50%); "
        "it goes back at 00:00 UTC."
    ]
