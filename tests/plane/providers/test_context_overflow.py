"""A provider's "the prompt is longer than the context" refusal is told apart
from any other refusal, in each server's real 400 shape, and is not retried
(the same prompt fails the same way)."""

from __future__ import annotations

from typing import Any

import pytest

from plane.errors import ContextOverflow, ProviderError
from plane.providers.openai import OpenAIProvider
from tests.plane.providers.conftest import scripted_provider
from tests.plane.providers.support import ask
from tests.support.scripted_llm import ScriptedLLM

OVERFLOWS: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {  # llama.cpp's server (the embedded model's), b4000 and later
            "error": {
                "code": 400,
                "message": "request (5120 tokens) exceeds the available context size "
                "(4096 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5120,
                "n_ctx": 4096,
            }
        },
        {  # llama.cpp's earlier wording
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "invalid_request_error",
            }
        },
        {  # OpenAI
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 130512 tokens. Please reduce the length of the "
                "messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ],
    "anthropic": [
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
        }
    ],
}
CASES = [(kind, body) for kind, bodies in OVERFLOWS.items() for body in bodies]


@pytest.mark.parametrize(("kind", "body"), CASES)
async def test_a_context_overflow_is_its_own_error_and_is_not_retried(
    kind, body, scripted_llm: ScriptedLLM, retry
):
    provider = scripted_provider(kind, scripted_llm, retry)
    scripted_llm.fault(400, body=body)
    try:
        with pytest.raises(ContextOverflow) as caught:
            await provider.complete(ask())
    finally:
        await provider.aclose()
    assert "longer than the model's context (HTTP 400" in str(caught.value)
    assert len(scripted_llm.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_another_bad_request_is_not_an_overflow(kind, scripted_llm: ScriptedLLM, retry):
    provider = scripted_provider(kind, scripted_llm, retry)
    scripted_llm.fault(400, message="max_tokens: must be at most 8192")
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(ask())
    finally:
        await provider.aclose()
    assert not isinstance(caught.value, ContextOverflow)


async def test_the_real_llama_cpp_servers_refusal_is_an_overflow(embedded_model):
    """The embedded model's own server (4,096 tokens) says it in the shape
    the plane reads: no scripted body stands in for the real one here."""
    assert embedded_model.base_url
    provider = OpenAIProvider(
        "embedded", base_url=embedded_model.base_url, api_key=embedded_model.api_key
    )
    words = "The linker could not find libfoo in any of the search paths. " * 600
    try:
        with pytest.raises(ContextOverflow) as caught:
            await provider.complete(ask(words, max_output_tokens=8))
    finally:
        await provider.aclose()
    assert "longer than the model's context" in str(caught.value)
