"""`plane key AGENT` and `plane gateway env AGENT --client …`: a gateway
agent's key, and the lines that point a client at the plane with it.

Neither needs the plane running: keys live in the home (hashed), and the
running plane reads them on each request, so a new key works at once and
the one it replaces stops working at once.
"""

from __future__ import annotations

from plane.config import EMBEDDED, Config
from plane.errors import PlaneError
from plane.gateway.keys import Keys
from plane.home import Home

CLIENTS = ("claude-code", "codex", "aider")
SPEAKS = {"claude-code": "anthropic", "codex": "openai-compatible", "aider": "openai-compatible"}
DEFAULT_HTTP = ("127.0.0.1", 7878)


def gateway_agent(config: Config, agent: str) -> str:
    """`agent`'s provider kind, or the sentence saying it is no gateway agent."""
    block = config.agents.get(agent)
    if block is None or block.gateway is None:
        gateways = [name for name, b in config.agents.items() if b.gateway is not None]
        known = f" (the gateway agents: {', '.join(gateways)})" if gateways else ""
        raise PlaneError(
            f"{agent!r} is not a gateway agent in agents.yaml{known}; give it a "
            "`gateway: {}` block."
        )
    return config.providers[config.provider_of(block)].kind


def make_key(config: Config, home: Home, agent: str) -> str:
    gateway_agent(config, agent)
    return Keys(home.gateway_keys).make(agent)


def env_lines(
    config: Config, home: Home, agent: str, client: str, http: tuple[str, int]
) -> list[str]:
    """Shell lines (and, for Codex, its config) pointing `client` at `agent`."""
    kind = gateway_agent(config, agent)
    if kind != EMBEDDED and SPEAKS[client] != kind:  # the embedded model speaks both
        api = "Anthropic Messages" if SPEAKS[client] == "anthropic" else "Chat Completions"
        raise PlaneError(
            f"{client} speaks {api}, and {agent}'s provider does not; put {agent} on "
            f"a provider of kind {SPEAKS[client]}."
        )
    host = f"[{http[0]}]" if ":" in http[0] else http[0]
    url = f"http://{host}:{http[1]}"
    key = Keys(home.gateway_keys).make(agent)
    said = [f"# A new key for {agent}; the one it had stops working now."]
    if client == "claude-code":
        return [
            *said,
            f"export ANTHROPIC_BASE_URL={url}",
            f"export ANTHROPIC_AUTH_TOKEN={key}",
            "export ANTHROPIC_API_KEY=",
            "export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
        ]
    if client == "aider":
        return [
            *said,
            f"export OPENAI_API_BASE={url}/v1",
            f"export OPENAI_API_KEY={key}",
            "# then: aider --model openai/MODEL",
        ]
    return [
        *said,
        f"export PLANE_GATEWAY_KEY={key}",
        "# and in ~/.codex/config.toml:",
        '# model_provider = "plane"',
        "# [model_providers.plane]",
        '# name = "plane"',
        f'# base_url = "{url}/v1"',
        '# env_key = "PLANE_GATEWAY_KEY"',
        '# wire_api = "responses"',
    ]
