"""The embedded model as a gateway agent's upstream: llama.cpp's server
speaks both Anthropic Messages and OpenAI Chat Completions, so Claude Code's
API and Aider's both reach it, each call metered like any other."""

from __future__ import annotations

import pytest

from plane.gateway.keys import Keys
from tests.support.fixtures_gateway import StartGateway
from tests.support.sdks import anthropic_sdk, openai_sdk

pytestmark = [pytest.mark.embedded, pytest.mark.timeout(240)]

CONFIG = """
pricing:
  smollm2: {input: 1000, output: 2000}
agents:
  local: {provider: embedded, model: smollm2-135m, gateway: {}, limitUsd: 100}
"""
"""$0.001 an input token and $0.002 an output one: the cost is the usage's."""


async def test_the_embedded_model_answers_both_apis_through_the_gateway_metered(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(CONFIG)
    key = Keys(gw.home.gateway_keys).make("local")
    async with anthropic_sdk(base_url=gw.url, api_key=key, max_retries=0) as claude:
        said = await claude.messages.create(
            model="smollm2-135m", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=key, max_retries=0) as chat:
        answered = await chat.chat.completions.create(  # a client's own model name: SmolLM2 answers
            model="gpt-4o", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )
    assert said.content and answered.choices[0].message.content
    first, second = await gw.entries()
    assert [e.status for e in (first, second)] == ["settled", "settled"]
    assert [e.model for e in (first, second)] == ["smollm2-135m"] * 2, "metered as what ran"
    assert first.usage.input_tokens == said.usage.input_tokens > 0
    assert answered.usage is not None, "a Chat Completions answer says its usage"
    assert second.usage.output_tokens == answered.usage.completion_tokens > 0
    for entry in (first, second):
        u = entry.usage
        assert entry.cost_usd * 1000 == u.input_tokens + 2 * u.output_tokens
    assert await gw.services.ledger.spend_today("local") == first.cost_usd + second.cost_usd
