"""Providers from the config, built once at start-up.

API keys come only from the environment variable each provider names
(`api_key_env`). A missing key only matters to the agents that need it: a
provider no agent uses (nor `defaults.provider`, which new agents get) may sit
in agents.yaml for later without its key; it is left out with one warning,
and its models are not offered for new agents (`models_offered`). A provider
an agent uses without its key is a `ConfigError` naming the agents, the
provider and the variable, never the key. Every key is read before any client
is built, so a bad config leaves nothing open.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping

from plane.config import EMBEDDED, Config, ProviderConfig
from plane.errors import ConfigError, ProviderError
from plane.providers.anthropic import AnthropicProvider
from plane.providers.base import Provider
from plane.providers.connections import Connect
from plane.providers.http import RetryPolicy
from plane.providers.local import EmbeddedModel
from plane.providers.openai import OpenAIProvider
from plane.wire.words import NAMED

log = logging.getLogger(__name__)

ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
"""Read for an `anthropic` provider on Anthropic's own URL that names no variable."""


def build_providers(
    config: Config,
    *,
    embedded: EmbeddedModel | None,
    connectors: Mapping[str, Connect] | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
    agents: Mapping[str, str] | None = None,
) -> dict[str, Provider]:
    """One provider per name in `config.providers`, but for those left out:
    unused ones without their key, and `embedded` unless its model is given.

    `agents` says who uses which provider (agent name → provider name);
    by default the agents of agents.yaml. Pass the whole roster so agents
    created from the keyboard count too. `connectors` replaces the network
    per provider name (tests: a local server answers the provider's URLs, or
    stands in for the embedded model); `retry` is the template for every provider's retries (its
    `max_retries` comes from each provider's config; tests pass a `sleep`
    that does not wait)."""
    env = os.environ if environ is None else environ
    connectors = connectors or {}
    missing = missing_keys(config, env)
    _refuse_if_needed(config, missing, agents)
    for name, variable in missing.items():
        log.warning(
            "Provider %r is left out: no agent uses it and its API key is not set (%s). "
            "Its models are not offered for new agents.",
            name,
            variable,
        )
    keys = {name: _api_key(cfg, env) for name, cfg in config.providers.items()}
    providers: dict[str, Provider] = {}
    for name, cfg in config.providers.items():
        if name in missing:
            continue
        policy = dataclasses.replace(retry or RetryPolicy(), max_retries=cfg.max_retries)
        connect = connectors.get(name)
        if cfg.kind == EMBEDDED:
            if embedded is None and connect is None:
                continue
            providers[name] = _embedded(name, cfg, embedded, policy, connect)
        elif cfg.kind == "anthropic":
            providers[name] = AnthropicProvider(
                name,
                base_url=cfg.base_url,
                api_key=keys[name],
                key_env=_key_env(cfg),
                timeout_s=cfg.timeout_s,
                retry=policy,
                connect=connect,
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
                connect=connect,
                max_tokens_field=(
                    "max_completion_tokens" if "api.openai.com" in cfg.base_url else "max_tokens"
                ),
            )
    return providers


def embedded_providers(
    config: Config, model: EmbeddedModel, retry: RetryPolicy | None = None
) -> dict[str, Provider]:
    """The `embedded` providers on a model started after the others were
    built: the first agent put on it from the keyboard starts it."""
    providers: dict[str, Provider] = {}
    for name, cfg in config.providers.items():
        if cfg.kind == EMBEDDED:
            policy = dataclasses.replace(retry or RetryPolicy(), max_retries=cfg.max_retries)
            providers[name] = _embedded(name, cfg, model, policy, None)
    return providers


def _embedded(
    name: str,
    cfg: ProviderConfig,
    model: EmbeddedModel | None,
    policy: RetryPolicy,
    connect: Connect | None,
) -> OpenAIProvider:
    if model is not None and not model.base_url:
        raise ProviderError("The embedded model must be started before its provider is built.")
    return OpenAIProvider(
        name,
        base_url=model.base_url if model and model.base_url else "http://embedded.invalid/v1",
        api_key=model.api_key if model else None,
        timeout_s=cfg.timeout_s,
        retry=policy,
        connect=connect,
        # While the supervisor restarts a dead child, requests wait for it, not retry blind.
        middlewares=(model.when_ready(),) if model is not None else (),
    )


def _key_env(cfg: ProviderConfig) -> str | None:
    if cfg.api_key_env:
        return cfg.api_key_env
    if cfg.kind == "anthropic" and not cfg.base_url:
        return ANTHROPIC_KEY_ENV
    return None


def _api_key(cfg: ProviderConfig, env: Mapping[str, str]) -> str | None:
    variable = _key_env(cfg) if cfg.kind != EMBEDDED else None
    if variable is None:
        return None
    return env.get(variable, "").strip() or None


def missing_keys(config: Config, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Providers whose API key is not in the environment: name → the variable to set."""
    env = os.environ if environ is None else environ
    return {
        name: variable
        for name, cfg in config.providers.items()
        if cfg.kind != EMBEDDED
        and (variable := _key_env(cfg))
        and not env.get(variable, "").strip()
    }


def models_offered(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """`config.models()` without those only keyless providers list: an agent
    put on one could never take a turn."""
    missing = missing_keys(config, environ)
    keyless = {m for name in missing for m in config.providers[name].models}
    keyed = {m for name, p in config.providers.items() if name not in missing for m in p.models}
    return [m for m in config.models() if m not in keyless - keyed]


def refuse_missing_keys(
    config: Config,
    agents: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """The `ConfigError` `build_providers` would raise, raised before
    anything is started: the embedded model takes seconds to come up, and a
    plane that will refuse should say so at once and leave nothing running."""
    _refuse_if_needed(config, missing_keys(config, environ), agents)


def _refuse_if_needed(
    config: Config, missing: Mapping[str, str], agents: Mapping[str, str] | None
) -> None:
    """Refuse to start on the first provider that is needed without its key,
    naming who needs it: agents, and new agents when it is `defaults.provider`."""
    if agents is None:
        agents = {name: config.provider_of(block) for name, block in config.agents.items()}
    for name, variable in missing.items():
        users = sorted(agent for agent, provider in agents.items() if provider == name)
        by_default = config.defaults.provider == name
        if not users and not by_default:
            continue
        who = []
        if users:
            named = [repr(user) for user in users[:NAMED]]
            if len(users) > NAMED:  # a fleet's: the first of them, and how many more
                named.append(f"{len(users) - NAMED:,} more")
            who.append(f"agent{'s' if len(users) > 1 else ''} {_and(named)}")
        if by_default:
            who.append("new agents (defaults.provider)")
        loc = ["providers", name] + (["api_key_env"] if config.providers[name].api_key_env else [])
        message = (
            f"provider {name!r} is used by {_and(who)}, but its API key is not set: "
            f"set the environment variable {variable}"
        )
        raise ConfigError(config.explain(loc, message))


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
