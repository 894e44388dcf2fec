"""Attack: answers spoken, on an audio model (`modalities: ["text", "audio"]`
on gpt-audio): each token of the answer is audio, billed at $64 per 1M
where text is $10. A gateway that bounded such a call at the text rate
would let six times as many side by side as the day has room for, and the
day would end many calls over its ceiling.

A real plane with its HTTP listener; the scripted upstream answers every
call with an answer all audio, to its limit, and bills it so.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import held_within_a_call
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply, derived_usage

pytestmark = [pytest.mark.timeout(60)]

SPOKEN = 1000
"""Tokens of each answer, every one audio: $0.064 on gpt-audio."""


def spoken(body: dict[str, Any], serial: int) -> Reply:
    prompt = derived_usage(body, "").input_tokens
    usage = Usage(input_tokens=prompt, output_tokens=SPOKEN, output_audio_tokens=SPOKEN)
    return Reply("ok", usage, delay_s=0.2, cut_at_limit=True)


async def test_spoken_answers_end_the_day_at_most_one_call_over(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    ceiling = Decimal("0.10")
    await gw.services.gate.ceilings.set("aider", ceiling)
    gw.llm.responder = spoken
    body = {
        "model": "gpt-audio",
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"},
        "max_completion_tokens": SPOKEN,
        "messages": [{"role": "user", "content": "Read me the report."}],
    }
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        await asyncio.gather(
            *(http.post("/v1/chat/completions", json=body, headers=heads) for _ in range(20))
        )
    spent = await gw.services.ledger.spend_today("aider")
    held_within_a_call(spent, ceiling, gw.llm.billed, gw.services.pricer)
