"""What a well-typed agents.yaml can still get wrong across its blocks: a
provider, a model, an MCP server or an agent named in one block that another
does not have, a default an agent's block would widen, a name that is not one.
Each is said with where it is, as a load error says it."""

from __future__ import annotations

from plane.config.agents import AgentConfig, FallbackConfig
from plane.config.file import Config
from plane.config.names import (
    AGENT_NAME,
    AGENT_NAME_RULE,
    EMBEDDED,
    EMBEDDED_MODEL,
    GROUP_NAME,
    GROUP_NAME_RULE,
    MCP_SERVER_NAME,
    MCP_SERVER_RULE,
    MCP_TOOL,
    TAG,
    TAG_RULE,
)


def incoherence(config: Config) -> tuple[list[str], str] | None:
    """The first thing in a well-typed config that still makes no sense, with
    where it is; None when there is none."""
    if config.defaults.provider not in config.providers:
        return ["defaults", "provider"], "is not one of the providers"
    for model in config.pricing:
        if not model.strip():
            return ["pricing"], f"the model name {model!r} would match, and price, every model"
    if (wrong := _not_embedded(config, AgentConfig())) is not None:
        return ["defaults", "model"], wrong
    if config.defaults.fallback is not None and (
        wrong := _fallback_wrong(config, config.defaults.fallback, AgentConfig())
    ):
        return ["defaults", "fallback", "model"], wrong
    for server in config.defaults.mcp.servers:
        if not MCP_SERVER_NAME.match(server):
            return [
                "defaults",
                "mcp",
                "servers",
                server,
            ], f"not a valid server name ({MCP_SERVER_RULE})"
    default = config.defaults.limit_usd
    for name, agent in config.agents.items():
        if not AGENT_NAME.match(name):
            return ["agents", name], f"not a valid agent name ({AGENT_NAME_RULE})"
        if agent.model == "":  # `model_of` would read it as defaults.model, unsaid
            return ["agents", name, "model"], "is empty; leave it out for defaults.model"
        if agent.provider and agent.provider not in config.providers:
            return ["agents", name, "provider"], "is not one of the providers"
        if agent.gateway is not None and (unused := _clients_own(agent)) is not None:
            return ["agents", name, unused[0]], unused[1]
        if agent.gateway is None and (wrong := _not_embedded(config, agent)) is not None:
            return ["agents", name, "model" if agent.model else "provider"], wrong
        if (wrong_mcp := _mcp_incoherence(config, name, agent)) is not None:
            return ["agents", name, *wrong_mcp[0]], wrong_mcp[1]
        if isinstance(agent.fallback, FallbackConfig) and (
            wrong := _fallback_wrong(config, agent.fallback, agent)
        ):
            return ["agents", name, "fallback", "model"], wrong
        if agent.limit_usd is not None and default is not None and agent.limit_usd > default:
            return ["agents", name, "limitUsd"], (
                f"${agent.limit_usd:.2f} is above defaults.limitUsd ${default:.2f}; "
                "an agent's own block can only narrow the default"
            )
    return _groups_incoherence(config)


def _groups_incoherence(config: Config) -> tuple[list[str], str] | None:
    """A group or tag name that is not one, an agent no block names, an agent
    in two groups."""
    seen: dict[str, str] = {}
    for name, group in config.groups.items():
        if not GROUP_NAME.match(name):
            return ["groups", name], f"not a valid group name ({GROUP_NAME_RULE})"
        for index, agent in enumerate(group.agents):
            where = ["groups", name, "agents", str(index)]
            if agent not in config.agents:
                return where, f"{agent!r} is not one of the agents of `agents:`"
            if agent in seen:
                return where, (
                    f"{agent!r} is in group {seen[agent]!r} already; an agent is in one group "
                    "at most, so its ceilings stay a chain (agent, group, fleet)"
                )
            seen[agent] = name
    for tag in config.tags:
        if not TAG.match(tag):
            return ["tags", tag], f"not a valid tag ({TAG_RULE})"
    return None


def fallback_provider(config: Config, agent: str) -> str | None:
    """The provider `agent`'s fallback model runs on (None: it has none): as
    `model:` resolves it, but a gateway agent's stays on its own provider
    (its client speaks that provider's API)."""
    fallback = config.fallback_of(agent)
    if fallback is None:
        return None
    block = config.agents.get(agent, AgentConfig())
    if block.gateway is not None:
        return config.provider_of(block)
    return config.provider_of(AgentConfig(model=fallback.model))


def _fallback_wrong(config: Config, fallback: FallbackConfig, owner: AgentConfig) -> str | None:
    """Why `owner` cannot step down to `fallback.model`: no provider lists
    it, it is not on a gateway agent's own provider, or the embedded model
    would answer as itself. Stricter than `model:`: a name nothing serves
    would show only at 80% of a ceiling, at night."""
    model = fallback.model
    if model not in [m for p in config.providers.values() for m in p.models]:
        return (
            f"{model!r} is not a model of any provider; list it under a provider's models: "
            "(a fallback is used late in the day, so a name nothing serves is refused now)"
        )
    if owner.gateway is not None:
        provider = config.provider_of(owner)
        if model not in config.providers[provider].models:
            return (
                f"{model!r} is not a model of the agent's provider {provider!r}; a gateway "
                "agent's calls stay on its own provider, whose API its client speaks"
            )
        return None
    return _not_embedded(config, AgentConfig(model=model))


def _mcp_incoherence(config: Config, name: str, agent: AgentConfig) -> tuple[list[str], str] | None:
    """A server name that is not one, or a `server.tool` in `tools:` whose
    server the agent does not have."""
    for server in agent.mcp.servers if agent.mcp is not None else {}:
        if not MCP_SERVER_NAME.match(server):
            return ["mcp", "servers", server], f"not a valid server name ({MCP_SERVER_RULE})"
    servers = config.mcp_servers_of(name)
    for index, tool in enumerate(agent.tools or ()):
        mcp = MCP_TOOL.match(tool)
        if mcp is not None and mcp["server"] not in servers:
            have = f"its servers are {', '.join(servers)}" if servers else "it has no MCP servers"
            return ["tools", str(index)], f"{tool!r} names the MCP server {mcp['server']!r}; {have}"
    return None


def _clients_own(agent: AgentConfig) -> tuple[str, str] | None:
    """A key of a gateway agent that would do nothing, and why: its client
    sends the prompt and the tools, so a role or tools set here would be
    silently ignored (as `plane edit` refuses them)."""
    if agent.ambient is not None:
        return "ambient", "a gateway agent takes no turns of its own"
    if agent.role:
        return "role", "a gateway agent's client sends its own prompt; the role would be unused"
    if agent.tools is not None:
        return "tools", "a gateway agent's client brings its own tools; these would be unused"
    if agent.mcp is not None:
        return "mcp", "a gateway agent's client brings its own tools; these servers would be unused"
    return None


def _not_embedded(config: Config, agent: AgentConfig) -> str | None:
    """Why `agent` cannot run as configured on the embedded model: it serves
    only its own, and would answer as itself under another model's name (and
    be billed at that model's price)."""
    model, provider = config.model_of(agent), config.provider_of(agent)
    if config.providers[provider].kind != EMBEDDED or model == EMBEDDED_MODEL:
        return None
    return (
        f"{model!r} would run on the embedded model ({EMBEDDED_MODEL}), which answers as "
        "itself whatever it is called; name the provider that serves it (provider: …)"
    )
