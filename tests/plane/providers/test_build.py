"""Providers built from agents.yaml: keys from the environment only, the
config's retries and URLs honoured."""

from __future__ import annotations

import httpx
import pytest

from plane.config import parse_config
from plane.errors import ConfigError
from plane.providers.anthropic import AnthropicProvider
from plane.providers.build import build_providers
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from tests.plane.providers.support import Sleeps, ask

CONFIG = parse_config("""
providers:
  openai:
    kind: openai-compatible
    base_url: https://api.openai.com/v1
    api_key_env: PLANE_TEST_OPENAI_KEY
    max_retries: 2
  claude:
    kind: anthropic
    api_key_env: PLANE_TEST_ANTHROPIC_KEY
  ollama:
    kind: openai-compatible
    base_url: http://localhost:11434/v1
""")
ENV = {"PLANE_TEST_OPENAI_KEY": "sk-openai-value", "PLANE_TEST_ANTHROPIC_KEY": "sk-ant-value"}


async def test_one_provider_per_configured_name():
    providers = build_providers(CONFIG, embedded=None, environ=ENV)
    assert sorted(providers) == ["claude", "ollama", "openai"]  # no embedded model given
    assert isinstance(providers["claude"], AnthropicProvider)
    assert isinstance(providers["openai"], OpenAIProvider)
    assert providers["openai"].max_tokens_field == "max_completion_tokens"
    assert providers["ollama"].max_tokens_field == "max_tokens"
    for provider in providers.values():
        await provider.aclose()


def test_a_missing_key_names_the_variable_and_nothing_else():
    env = {"PLANE_TEST_OPENAI_KEY": "sk-openai-value"}
    with pytest.raises(ConfigError) as caught:
        build_providers(CONFIG, embedded=None, environ=env)
    message = str(caught.value)
    assert "PLANE_TEST_ANTHROPIC_KEY" in message and "'claude'" in message
    assert "sk-openai-value" not in message


async def test_transports_keys_and_retries_come_from_the_config():
    seen: list[httpx.Request] = []

    def failing(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503, json={"error": {"message": "busy"}})

    sleeps = Sleeps()
    providers = build_providers(
        CONFIG, embedded=None, environ=ENV,
        transports={"openai": httpx.MockTransport(failing), "claude": httpx.MockTransport(failing)},
        retry=RetryPolicy(sleep=sleeps),
    )
    with pytest.raises(Exception, match=r"\(3 attempts\)"):
        await providers["openai"].complete(ask(stream=False))
    assert len(seen) == 3  # max_retries: 2 from the config
    assert seen[0].url == "https://api.openai.com/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-openai-value"
    with pytest.raises(Exception, match=r"\(5 attempts\)"):
        await providers["claude"].complete(ask(stream=False))
    assert seen[3].url == "https://api.anthropic.com/v1/messages"
    assert seen[3].headers["x-api-key"] == "sk-ant-value"
    assert "authorization" not in seen[3].headers
    for provider in providers.values():
        await provider.aclose()


async def test_the_embedded_provider_uses_the_models_own_key():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={
            "model": "smollm2-135m",
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        })

    providers = build_providers(
        CONFIG, embedded=None, environ=ENV, transports={"embedded": httpx.MockTransport(answer)}
    )
    completion = await providers["embedded"].complete(ask(stream=False))
    assert completion.text == "hi" and "authorization" not in seen[0].headers
    for provider in providers.values():
        await provider.aclose()
