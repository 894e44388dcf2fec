"""Providers pointed at the scripted server, with retries that record their
waits instead of sleeping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from plane.providers.anthropic import AnthropicProvider
from plane.providers.base import Provider
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from tests.plane.providers.support import SECRET, Sleeps
from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def retry(sleeps: Sleeps) -> RetryPolicy:
    return RetryPolicy(max_retries=3, sleep=sleeps, jitter=lambda: 0.0)


def scripted_provider(
    kind: str, llm: ScriptedLLM, retry: RetryPolicy, timeout_s: float = 2
) -> Provider:
    if kind == "openai":
        return OpenAIProvider(
            "scripted",
            base_url=llm.base_url,
            api_key=SECRET,
            key_env="TEST_KEY",
            retry=retry,
            timeout_s=timeout_s,
        )
    return AnthropicProvider(
        "scripted",
        base_url=llm.anthropic_url,
        api_key=SECRET,
        key_env="TEST_KEY",
        retry=retry,
        timeout_s=timeout_s,
    )


@pytest.fixture(params=["openai", "anthropic"])
async def provider(
    request: pytest.FixtureRequest, scripted_llm: ScriptedLLM, retry: RetryPolicy
) -> AsyncIterator[Provider]:
    """Each provider in turn, against the scripted server, carrying `SECRET`."""
    built = scripted_provider(request.param, scripted_llm, retry)
    yield built
    await built.aclose()


@pytest.fixture
async def openai(scripted_llm: ScriptedLLM, retry: RetryPolicy) -> AsyncIterator[Provider]:
    built = scripted_provider("openai", scripted_llm, retry)
    yield built
    await built.aclose()


@pytest.fixture
async def anthropic(scripted_llm: ScriptedLLM, retry: RetryPolicy) -> AsyncIterator[Provider]:
    built = scripted_provider("anthropic", scripted_llm, retry)
    yield built
    await built.aclose()
