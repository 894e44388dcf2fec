"""Attack: Anthropic's automatic caching, asked at the top of the request
(`cache_control: {"type": "ephemeral", "ttl": "1h"}`) rather than on a
block: the provider writes the prompt to its 1-hour cache, at twice the
input price. A gateway that looked for the 1-hour cache only on the
blocks would bound such calls at the 5-minute write's price, and calls
side by side would take the day past one call over.

A real plane with its HTTP listener; the scripted upstream bills the worst
the bound must cover: every byte of the prompt's text a token, written to
the 1-hour cache.
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
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(60)]

TEXT = "x" * 1000
"""A prompt of 1,000 bytes, billed as 1,000 tokens written to the hour's cache: $2."""


def written_for_the_hour(body: dict[str, Any], serial: int) -> Reply:
    prompt = sum(len(m["content"].encode()) for m in body["messages"])
    usage = Usage(
        input_tokens=prompt,
        cache_write_tokens=prompt,
        cache_write_1h_tokens=prompt,
        output_tokens=10,
    )
    return Reply("ok", usage, delay_s=0.3, cut_at_limit=True)


async def test_calls_cached_for_the_hour_at_the_top_end_the_day_at_most_one_call_over(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    ceiling = Decimal(10)
    await gw.services.gate.ceilings.set("claude", ceiling)
    gw.llm.responder = written_for_the_hour
    body = {
        "model": "scripted-model",
        "max_tokens": 10,
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
        "messages": [{"role": "user", "content": TEXT}],
    }
    heads = {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        await asyncio.gather(
            *(http.post("/v1/messages", json=body, headers=heads) for _ in range(12))
        )
    spent = await gw.services.ledger.spend_today("claude")
    held_within_a_call(spent, ceiling, gw.llm.billed, gw.services.pricer)
