"""Attack: images on a model that counts them far above other models.
OpenAI's gpt-4o-mini counts an image as 2,833 tokens and 5,667 a tile of
512 px, up to eight tiles in high detail: 48,169 tokens, where gpt-4o
counts 1,445 (its price per token is that much lower, so an image costs
about the same). A gateway that bounded every image at a few thousand
tokens would let calls full of images in side by side at a fraction of
what they bill, and the day would end many calls over its ceiling.

A real plane with its HTTP listener; the scripted upstream bills each
image as OpenAI bills gpt-4o-mini's at its largest (`Images`).
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import billed_usd
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply, derived_usage

pytestmark = [pytest.mark.timeout(60)]

MINI_IMAGE = 2833 + 8 * 5667
"""gpt-4o-mini's tokens for an image of eight tiles (a 2048 x 768 screenshot)."""
PICTURE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def images_billed(body: dict[str, Any], serial: int) -> Reply:
    """The prompt's text, and each image at gpt-4o-mini's count for it."""
    images = sum(
        part.get("type") == "image_url"
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )
    prompt = derived_usage(body, "").input_tokens + images * MINI_IMAGE
    return Reply("seen", Usage(input_tokens=prompt, output_tokens=10), delay_s=0.3)


async def test_calls_full_of_images_end_the_day_at_most_one_call_over(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    ceiling = Decimal("0.10")
    await gw.services.gate.ceilings.set("aider", ceiling)
    gw.llm.responder = images_billed
    content = [{"type": "text", "text": "What changed?"}, PICTURE, PICTURE]
    body = {
        "model": "gpt-4o-mini",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": content}],
    }
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/chat/completions", json=body, headers=heads) for _ in range(30))
        )
    pricer = gw.services.pricer
    spent = await gw.services.ledger.spend_today("aider")
    assert spent == billed_usd(gw.llm.billed, pricer)
    largest = max(pricer.price(b.model, b.usage).cost_usd for b in gw.llm.billed)
    assert spent <= ceiling + largest, f"${spent} spent: {len(gw.llm.billed)} calls of ${largest}"
    assert sum(a.status_code == 200 for a in answers) == len(gw.llm.billed) >= 6
