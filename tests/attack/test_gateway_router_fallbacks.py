"""Attack: a client names a cheap model and lets the router fall back to a
dear one (OpenRouter's `models: [...]`). Each call is charged as the model
that answered it (`test_gateway_answered_by.py`); a gateway that bounded it
at the model it named would let such calls in side by side at a fraction of
what they bill, and the day would end many calls over its ceiling.

A real plane with its HTTP listener; the scripted upstream answers every
call as the dear model, and bills it so.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import billed_usd, cost_of
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply, derived_usage

pytestmark = [pytest.mark.timeout(60)]

PRICES = (
    "pricing:\n  cheap-model: {input: 1, output: 10}\n  dear-model: {input: 1000, output: 2000}\n"
)
HELLO = [{"role": "user", "content": "hello"}]


def fell_back(body: dict[str, Any], serial: int) -> Reply:
    """Answered by the dear model, every token it may write: about $0.41."""
    usage = Usage(input_tokens=derived_usage(body, "").input_tokens, output_tokens=200)
    return Reply("ok", usage, delay_s=0.3, cut_at_limit=True, answered_as="dear-model")


async def test_calls_a_router_may_answer_with_a_dearer_model_end_the_day_at_most_one_call_over(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(CONFIG.replace("pricing:\n", PRICES))
    ceiling = Decimal(1)
    await gw.services.gate.ceilings.set("aider", ceiling)
    gw.llm.responder = fell_back
    body = {
        "model": "cheap-model",
        "models": ["cheap-model", "dear-model"],
        "max_tokens": 200,
        "messages": HELLO,
    }
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/chat/completions", json=body, headers=heads) for _ in range(10))
        )
    billed = billed_usd(gw.llm.billed, gw.services.pricer)
    spent = await gw.services.ledger.spend_today("aider")
    assert spent == billed, (spent, billed)
    largest = max(cost_of(b, gw.services.pricer) for b in gw.llm.billed)
    assert spent <= ceiling + largest, [a.status_code for a in answers]
    assert any(a.status_code == 200 for a in answers)
