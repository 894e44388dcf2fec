"""Who the agents are: those in agents.yaml and those created from the keyboard.

Agents created later get `defaults` — the default ceiling above all, since
they are exactly the ones nobody remembers to cap — and are kept in the
database, so they survive restarts and run exactly like the file's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from plane.clock import Clock
from plane.config import AGENT_NAME, AGENT_NAME_RULE, AgentConfig, AmbientConfig, Config
from plane.errors import AgentExists, InvalidRequest, NoSuchAgent
from plane.home import Home
from plane.store import Database


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


class Roster:
    def __init__(self, config: Config, db: Database, home: Home, clock: Clock) -> None:
        self._config = config
        self._db = db
        self._home = home
        self._clock = clock
        self._agents: dict[str, AgentSpec] = {}

    async def load(self) -> None:
        for name, block in self._config.agents.items():
            self._add(self._from_block(name, block))
        for row in await self._db.fetchall("SELECT * FROM agents ORDER BY created_at, name"):
            if row["name"] not in self._agents:
                block = AgentConfig(model=row["model"], provider=row["provider"], role=row["role"])
                self._add(self._from_block(row["name"], block))

    def get(self, name: str) -> AgentSpec:
        try:
            return self._agents[name]
        except KeyError:
            raise NoSuchAgent(name) from None

    def __iter__(self) -> Iterator[AgentSpec]:
        return iter(list(self._agents.values()))

    def names(self) -> list[str]:
        return list(self._agents)

    async def create(self, name: str, model: str, role: str) -> AgentSpec:
        if not AGENT_NAME.match(name):
            raise InvalidRequest(f"{name!r} is not a valid name: {AGENT_NAME_RULE}.")
        if name in self._agents:
            raise AgentExists(f"An agent named {name!r} already exists.")
        provider = self._provider_for(model)
        spec = self._from_block(name, AgentConfig(model=model, provider=provider, role=role))
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO agents (name, model, provider, role, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (name, model, provider, role, self._clock.now().isoformat()),
            )
        return self._add(spec)

    def _provider_for(self, model: str) -> str:
        if model not in self._config.models():
            choices = ", ".join(self._config.models())
            raise InvalidRequest(f"{model!r} is not a configured model; choose one of {choices}.")
        for name, provider in self._config.providers.items():
            if model in provider.models:
                return name
        return self._config.defaults.provider

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
        )

    def _add(self, spec: AgentSpec) -> AgentSpec:
        spec.workspace.mkdir(parents=True, exist_ok=True)
        self._agents[spec.name] = spec
        return spec
