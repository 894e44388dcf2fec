"""Providers built from agents.yaml: keys from the environment only, the
config's retries and URLs honoured, and a missing key only stopping the plane
when an agent needs it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from plane.config import EMBEDDED_MODEL, load_config, parse_config
from plane.errors import ConfigError
from plane.providers.anthropic import AnthropicProvider
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from plane.providers.pool import build_providers, models_offered
from tests.plane.providers.support import Sleeps, ask
from tests.support.fixtures_http import LocalServer, replying

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
    ollama = providers["ollama"]
    assert isinstance(ollama, OpenAIProvider) and ollama.max_tokens_field == "max_tokens"
    for provider in providers.values():
        await provider.aclose()


async def test_urls_keys_and_retries_come_from_the_config(local_server: LocalServer):
    """Each provider on its real URL, which the test's server answers (503)."""
    local_server.answer = replying({"error": {"message": "busy"}}, status=503)
    seen = local_server.seen
    sleeps = Sleeps()
    providers = build_providers(
        CONFIG,
        embedded=None,
        environ=ENV,
        connectors={"openai": local_server.connect, "claude": local_server.connect},
        retry=RetryPolicy(sleep=sleeps),
    )
    with pytest.raises(Exception, match=r"\(3 attempts\)"):
        await providers["openai"].complete(ask(stream=False))
    assert len(seen) == 3  # max_retries: 2 from the config
    assert (seen[0].host, seen[0].path) == ("api.openai.com", "/v1/chat/completions")
    assert seen[0].headers["authorization"] == "Bearer sk-openai-value"
    with pytest.raises(Exception, match=r"\(5 attempts\)"):
        await providers["claude"].complete(ask(stream=False))
    assert (seen[3].host, seen[3].path) == ("api.anthropic.com", "/v1/messages")
    assert seen[3].headers["x-api-key"] == "sk-ant-value"
    assert "authorization" not in seen[3].headers
    for provider in providers.values():
        await provider.aclose()


async def test_the_embedded_provider_uses_the_models_own_key(local_server: LocalServer):
    local_server.answer = replying(
        {
            "model": "smollm2-135m",
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    )
    providers = build_providers(
        CONFIG, embedded=None, environ=ENV, connectors={"embedded": local_server.connect}
    )
    completion = await providers["embedded"].complete(ask(stream=False))
    assert completion.text == "hi" and "authorization" not in local_server.seen[0].headers
    for provider in providers.values():
        await provider.aclose()


KEPT_FOR_LATER = """\
providers:
  anthropic:
    kind: anthropic
    models: [claude-sonnet-4-5]
  openai:
    kind: openai-compatible
    base_url: https://api.openai.com/v1
    api_key_env: PLANE_TEST_OPENAI_KEY
    models: [gpt-5-mini]
agents:
  demo: {}
  coder:
    provider: openai
    model: gpt-5-mini
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_an_unused_provider_without_its_key_is_left_out_with_one_warning(
    tmp_path, monkeypatch, caplog
):
    config = load_config(write(tmp_path, KEPT_FOR_LATER))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PLANE_TEST_OPENAI_KEY", "sk-openai-value")
    with caplog.at_level(logging.WARNING, logger="plane.providers.pool"):
        providers = build_providers(config, embedded=None)
    assert sorted(providers) == ["openai"]  # no embedded model given, anthropic left out
    [warning] = caplog.records
    assert "'anthropic'" in warning.getMessage() and "ANTHROPIC_API_KEY" in warning.getMessage()
    assert models_offered(config) == [EMBEDDED_MODEL, "gpt-5-mini"]
    await providers["openai"].aclose()

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-value")
    assert "claude-sonnet-4-5" in models_offered(config)
    providers = build_providers(config, embedded=None)
    assert sorted(providers) == ["anthropic", "openai"]
    for provider in providers.values():
        await provider.aclose()


def test_agents_on_a_provider_without_its_key_stop_the_plane_saying_who_and_what_to_set(
    tmp_path, monkeypatch
):
    path = write(tmp_path, KEPT_FOR_LATER + "  reviewer:\n    provider: openai\n")
    config = load_config(path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-value")
    monkeypatch.setenv("PLANE_TEST_OPENAI_KEY", "  ")  # blank is not a key
    with pytest.raises(ConfigError) as caught:
        build_providers(config, embedded=None)
    assert str(caught.value) == (
        f"{path} line 8: providers.openai.api_key_env: provider 'openai' is used by agents "
        "'coder' and 'reviewer', but its API key is not set: "
        "set the environment variable PLANE_TEST_OPENAI_KEY."
    )
    assert "sk-ant-value" not in str(caught.value)


def test_the_default_provider_without_its_key_stops_the_plane_for_new_agents(tmp_path, monkeypatch):
    path = write(
        tmp_path, "defaults:\n  provider: claude\nproviders:\n  claude:\n    kind: anthropic\n"
    )
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError) as caught:
        build_providers(load_config(path), embedded=None)
    assert str(caught.value) == (
        f"{path} line 4: providers.claude: provider 'claude' is used by new agents "
        "(defaults.provider), but its API key is not set: "
        "set the environment variable ANTHROPIC_API_KEY."
    )


def test_agents_created_from_the_keyboard_count_when_the_roster_is_given(tmp_path, monkeypatch):
    config = load_config(write(tmp_path, KEPT_FOR_LATER))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PLANE_TEST_OPENAI_KEY", "sk-openai-value")
    roster = {"demo": "embedded", "coder": "openai", "poet": "anthropic"}
    with pytest.raises(ConfigError, match=r"used by agent 'poet', but .* ANTHROPIC_API_KEY\.$"):
        build_providers(config, embedded=None, agents=roster)


def test_a_fleet_on_a_provider_without_its_key_is_named_by_its_first_agents(tmp_path, monkeypatch):
    """At 10,000 agents the sentence named every one on the provider: 1,500
    names in one line."""
    reviewers = "".join(f"  reviewer-{n:02d}:\n    provider: openai\n" for n in range(30))
    path = write(tmp_path, KEPT_FOR_LATER + reviewers)
    config = load_config(path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-value")
    monkeypatch.delenv("PLANE_TEST_OPENAI_KEY", raising=False)
    with pytest.raises(ConfigError) as caught:
        build_providers(config, embedded=None)
    named = ", ".join(["'coder'", *(f"'reviewer-{n:02d}'" for n in range(19))])
    assert f"is used by agents {named} and 11 more, but its API key is not set" in str(caught.value)
