"""`plane key AGENT` and `plane gateway env AGENT --client …`: a gateway
agent's key, and the lines that point a client at the plane with it.

Keys live in the home (hashed), and the running plane reads them on each
request, so a new key works at once and the one it replaces stops working
at once. The lines point at the listener the running plane has (it says
where in its home, `Home.gateway_url`), or at `--http` when given: a default
port a plane is not listening on would send the client nowhere.
"""

from __future__ import annotations

from plane.config import EMBEDDED, Config
from plane.errors import PlaneError
from plane.gateway.carried import TAG_HEADER
from plane.gateway.keys import Keys
from plane.home import Home

SPEAKS = {"claude-code": "anthropic", "codex": "openai-compatible", "aider": "openai-compatible"}
API = {
    "claude-code": "Anthropic Messages",
    "codex": "OpenAI Responses",
    "aider": "Chat Completions",
}
"""The API each client calls, as a refusal names it (Codex: `wire_api = "responses"`)."""


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


def listening(home: Home) -> str:
    """The running plane's gateway URL, or the sentence saying there is none."""
    start = "`plane serve --http 127.0.0.1:7878`"
    if home.state() != "running":
        raise PlaneError(
            f"No plane is running in {home.root}, so no gateway listens: start it with "
            f"{start}, then run this again (or give --http HOST:PORT where one listens)."
        )
    try:
        url = home.gateway_url.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        url = ""
    if not url:
        raise PlaneError(
            f"The plane running in {home.root} has no gateway listener (it was started "
            f"without --http): restart it with {start}, then run this again."
        )
    return url


def env_lines(
    config: Config,
    home: Home,
    agent: str,
    client: str,
    http: tuple[str, int] | None,
    tag: str | None = None,
) -> list[str]:
    """Shell lines (and, for Codex, its config) pointing `client` at `agent`,
    on the running plane's gateway, or at `http` when given; with `tag`,
    every call the client makes carries it (`x-plane-tag`)."""
    kind = gateway_agent(config, agent)
    if kind != EMBEDDED and SPEAKS[client] != kind:  # the embedded model speaks both
        raise PlaneError(
            f"{client} speaks {API[client]}, and {agent}'s provider does not; put {agent} on "
            f"a provider of kind {SPEAKS[client]}."
        )
    if http is None:
        url = listening(home)
    else:
        host = f"[{http[0]}]" if ":" in http[0] else http[0]
        url = f"http://{host}:{http[1]}"
    key = Keys(home.gateway_keys).make(agent)
    said = [f"# A new key for {agent}; the one it had stops working now."]
    if client == "claude-code":
        tagged = [f"export ANTHROPIC_CUSTOM_HEADERS='{TAG_HEADER}: {tag}'"] if tag else []
        return [
            *said,
            f"export ANTHROPIC_BASE_URL={url}",
            f"export ANTHROPIC_AUTH_TOKEN={key}",
            "export ANTHROPIC_API_KEY=",
            "export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
            *tagged,
        ]
    if client == "aider":
        tagged = [
            "# and in .aider.model.settings.yml, so every call carries the tag:",
            "# - name: aider/extra_params",
            "#   extra_params:",
            f"#     extra_headers: {{{TAG_HEADER}: {tag}}}",
        ]
        return [
            *said,
            f"export OPENAI_API_BASE={url}/v1",
            f"export OPENAI_API_KEY={key}",
            "# then: aider --model openai/MODEL",
            *(tagged if tag else []),
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
        *([f'# http_headers = {{ "{TAG_HEADER}" = "{tag}" }}'] if tag else []),
    ]
