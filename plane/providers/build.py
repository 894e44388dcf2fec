"""Providers from the config, built once at start-up.

API keys come only from the environment variable each provider names
(`api_key_env`); a missing one is a `ConfigError` that names the variable and
nothing else. Every key is read before any client is built, so a bad config
leaves nothing open.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import httpx

from plane.config import EMBEDDED, Config, ProviderConfig
from plane.errors import ConfigError, ProviderError
from plane.providers.anthropic import AnthropicProvider
from plane.providers.base import Provider
from plane.providers.http import RetryPolicy
from plane.providers.local import EmbeddedModel
from plane.providers.openai import OpenAIProvider

ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
"""Read for an `anthropic` provider on Anthropic's own URL that names no variable."""


def build_providers(
    config: Config,
    *,
    embedded: EmbeddedModel | None,
    transports: Mapping[str, httpx.AsyncBaseTransport] | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Provider]:
    """One provider per name in `config.providers`.

    The `embedded` provider is built only when the started `embedded` model
    is given (or a transport stands in for it). `transports` replaces the
    network per provider name (tests); `retry` is the template for every
    provider's retries (its `max_retries` comes from each provider's config;
    tests pass a `sleep` that does not wait)."""
    env = os.environ if environ is None else environ
    transports = transports or {}
    keys = {name: _api_key(name, cfg, env) for name, cfg in config.providers.items()}
    providers: dict[str, Provider] = {}
    for name, cfg in config.providers.items():
        policy = dataclasses.replace(retry or RetryPolicy(), max_retries=cfg.max_retries)
        transport = transports.get(name)
        if cfg.kind == EMBEDDED:
            if embedded is None and transport is None:
                continue
            providers[name] = _embedded(name, cfg, embedded, policy, transport)
        elif cfg.kind == "anthropic":
            providers[name] = AnthropicProvider(
                name,
                base_url=cfg.base_url,
                api_key=keys[name],
                key_env=_key_env(cfg),
                timeout_s=cfg.timeout_s,
                retry=policy,
                transport=transport,
            )
        else:
            assert cfg.base_url is not None  # the config requires it
            providers[name] = OpenAIProvider(
                name,
                base_url=cfg.base_url,
                api_key=keys[name],
                key_env=cfg.api_key_env,
                timeout_s=cfg.timeout_s,
                retry=policy,
                transport=transport,
                max_tokens_field=(
                    "max_completion_tokens" if "api.openai.com" in cfg.base_url else "max_tokens"
                ),
            )
    return providers


def _embedded(
    name: str,
    cfg: ProviderConfig,
    model: EmbeddedModel | None,
    policy: RetryPolicy,
    transport: httpx.AsyncBaseTransport | None,
) -> OpenAIProvider:
    if model is not None and not model.base_url:
        raise ProviderError("The embedded model must be started before its provider is built.")
    return OpenAIProvider(
        name,
        base_url=model.base_url if model and model.base_url else "http://embedded.invalid/v1",
        api_key=model.api_key if model else None,
        timeout_s=cfg.timeout_s,
        retry=policy,
        transport=transport,
    )


def _key_env(cfg: ProviderConfig) -> str | None:
    if cfg.api_key_env:
        return cfg.api_key_env
    if cfg.kind == "anthropic" and not cfg.base_url:
        return ANTHROPIC_KEY_ENV
    return None


def _api_key(name: str, cfg: ProviderConfig, env: Mapping[str, str]) -> str | None:
    variable = _key_env(cfg) if cfg.kind != EMBEDDED else None
    if variable is None:
        return None
    key = env.get(variable, "").strip()
    if not key:
        raise ConfigError(
            f"Provider {name!r} needs an API key in the environment variable {variable}, "
            "which is not set."
        )
    return key
