"""Sampling settings reach the wire only when configured."""

from plane.config import parse_config
from plane.providers.anthropic import AnthropicProvider
from plane.providers.base import ChatMessage, CompletionRequest
from plane.providers.openai import OpenAIProvider

REQUEST = CompletionRequest("m", "sys", (ChatMessage("user", "hi"),))
TUNED = CompletionRequest(
    "m", "sys", (ChatMessage("user", "hi"),), temperature=0.3, frequency_penalty=0.5
)


def test_openai_compatible_bodies_carry_them_when_set():
    provider = OpenAIProvider("p", base_url="http://127.0.0.1:9/v1")
    assert "temperature" not in provider.body(REQUEST)
    body = provider.body(TUNED)
    assert (body["temperature"], body["frequency_penalty"]) == (0.3, 0.5)


def test_anthropic_takes_the_temperature_only():
    body = AnthropicProvider("a", base_url="http://127.0.0.1:9").body(TUNED)
    assert body["temperature"] == 0.3 and "frequency_penalty" not in body


def test_the_embedded_model_is_tuned_against_repeating_itself():
    embedded = parse_config("").providers["embedded"]
    assert (embedded.temperature, embedded.frequency_penalty) == (0.3, 0.5)
