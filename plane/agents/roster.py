"""Who the agents are: those in agents.yaml and those created from the keyboard.

Agents created later get `defaults` — the default ceiling above all, since
they are exactly the ones nobody remembers to cap — and are kept in the
database, so they survive restarts and run exactly like the file's.

A new agent goes only on a model it could take a turn on (`offered`): a
provider kept in agents.yaml without its API key is refused here, in one
sentence naming the variable, not at the agent's first call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from sqlite3 import Connection, Row
from typing import Literal

from plane.agents.guard import Loop
from plane.agents.toolsets import allowlist, suited
from plane.clock import Clock
from plane.config import (
    AgentConfig,
    AmbientConfig,
    Config,
    GatewayConfig,
    agent_name_refused,
    fallback_provider,
)
from plane.errors import AgentExists, ConfigError, InvalidRequest, NoSuchAgent
from plane.home import Home
from plane.store.engine import Database
from plane.wire.protocol import ToolSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fallback:
    """Where an agent steps down to, its provider resolved as `model:`'s is."""

    at: float
    """The share of its ceiling from which its calls use `model`."""
    model: str
    provider: str


@dataclass(frozen=True)
class AgentSpec:
    name: str
    model: str
    provider: str
    role: str
    tools: tuple[str, ...] | None
    workspace: Path
    ceiling_from_file: Decimal | None
    ambient: AmbientConfig | None = None
    gateway: GatewayConfig | None = None
    """Set for an agent a client outside the plane spends through: no turns of its own."""
    paused: bool = False
    """The operator paused it: it starts no turn until resumed (its ceiling is kept)."""
    fallback: Fallback | None = None
    """The cheaper model it steps down to near its ceiling (`fallback:`)."""
    loop: Loop | None = None
    """What the loop guard found: held until the operator resumes it (kept as a pause is)."""


ALL_TOOLS = "all"
"""What `edit --tools all` and the settings table say for "every tool"."""


class Roster:
    def __init__(
        self,
        config: Config,
        db: Database,
        home: Home,
        clock: Clock,
        *,
        offered: list[str] | None = None,
        keyless: Mapping[str, str] | None = None,
    ) -> None:
        """`offered`: the models a new agent may be put on (by default every
        configured one); `keyless`: providers whose API key is not set, each
        with the variable to set. Both are read once, at start-up."""
        self._config = config
        self._db = db
        self._home = home
        self._clock = clock
        self._agents: dict[str, AgentSpec] = {}
        self.offered = config.models() if offered is None else list(offered)
        self._keyless = dict(keyless or {})
        self._said: set[str] = set()
        """What was said of rows that cannot be read: each once, however often
        the row is read again (on a fleet, before each turn)."""

    async def load(self) -> None:
        for name, block in self._config.agents.items():
            self._add(self._from_block(name, block))
        for row in await self._db.fetchall("SELECT * FROM agents ORDER BY created_at, name"):
            if row["name"] not in self._agents:
                provider = self._stored_provider(row["name"], row["model"], row["provider"])
                try:
                    tools = None if row["tools"] is None else _names(row["tools"])
                except ValueError as error:
                    log.error(
                        "agents row %s cannot be read (tools: %s); the agent is left aside",
                        row["name"], error,
                    )  # fmt: skip
                    continue
                block = AgentConfig(
                    model=row["model"], provider=provider, role=row["role"], tools=tools
                )
                self._add(self._from_block(row["name"], block))
        for row in await self._db.fetchall("SELECT * FROM agent_settings"):
            spec = self._agents.get(row["name"])
            if spec is not None:  # an orphan (its agent left agents.yaml) waits, harmless
                self._agents[spec.name] = self._with_settings(spec, row)

    def _with_settings(self, spec: AgentSpec, row: Row) -> AgentSpec:
        """What the operator changed since, over what the file or its creation said."""
        model = row["model"] if isinstance(row["model"], str) else spec.model
        provider = spec.provider
        if isinstance(row["provider"], str):
            provider = self._stored_provider(spec.name, model, row["provider"])
        role = row["role"] if isinstance(row["role"], str) else spec.role
        tools = spec.tools
        if isinstance(row["tools"], str):
            try:
                stored = _names(row["tools"])
                tools = None if stored is None else tuple(stored)
            except ValueError as error:
                self._say_once(
                    f"agent_settings row {spec.name} cannot be read (tools: {error});"
                    " its tools are left as they were"
                )
        held = self._with_loop(replace(spec, paused=bool(row["paused"])), row["loop"])
        return replace(held, model=model, provider=provider, role=role, tools=tools)

    def _with_loop(self, spec: AgentSpec, stored: object) -> AgentSpec:
        """`spec` held by the loop guard as `agent_settings.loop` keeps it (`stored`)."""
        if not isinstance(stored, str):
            return replace(spec, loop=None)
        try:
            return replace(spec, loop=Loop.read(stored))
        except (TypeError, ValueError, KeyError, ArithmeticError) as error:
            # Held by the guard for a reason no longer readable: still held.
            self._say_once(
                f"agent_settings row {spec.name} cannot be read (loop: {error!r});"
                " the agent stays paused until it is resumed"
            )
            return replace(spec, paused=True, loop=None)

    def _say_once(self, said: str) -> None:
        if said not in self._said:
            self._said.add(said)
            log.error("%s", said)

    async def reread(self, name: str) -> AgentSpec:
        """`name` as the store has it now: with several planes on one store,
        another plane may have changed it (the operator resumed it there).
        A change made here while the row was read (a pause) is stored
        before it is in memory, so the row is read again then: the row read
        before it would take the change back."""
        while True:
            spec = self.get(name)
            row = await self._db.fetchone("SELECT * FROM agent_settings WHERE name = ?", name)
            if name not in self._agents:
                return spec
            if self._agents[name] is spec:
                break
        if row is not None:
            spec = self._agents[name] = self._with_settings(spec, row)
        return spec

    def held_as_stored(self, name: str, loop: str | None) -> AgentSpec:
        """`name` held by the loop guard as the store said (`loop`, as
        `agent_settings.loop` keeps it) when this plane took its lease."""
        spec = self._agents[name] = self._with_loop(self.get(name), loop)
        return spec

    def from_file(self, name: str) -> bool:
        """Made by agents.yaml (so the file, not the keyboard, says it exists)."""
        return name in self._config.agents

    def provider_for(self, model: str) -> str:
        """The provider an agent moved to `model` would use, or why it cannot."""
        return self._provider_for(model)

    async def change(
        self,
        name: str,
        *,
        model: str | None = None,
        role: str | None = None,
        tools: tuple[str, ...] | Literal["keep"] | None = "keep",
        paused: bool | None = None,
        loop: Loop | Literal["keep"] | None = "keep",
        within: Callable[[Connection], object] | None = None,
    ) -> AgentSpec:
        """Change what is given and keep it across restarts; checked first, so
        a model no provider offers changes nothing. `loop`: the loop guard's
        hold (None: lifted); `within`: what else the change's transaction writes."""
        spec = self.get(name)
        provider = None if model is None else self._provider_for(model)
        stored_tools = None
        if tools != "keep":
            stored_tools = json.dumps(ALL_TOOLS if tools is None else list(tools))
        new = replace(
            spec,
            model=spec.model if model is None else model,
            provider=spec.provider if provider is None else provider,
            role=spec.role if role is None else role,
            tools=spec.tools if tools == "keep" else tools,
            paused=spec.paused if paused is None else paused,
            loop=spec.loop if isinstance(loop, str) else loop,
        )
        held = None if new.loop is None else new.loop.stored()
        row = (name, model, provider, role, stored_tools, int(new.paused), held)
        now = self._clock.now().isoformat()

        def write(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO agent_settings"
                " (name, model, provider, role, tools, paused, loop, set_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
                # The table named: PostgreSQL refuses a bare `model` here as
                # ambiguous between the row and `excluded`.
                " model = COALESCE(excluded.model, agent_settings.model),"
                " provider = COALESCE(excluded.provider, agent_settings.provider),"
                " role = COALESCE(excluded.role, agent_settings.role),"
                " tools = COALESCE(excluded.tools, agent_settings.tools),"
                " paused = excluded.paused, loop = excluded.loop, set_at = excluded.set_at",
                (*row, now),
            )
            if within is not None:
                within(conn)

        await self._db.write(write)
        self._agents[name] = new
        return new

    def forget(self, name: str) -> AgentSpec:
        """Out of the roster (its rows were deleted by the caller's transaction)."""
        return self._agents.pop(name)

    def renamed(self, old: str, spec: AgentSpec) -> None:
        """`old` is now `spec.name`, in the same place in the order."""
        self._agents = {
            (spec.name if name == old else name): (spec if name == old else each)
            for name, each in self._agents.items()
        }

    def _stored_provider(self, name: str, model: str, provider: str) -> str:
        """An agent made from the keyboard keeps its provider while agents.yaml has it; when
        the block is gone, one that offers its model takes over, else the plane says so."""
        if provider in self._config.providers:
            return provider
        try:
            moved = self._provider_for(model)
        except InvalidRequest:
            raise ConfigError(
                f"Agent {name!r} (made from the keyboard) is on provider {provider!r}, which "
                f"agents.yaml no longer has, and no provider there offers its model {model!r}: "
                "add a provider that lists it."
            ) from None
        log.warning(
            "Agent %r was on provider %r, which agents.yaml no longer has; it now uses %r.",
            name,
            provider,
            moved,
        )
        return moved

    def get(self, name: str) -> AgentSpec:
        try:
            return self._agents[name]
        except KeyError:
            raise NoSuchAgent(name) from None

    def __iter__(self) -> Iterator[AgentSpec]:
        return iter(list(self._agents.values()))

    def names(self) -> list[str]:
        return list(self._agents)

    def admit(self, name: str, model: str) -> str:
        """The provider a new agent `name` on `model` would use, or the one
        sentence saying why it cannot be made."""
        if (refusal := agent_name_refused(name)) is not None:
            raise InvalidRequest(refusal)
        if name in self._agents:
            raise AgentExists(f"An agent named {name!r} already exists.")
        return self._provider_for(model)

    async def create(
        self, name: str, model: str, role: str, tools: ToolSet | None = None
    ) -> AgentSpec:
        """`tools` None: the set that suits the model (`toolsets.suited`)."""
        provider = self.admit(name, model)
        allowed = allowlist(tools or suited(self._config, provider))
        block = AgentConfig(
            model=model, provider=provider, role=role, tools=None if allowed is None else [*allowed]
        )
        spec = self._from_block(name, block)
        stored = None if allowed is None else json.dumps(list(allowed))
        row = (name, model, provider, role, self._clock.now().isoformat(), stored)
        await self._db.write(
            lambda conn: conn.execute(
                "INSERT INTO agents (name, model, provider, role, created_at, tools)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
        )
        return self._add(spec)

    def tool_defaults(self) -> dict[str, ToolSet]:
        """For each offered model, the tools a new agent on it gets by default."""
        defaults: dict[str, ToolSet] = {}
        for model in self.offered:
            try:
                defaults[model] = suited(self._config, self._provider_for(model))
            except InvalidRequest:
                continue
        return defaults

    def _provider_for(self, model: str) -> str:
        """A provider that lists `model` and has its key; for a model no
        provider lists, that of the file's agent on it, else the default."""
        config = self._config
        if model not in self.offered:
            raise InvalidRequest(self._not_offered(model))
        for name, provider in config.providers.items():
            if model in provider.models and name not in self._keyless:
                return name
        for block in config.agents.values():
            if block.model == model:
                return config.provider_of(block)
        return config.defaults.provider

    def _not_offered(self, model: str) -> str:
        for name, provider in self._config.providers.items():
            if model in provider.models and name in self._keyless:
                return (
                    f"{model!r} is not offered: its provider {name!r} has no API key; "
                    f"set the environment variable {self._keyless[name]} and restart the plane."
                )
        choices = ", ".join(self.offered)
        return f"{model!r} is not a configured model; choose one of {choices}."

    def _from_block(self, name: str, block: AgentConfig) -> AgentSpec:
        return AgentSpec(
            name=name,
            model=self._config.model_of(block),
            provider=self._config.provider_of(block),
            role=block.role,
            tools=None if block.tools is None else tuple(block.tools),
            workspace=block.workspace or self._home.workspace(name),
            ceiling_from_file=self._config.ceiling_of(block),
            ambient=block.ambient,
            gateway=block.gateway,
            fallback=self._fallback(name),
        )

    def _fallback(self, name: str) -> Fallback | None:
        """`name`'s step-down, its provider's key checked as `model:`'s is at
        start: a provider without its key stops the plane, naming both."""
        config = self._config
        fallback, provider = config.fallback_of(name), fallback_provider(config, name)
        if fallback is None or provider is None:
            return None
        if provider in self._keyless:
            block = config.agents.get(name)
            own = block is not None and block.fallback is not None
            where = ["agents", name, "fallback", "model"] if own else ["defaults", "fallback"]
            raise ConfigError(
                config.explain(
                    where,
                    f"{name}'s fallback {fallback.model!r} runs on provider {provider!r}, "
                    f"whose API key is not set: set the environment variable "
                    f"{self._keyless[provider]}",
                )
            )
        return Fallback(fallback.at, fallback.model, provider)

    def _add(self, spec: AgentSpec) -> AgentSpec:
        # Its workspace is made by its first turn (`AgentWorker.take_turn`),
        # not here: a start of 100,000 agents spent a quarter of its time
        # making directories most agents had not used yet.
        self._agents[spec.name] = spec
        return spec


def _names(stored: str) -> list[str] | None:
    """Stored tools: a JSON list of names, or `ALL_TOOLS` (None: every tool);
    ValueError if neither."""
    found: object = json.loads(stored)
    if found == ALL_TOOLS:
        return None
    if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
        raise ValueError(f"{stored!r} is not a list of tool names")
    return [str(name) for name in found]
