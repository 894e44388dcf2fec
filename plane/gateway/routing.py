"""Who sent a gateway call, and where it goes: the client's key and session
from its headers; the upstream's URL, key and the headers it needs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from plane.config import EMBEDDED, ProviderConfig
from plane.errors import ProviderError
from plane.gateway.apis import Wire

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


@dataclass(frozen=True)
class Upstream:
    """Where a gateway agent's calls go: its provider's API base (ending in
    `/v1`, or OpenAI-compatible's own base URL), its key, and the APIs it speaks."""

    base: str
    key: str | None
    speaks: frozenset[str]
    """`anthropic` (Messages), `openai-compatible` (Chat Completions, Responses)."""
    bearer: bool
    """The key goes as a bearer token whatever the API (llama.cpp's server)."""

    def url(self, wire: Wire, path: str | None = None) -> str:
        return self.base + (path or wire.path).removeprefix("/v1")

    def headers(self, wire: Wire, client: Mapping[str, str]) -> dict[str, str]:
        """The client's headers the upstream needs, and the upstream's key."""
        sent = {name: client[name] for name in PASSED_HEADERS if name in client}
        if wire.upstream_kind == "anthropic":
            sent.setdefault("anthropic-version", ANTHROPIC_VERSION)
        if self.key and wire.upstream_kind == "anthropic" and not self.bearer:
            sent["x-api-key"] = self.key
        elif self.key:
            sent["authorization"] = f"Bearer {self.key}"
        return sent


BOTH_APIS = frozenset({"anthropic", "openai-compatible"})


def upstream(provider: ProviderConfig, embedded: tuple[str, str | None] | None) -> Upstream:
    """The upstream of a provider block; `embedded` is the embedded model's
    running address (its base URL and key), which speaks both APIs."""
    if provider.kind == EMBEDDED:
        if embedded is None:
            raise ProviderError("The embedded model is not running.")
        base_url, key = embedded
        return Upstream(base_url.rstrip("/"), key, BOTH_APIS, bearer=True)
    if provider.kind == "anthropic":
        root = (provider.base_url or ANTHROPIC_URL).rstrip("/").removesuffix("/v1")
        return Upstream(root + "/v1", _key(provider), frozenset({"anthropic"}), bearer=False)
    assert provider.base_url is not None  # config: openai-compatible needs one
    speaks = frozenset({"openai-compatible"})
    return Upstream(provider.base_url.rstrip("/"), _key(provider), speaks, bearer=False)


def _key(provider: ProviderConfig) -> str | None:
    variable = provider.api_key_env
    if variable is None and provider.kind == "anthropic" and not provider.base_url:
        variable = "ANTHROPIC_API_KEY"
    return (os.environ.get(variable, "").strip() or None) if variable else None
