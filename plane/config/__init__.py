"""agents.yaml, as pydantic models. The docstring under each field is the
user's documentation of that key.

`load_config()` is the one reader of the file. A bad file raises one
`ConfigError` naming the key, the line and what is wrong, and the plane does
not start half-configured. The reading is bounded before YAML sees a byte of
it (plane/yaml_reader.py), so no file can hang the start or exhaust memory.
An empty file is refused too: it would silently drop every ceiling.

- `names`: what an agent, an MCP server, a group or a tag may be called;
- `values`: the kinds of value a key takes (dollars, a ceiling, a tool, a
  URL) and `Block`, what every block is;
- `providers`: `providers:` and `pricing:`; `economy`: `session:`,
  `repo_map:`, `compression:`;
- `agents`: an agent's block and `defaults:`, with the blocks inside them
  (MCP servers, the guard, the fallback);
- `money`: the fleet's, a group's and a tag's ceilings, `burn:`, `notify:`;
- `file`: `Config`, the whole file, and what it answers about an agent;
- `coherence`: what a well-typed file can still get wrong across its blocks;
- `loading`: reading the file, a problem said as one line.
- `wording`: what a key takes, said when the file gives it a wrong value.

Everything the rest of the plane uses is exported here, in `__all__`; the
modules of the package import one another, never this file.
"""

from __future__ import annotations

from plane.config.agents import (
    AgentConfig,
    AmbientConfig,
    Defaults,
    FallbackConfig,
    GatewayConfig,
    GuardConfig,
    McpConfig,
    McpServerConfig,
)
from plane.config.coherence import fallback_provider, incoherence
from plane.config.economy import CompressionConfig, RepoMapConfig, SessionConfig
from plane.config.file import STORE_RULE, Config
from plane.config.loading import load_config, parse_config, store_of
from plane.config.money import (
    ALERT_KINDS,
    AlertKind,
    BurnConfig,
    FleetConfig,
    GroupConfig,
    NotifyConfig,
    TagConfig,
)
from plane.config.names import (
    AGENT_NAME,
    AGENT_NAME_RULE,
    EMBEDDED,
    EMBEDDED_MODEL,
    ENV_NAME,
    GROUP_NAME,
    GROUP_NAME_RULE,
    MCP_SERVER_NAME,
    MCP_SERVER_RULE,
    MCP_TOOL,
    TAG,
    TAG_RULE,
    agent_name_refused,
)
from plane.config.providers import EMBEDDED_PROVIDER, Price, ProviderConfig
from plane.config.values import Block, Limit, ToolName, Usd

__all__ = [
    "AGENT_NAME",
    "AGENT_NAME_RULE",
    "ALERT_KINDS",
    "EMBEDDED",
    "EMBEDDED_MODEL",
    "EMBEDDED_PROVIDER",
    "ENV_NAME",
    "GROUP_NAME",
    "GROUP_NAME_RULE",
    "MCP_SERVER_NAME",
    "MCP_SERVER_RULE",
    "MCP_TOOL",
    "STORE_RULE",
    "TAG",
    "TAG_RULE",
    "AgentConfig",
    "AlertKind",
    "AmbientConfig",
    "Block",
    "BurnConfig",
    "CompressionConfig",
    "Config",
    "Defaults",
    "FallbackConfig",
    "FleetConfig",
    "GatewayConfig",
    "GroupConfig",
    "GuardConfig",
    "Limit",
    "McpConfig",
    "McpServerConfig",
    "NotifyConfig",
    "Price",
    "ProviderConfig",
    "RepoMapConfig",
    "SessionConfig",
    "TagConfig",
    "ToolName",
    "Usd",
    "agent_name_refused",
    "fallback_provider",
    "incoherence",
    "load_config",
    "parse_config",
    "store_of",
]
