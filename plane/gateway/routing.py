"""Who sent a gateway call, and where it goes: the client's key and session
from its headers; the upstream's URL, key and the headers it needs."""

from __future__ import annotations

import os
from collections.abc import Mapping

from plane.config import ProviderConfig
from plane.gateway.wire import Wire

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
PASSED_HEADERS = ("anthropic-version", "anthropic-beta")
"""Client headers the upstream needs to read the request as the client meant it."""
SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "session_id")


def presented_key(headers: Mapping[str, str]) -> str:
    """The client's key: Anthropic's `x-api-key`, or a bearer token."""
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def session(headers: Mapping[str, str]) -> str | None:
    """The client's session id (Claude Code's, Codex's), kept with each call's line."""
    for name in SESSION_HEADERS:
        if value := headers.get(name, "").strip():
            return value[:64]
    return None


def upstream_url(wire: Wire, provider: ProviderConfig) -> str:
    if wire.upstream_kind == "anthropic":
        root = (provider.base_url or ANTHROPIC_URL).rstrip("/").removesuffix("/v1")
        return root + wire.path
    assert provider.base_url is not None  # config: openai-compatible needs one
    return provider.base_url.rstrip("/") + wire.path.removeprefix("/v1")


def upstream_key(provider: ProviderConfig) -> str | None:
    variable = provider.api_key_env
    if variable is None and provider.kind == "anthropic" and not provider.base_url:
        variable = "ANTHROPIC_API_KEY"
    return (os.environ.get(variable, "").strip() or None) if variable else None
