"""The fleet's ceiling holds calls that come through the gateway too: at the
gate, and at admission when another plane filled the fleet in between."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

from plane.money.gate import Hold
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import StartGateway
from tests.support.sdks import ON_ONE_WORKER, openai, openai_sdk

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]

HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


async def call(gw) -> object:
    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        return await client.chat.completions.create(
            model="scripted-model",
            messages=HELLO_CHAT,
            max_tokens=10,
        )


async def test_a_gateway_call_refused_at_admission_is_held_and_not_sent(
    start_gateway: StartGateway, monkeypatch
) -> None:
    gw = await start_gateway()
    gw.llm.default_reply = "ok"
    gate, ledger = gw.services.gate, gw.services.ledger
    await gate.ceilings.set_fleet(Decimal("0.05"))
    hold = gate.hold

    async def another_plane_fills_the_fleet(agent: str, **asked: Any) -> Hold | None:
        """The gate's answer, then claude's call on another plane spends the fleet's day."""
        held = await hold(agent, **asked)
        if agent == "aider" and not await ledger.budget_spend.fleet_today():
            filled = await ledger.open_call("claude", "p", "m", Decimal("0.05"), "estimate")
            await ledger.settle(filled, Usage(input_tokens=50), Decimal("0.05"), "t")
        return held

    monkeypatch.setattr(gate, "hold", another_plane_fills_the_fleet)
    with pytest.raises(openai.APIStatusError) as refused:
        await call(gw)
    # claude's call was spent: the sentence says so (tests/plane/gateway/
    # test_gateway_in_flight_refusal.py: one in flight only is no hold).
    sentence = "the fleet has spent $0.05 today, at its $0.05 daily ceiling"
    assert sentence in str(refused.value)
    assert gw.llm.requests == [], "nothing was sent"
    assert [e.agent for e in await gw.entries()] == ["claude"], "nothing was written"
    said = await gw.services.conversation.history("aider")
    assert said[-1].text.startswith(f"aider is not answering: {sentence}")


async def test_at_the_fleet_ceiling_the_gate_holds_a_gateway_call(start_gateway) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set_fleet(Decimal(0))
    with pytest.raises(openai.APIStatusError, match=r"the fleet's daily ceiling is \$0\.00"):
        await call(gw)
    assert gw.llm.requests == []
