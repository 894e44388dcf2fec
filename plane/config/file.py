"""`Config`: the whole of agents.yaml, each top-level key a block of the
other modules, and what it answers about an agent once merged with
`defaults` (its provider, its MCP servers, its guard, its step-down)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from plane.config.agents import AgentConfig, Defaults, FallbackConfig, GuardConfig, McpServerConfig
from plane.config.economy import CompressionConfig, RepoMapConfig, SessionConfig
from plane.config.money import BurnConfig, FleetConfig, GroupConfig, NotifyConfig, TagConfig
from plane.config.names import EMBEDDED
from plane.config.providers import EMBEDDED_PROVIDER, Price, ProviderConfig
from plane.config.values import Block
from plane.yaml_reader import locate

STORE_RULE = "a postgresql:// URL (omit `store` for the SQLite file in the plane's home)"


class Config(Block):
    defaults: Defaults = Defaults()
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    """Named providers. `embedded` always exists."""
    pricing: dict[str, Price] = Field(default_factory=dict)
    """Prices that override the built-in table, by model substring (the
    longest matching substring wins)."""
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    session: SessionConfig = SessionConfig()
    repo_map: RepoMapConfig = RepoMapConfig()
    compression: CompressionConfig = CompressionConfig()
    sandbox: bool = True
    """Run agents' shell commands under Linux Landlock: they may read the
    system and work in their own workspace, and reach nothing else (not the
    plane's database, not your home). Where the kernel has no Landlock,
    commands are refused; `false` runs them unconfined."""
    notify: NotifyConfig | None = None
    """Alerts to a webhook and/or an ntfy topic (off unless set)."""
    burn: BurnConfig = BurnConfig()
    store: str | None = None
    """Where the ledger, conversations and agents live: omitted, the SQLite
    file in the plane's home; `postgresql://…`, a PostgreSQL database that
    several planes share (README, "Several machines"). `PLANE_STORE`, when
    set, is used instead."""
    fleet: FleetConfig = FleetConfig()
    groups: dict[str, GroupConfig] = Field(default_factory=dict, max_length=1_000)
    """Groups of agents by what their work is for (a project, a team), each
    with its own daily ceiling between its agents' and the fleet's."""
    tags: dict[str, TagConfig] = Field(default_factory=dict, max_length=1_000)
    """Tags gateway calls may carry (`x-plane-tag`, or the client's metadata)
    that have a daily ceiling of their own. A call may carry any other tag:
    the ledger keeps it, and no ceiling binds it."""

    @field_validator("store")
    @classmethod
    def _a_store_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{value!r} is not {STORE_RULE}")
        return value

    _source: str = PrivateAttr("agents.yaml")
    _tree: Any = PrivateAttr(None)
    """The YAML as read, kept so a problem found after loading still names its line."""
    _member_of: dict[str, str] | None = PrivateAttr(None)
    _file: Path | None = PrivateAttr(None)
    _looked: tuple[Path, ...] = PrivateAttr(())

    def read_from(self) -> Path | None:
        """The file these settings were read from (absolute); None: the built-in defaults."""
        return self._file

    def looked_in(self) -> tuple[Path, ...]:
        """Where an agents.yaml was looked for and not found, when these are
        the built-in defaults: what a plane with none of the file's agents says."""
        return self._looked

    def explain(self, loc: list[str], message: str) -> str:
        """A problem found after loading (a key missing from the environment),
        said as a load error says it: the file, the line, the key."""
        return locate(self._tree, loc, self._source, message)

    # Set by the loader (plane/config/loading.py), once, before anyone else has the config.
    def keep_tree(self, tree: Any, source: str) -> None:
        """Keep the YAML as read, for `explain`."""
        self._source, self._tree = source, tree

    def keep_file(self, path: Path) -> None:
        """Keep the file these settings were read from, for `read_from`."""
        self._file = path

    def keep_looked(self, looked: tuple[Path, ...]) -> None:
        """Keep where an agents.yaml was looked for and not found, for `looked_in`."""
        self._looked = looked

    @model_validator(mode="after")
    def _with_embedded(self) -> Config:
        self.providers.setdefault(EMBEDDED, EMBEDDED_PROVIDER)
        return self

    def provider_of(self, agent: AgentConfig) -> str:
        """The agent's provider; with none named, the default, unless another
        provider lists the agent's model and the default does not."""
        if agent.provider:
            return agent.provider
        default, model = self.defaults.provider, self.model_of(agent)
        if default in self.providers and model in self.providers[default].models:
            return default
        listing = [name for name, p in self.providers.items() if model in p.models]
        return listing[0] if listing else default

    def mcp_servers_of(self, agent: str) -> dict[str, McpServerConfig]:
        """`agent`'s MCP servers: the defaults', with its own added over them
        by name. An agent made from the keyboard has the defaults'."""
        servers = dict(self.defaults.mcp.servers)
        block = self.agents.get(agent)
        if block is not None and block.mcp is not None:
            servers.update(block.mcp.servers)
        return servers

    def group_of(self, agent: str) -> str | None:
        """The group `agent` is in (None: none)."""
        if self._member_of is None:  # asked at every call's admission: a map, made once
            self._member_of = {a: name for name, g in self.groups.items() for a in g.agents}
        return self._member_of.get(agent)

    def guard_of(self, agent: str) -> GuardConfig:
        """`agent`'s guard: the defaults', with the keys its own block gives over them."""
        block = self.agents.get(agent)
        own = block.guard if block is not None else None
        if own is None:
            return self.defaults.guard
        given = {key: getattr(own, key) for key in own.model_fields_set}
        return self.defaults.guard.model_copy(update=given)

    def fallback_of(self, agent: str) -> FallbackConfig | None:
        """`agent`'s step-down: its block's, else the defaults' (never for a
        gateway agent, whose client named the model it wants)."""
        block = self.agents.get(agent)
        own = block.fallback if block is not None else None
        if isinstance(own, FallbackConfig):
            return own
        if own == "off":
            return None
        return None if block is not None and block.gateway is not None else self.defaults.fallback

    def model_of(self, agent: AgentConfig) -> str:
        return agent.model or self.defaults.model

    def ceiling_of(self, agent: AgentConfig) -> Decimal | None:
        return agent.limit_usd if agent.limit_usd is not None else self.defaults.limit_usd

    def models(self) -> list[str]:
        """Every model an agent can be put on: those configured anywhere."""
        seen = [self.defaults.model]
        seen += [m for p in self.providers.values() for m in p.models]
        seen += [a.model for a in self.agents.values() if a.model]
        return list(dict.fromkeys(seen))
